"""The ranking of a search by meaning (``about``): the messages its words match, ranked by BM25, and the
messages nearest its meaning, fused into one order by reciprocal rank fusion. A message's fused score is
the sum, over the rankings that hold it, of ``weight / (RANK_CONSTANT + its place)``: found by both it
rises above one found by either alone at the same places, and neither signal's scale (BM25's or a
cosine's) matters, only the order each gives. Each fused message says which rankings found it
(:data:`Why`). Pure: no index, no model."""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

#: Why a message is in the answer: its words matched, it is near in meaning, or both.
Why = Literal["words", "meaning", "both"]

#: Reciprocal rank fusion's constant: how fast the weight of a place falls (60, as in Cormack et al.,
#: where a few places' difference at the top counts little against being found by both).
RANK_CONSTANT = 60
#: The weight of each ranking: equal (each alone ranks the labelled set worse than both together).
WORDS_WEIGHT = 1.0
MEANING_WEIGHT = 1.0

Key = TypeVar("Key", bound=Hashable)


@dataclass(frozen=True)
class Fused(Generic[Key]):
    """One message of the fused order: its key, fused score (higher is better) and why it is there."""

    key: Key
    score: float
    why: Why


def fuse(
    words: Sequence[Key],
    meaning: Sequence[Key],
    *,
    rank_constant: int = RANK_CONSTANT,
    words_weight: float = WORDS_WEIGHT,
    meaning_weight: float = MEANING_WEIGHT,
) -> list[Fused[Key]]:
    """``words`` (best first, by BM25) and ``meaning`` (nearest first) as one order, best first; equal
    scores keep the order in which the rankings first name them (words first)."""
    scores: dict[Key, float] = {}
    found: dict[Key, set[str]] = {}
    for name, ranking, weight in (("words", words, words_weight), ("meaning", meaning, meaning_weight)):
        for place, key in enumerate(dict.fromkeys(ranking), start=1):
            scores[key] = scores.get(key, 0.0) + weight / (rank_constant + place)
            found.setdefault(key, set()).add(name)
    order = sorted(scores, key=lambda key: -scores[key])  # stable: ties in first-named order
    return [Fused(key, scores[key], _why(found[key])) for key in order]


def _why(found: set[str]) -> Why:
    if found == {"words", "meaning"}:
        return "both"
    return "words" if "words" in found else "meaning"


#: Words that say nothing of what a message is about, left out of ``about``'s search by words (BM25
#: weighs a word in most messages at nearly nothing, but a query of such words alone matches everything).
_STOP_WORDS = (
    "a about after all also an and any are as at be been but by can could did do does for from had has "
    "have he her his how i if in into is it its me my no not of on or our she so than that the their them "
    "then there these they this those to up us was we were what when where which who why will with would "
    "you your mail email message messages"
)
STOP_WORDS = frozenset(_STOP_WORDS.split())
#: The most words of ``about`` its search by words looks for.
MAX_WORDS = 16
_WORD = re.compile(r"\w+")


def about_words(about: str) -> list[str]:
    """The words of ``about`` its search by words looks for, any of them (BM25 ranks those with more and
    rarer ones first): each once, in order, without :data:`STOP_WORDS` and one-letter words."""
    words = [word.casefold() for word in _WORD.findall(about)]
    kept = [word for word in words if len(word) > 1 and word not in STOP_WORDS]
    return list(dict.fromkeys(kept))[:MAX_WORDS]

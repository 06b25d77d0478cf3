"""The ranking of a search by meaning (``about``): the messages its words match, ranked by BM25, and the
messages nearest its meaning, fused into one order by reciprocal rank fusion. A message's fused score is
the sum, over the rankings that hold it, of ``weight / (RANK_CONSTANT + its place)``: found by both it
rises above one found by either alone at the same places, and neither signal's scale (BM25's or a
cosine's) matters, only the order each gives. The words count as much as the two rankings agree at
the top, both ways (:func:`agreement_weight`): a description's words often match mail it does not mean
("get", "new", "night"), and then the meaning decides. Each fused message says which rankings found it
(:data:`Why`). Pure: no index, no model.

Tuned on the labelled meaning set (tests/support/mail/meaning_set, 40 queries among 1,332 messages, the
shipped model, the meaning's ranking with hubness reduced and fed back, services/search_meaning_near.py;
tests/integration/index/test_meaning_about_recall.py): recall at 10 of the fusion is at least the better
of words alone and meaning alone on each half of its queries, on SQLite (Tantivy): English paraphrases
0.79 against 0.79 and 0.0, English keywords 0.96 (0.96) against 0.96 and 0.89 (0.86), German and French
0.95 and 1.0 against 0.95 and 1.0 (``scripts/meaning_recall``). Equal weights lost half the paraphrases'
recall to the words' chance matches; agreement within the meaning's first 20 still let two chance matches
it ranked 16th and 19th push its tenth, a right one, out; agreement one way only (the words' first five
among the meaning's first ten) let "club" of a book club, which the meaning also put first for "the
fitness club", weigh 0.4 and push a right one out. Once the meaning was fed back (English paraphrases
0.62 to 0.79, keywords 0.94 to 0.96), agreement within its first ten and a rank constant of 30 made the
fusion lose to it (0.79 and 0.95 against 0.79 and 0.96: messages both put 8th to 12th pushed out right
ones it alone put 7th to 10th): agreement is now asked at the same depth both ways (first five) and the
first places count more (10). No half of the queries can choose these: on half A of the English
paraphrases, the one the feedback was chosen on, every fusion tried gave the meaning's 0.82; they are
the least change that keeps the fusion at least either alone on every half
(``scripts/meaning_methods --only fusion``)."""

from __future__ import annotations

import re
from collections.abc import Collection, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Literal, TypeVar

#: Why a message is in the answer: its words matched, it is near in meaning, or both.
Why = Literal["words", "meaning", "both"]

#: Reciprocal rank fusion's constant: how fast the weight of a place falls (10: the first places count
#: most; with 30, messages both rankings put 11th and 12th pushed out a right one the meaning alone put 7th,
#: once its ranking was fed back, :mod:`mail_imap_mcp.meaning.feedback`).
RANK_CONSTANT = 10
#: The meaning ranking's weight; the words' is :func:`agreement_weight`.
MEANING_WEIGHT = 1.0
#: The words ranking's first places whose agreement with the meaning is measured ...
AGREEMENT_TOP = 5
#: ... among the meaning ranking's first places (the same depth both ways).
AGREEMENT_NEAR = 5
#: The words' least weight: an exact word (an invoice number) the meaning does not rank high still counts.
WORDS_FLOOR = 0.05

Key = TypeVar("Key", bound=Hashable)


@dataclass(frozen=True)
class Fused(Generic[Key]):
    """One message of the fused order: its key, fused score (higher is better) and why it is there."""

    key: Key
    score: float
    why: Why


def agreement_weight(words: Sequence[Hashable], meaning: Sequence[Hashable]) -> float:
    """How much the words ranking counts: how far the two rankings agree at the top, both ways (the share
    of the words' first :data:`AGREEMENT_TOP` that the meaning has among its first :data:`AGREEMENT_NEAR`,
    times the share of the meaning's first :data:`AGREEMENT_TOP` that the words have among theirs), at
    least :data:`WORDS_FLOOR` (1 where the meaning ranks nothing: no vectors yet, the words alone rank)."""
    return max(_share_near(words, meaning) * _share_near(meaning, words), WORDS_FLOOR)


def _share_near(ranking: Sequence[Hashable], other: Sequence[Hashable]) -> float:
    """The share of ``ranking``'s first :data:`AGREEMENT_TOP` among ``other``'s first
    :data:`AGREEMENT_NEAR` (1 where either ranks nothing)."""
    top = list(dict.fromkeys(ranking))[:AGREEMENT_TOP]
    if not other or not top:
        return 1.0
    near = set(list(dict.fromkeys(other))[:AGREEMENT_NEAR])
    return sum(key in near for key in top) / len(top)


def fuse(
    words: Sequence[Key],
    meaning: Sequence[Key],
    *,
    rank_constant: int = RANK_CONSTANT,
    words_weight: float | None = None,
    meaning_weight: float = MEANING_WEIGHT,
    rare: Collection[Key] = (),
) -> list[Fused[Key]]:
    """``words`` (best first, by BM25) and ``meaning`` (nearest first) as one order, best first, the words
    weighed by :func:`agreement_weight` (unless ``words_weight`` says), but at least ``meaning_weight`` for
    the messages of ``rare``: those holding a word few messages hold (an invoice number, "Wohnung"), which
    the model's guesses do not outweigh. Equal scores keep the order in which the rankings first name them
    (words first)."""
    weighed = agreement_weight(words, meaning) if words_weight is None else words_weight
    scores: dict[Key, float] = {}
    found: dict[Key, set[str]] = {}
    for name, ranking, weight in (("words", words, weighed), ("meaning", meaning, meaning_weight)):
        for place, key in enumerate(dict.fromkeys(ranking), start=1):
            kept = max(weight, meaning_weight) if name == "words" and key in rare else weight
            scores[key] = scores.get(key, 0.0) + kept / (rank_constant + place)
            found.setdefault(key, set()).add(name)
    order = sorted(scores, key=lambda key: -scores[key])  # stable: ties in first-named order
    return [Fused(key, scores[key], _why(found[key])) for key in order]


def _why(found: set[str]) -> Why:
    if found == {"words", "meaning"}:
        return "both"
    return "words" if "words" in found else "meaning"


def _stop_words() -> frozenset[str]:
    """The words of ``stop_words.txt`` (data beside this module: each language's block after its code)."""
    text = Path(__file__).with_name("stop_words.txt").read_text(encoding="utf-8")
    lines = (line.partition("#")[0] for line in text.splitlines())
    return frozenset(word.casefold() for line in lines for word in line.split() if not word.endswith(":"))


#: Words that say nothing of what a message is about, in each language the index is expected to see
#: (English, German, French, Spanish, Italian, Dutch, Portuguese), left out of ``about``'s search by words:
#: BM25 weighs a word in most messages at nearly nothing, but a query of such words alone matches
#: everything, and their chance matches made a message found "both" ways.
STOP_WORDS = _stop_words()
#: The most words of ``about`` its search by words looks for.
MAX_WORDS = 16
_WORD = re.compile(r"\w+")


def about_words(about: str) -> list[str]:
    """The words of ``about`` its search by words looks for, any of them (BM25 ranks those with more and
    rarer ones first): each once, in order, without :data:`STOP_WORDS` and one-letter words."""
    words = [word.casefold() for word in _WORD.findall(about)]
    kept = [word for word in words if len(word) > 1 and word not in STOP_WORDS]
    return list(dict.fromkeys(kept))[:MAX_WORDS]

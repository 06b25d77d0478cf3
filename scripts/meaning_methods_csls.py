"""Ways to rank by meaning measured on top of hubness reduction (CSLS, as ``about`` ranks: the first 100 by
cosine, ordered again by their cosine less half their mean cosine to their 10 nearest messages of the
set) and alone, on the bench of scripts/meaning_methods (scripts/meaning_bench.py; issue 80):

- **whitening**: the account's passage vectors mean-centred and whitened by their own covariance
  (BERT-whitening; Su et al. 2021), keeping the ``k`` strongest directions or all, the query's alike;
- **abtt**: all-but-the-top (Mu and Viswanath 2018): the mean and the top ``D`` principal components of
  the account's own vectors taken out (D = 1..10);
- **mp**: mutual proximity (Schnitzer et al. 2012) in its Gaussian form, instead of CSLS: the product of
  the chances that the query's cosine is above the query's and above the message's usual cosines (its
  mean and spread over the set); ``z``: the cosine less the message's mean, over its spread;
- **request**: the words every description holds ("the mail/email/message about/from/regarding ...")
  left out of the query's vector: ``about``'s stop words (English, German, French) or a short list of
  request words; or the query's tokens weighted by their frequency in the set (SIF on the query alone);
- **feedback**: pseudo-relevance feedback on top of CSLS (what ``about`` does,
  :mod:`mail_imap_mcp.meaning.feedback`): the query's vector plus ``beta`` times the mean of its first
  ``k`` messages (CSLS's order), searched and reduced again;
- **fusion**: the feedback's ranking fused with words by a convex combination of normalised scores
  (min-max, divided by the greatest, z-scores; weight ``alpha`` for the words) against reciprocal rank
  fusion as ``about`` fuses (:func:`mail_imap_mcp.meaning.fusion.fuse`), before and after its
  agreement depth and rank constant changed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING
from unittest import mock

import numpy as np
from meaning_bench import Bench, Ranking, message_vectors, tuned_on_a

from mail_imap_mcp.meaning import fusion
from mail_imap_mcp.meaning.fusion import STOP_WORDS, fuse
from mail_imap_mcp.meaning.hubness import densities, unit_rows

if TYPE_CHECKING:
    import numpy.typing as npt
    from tests.support.mail.meaning_set import SetQuery

    Floats = npt.NDArray[np.float32]

#: A ranking with its scores: message ids and scores, best first.
Scored = Callable[["SetQuery"], list[tuple[str, float]]]
#: What a description says of every message it asks for: the request, not the topic.
REQUEST_WORDS = frozenset(
    [
        "the",
        "a",
        "an",
        "my",
        "our",
        "i",
        "we",
        "what",
        "which",
        "when",
        "how",
        "did",
        "do",
        "does",
        "say",
        "said",
        "mail",
        "mails",
        "email",
        "emails",
        "message",
        "messages",
        "about",
        "from",
        "regarding",
        "re",
    ]
)
POOL = 100
_WORD = re.compile(r"\w+")


class Space:
    """The set's passage vectors (tokens weighted by ``weight``; moved by ``transform``), their messages'
    densities, and rankings by CSLS (or by cosine) among each query's first :data:`POOL` by cosine."""

    def __init__(
        self,
        bench: Bench,
        transform: Callable[[Floats], Floats] | None = None,
        *,
        weight: Floats | None = None,
        query_text: Callable[[str], str] = lambda text: text,
        query_weight: Floats | None = None,
    ) -> None:
        self.bench = bench
        self.transform = transform
        self.weight = bench.ones if weight is None else weight
        self.query_weight = self.weight if query_weight is None else query_weight
        self.query_text = query_text
        self.passages = self._moved(bench.pooled(bench.tokens, self.weight))
        self.messages = message_vectors(bench, self.passages, bench.owners)
        self.density = densities(self.messages, self.messages, own=True)

    def _moved(self, rows: Floats) -> Floats:
        return unit_rows(self.transform(rows)) if self.transform is not None else rows

    def vector(self, query: SetQuery) -> Floats:
        text = self.query_text(query.text)
        rows = self._moved(self.bench.pooled(self.bench.token_ids([text]), self.query_weight))
        vector: Floats = rows[0]
        return vector

    def cosines(self, vector: Floats) -> Floats:
        return self.bench.best(self.passages @ vector, self.bench.owners)

    def scored(self, vector: Floats, density_weight: float = 0.5) -> list[tuple[str, float]]:
        """The first :data:`POOL` by cosine, ordered by their cosine less ``density_weight`` times their
        density, with those scores."""
        found = self.cosines(vector)
        among = np.argsort(-found, kind="stable")[:POOL]
        scores = found[among] - density_weight * self.density[among]
        order = np.argsort(-scores, kind="stable")
        return [(self.bench.ids[among[n]], float(scores[n])) for n in order]

    def ranking(self, density_weight: float = 0.5) -> Ranking:
        return lambda query: [key for key, _ in self.scored(self.vector(query), density_weight)]


def whitening(bench: Bench, keep: int | None) -> Callable[[Floats], Floats]:
    """Centre on the account's passages' mean and whiten by their covariance (the ``keep`` strongest
    directions, or all)."""
    vectors = bench.pooled(bench.tokens, bench.ones)
    centre = vectors.mean(axis=0)
    directions, strengths, _ = np.linalg.svd(np.cov((vectors - centre).T))
    whiten = (directions / np.sqrt(strengths + 1e-6))[:, :keep]
    return lambda rows: ((rows - centre) @ whiten).astype(np.float32)


def all_but_the_top(bench: Bench, top: int) -> Callable[[Floats], Floats]:
    """The account's passages' mean and their ``top`` principal components taken out."""
    vectors = bench.pooled(bench.tokens, bench.ones)
    centre = vectors.mean(axis=0)
    components = np.linalg.svd(vectors - centre, full_matrices=False)[2][:top]

    def moved(rows: Floats) -> Floats:
        centred = rows - centre
        kept: Floats = (centred - (centred @ components.T) @ components).astype(np.float32)
        return kept

    return moved


def mutual_proximity(bench: Bench, form: str) -> Ranking:
    """Instead of CSLS, among the first :data:`POOL` by cosine: Gaussian mutual proximity (``mp``) or the
    message's z-score (``z``)."""
    space = Space(bench)
    similarity = space.messages @ space.messages.T
    np.fill_diagonal(similarity, np.nan)
    mean, spread = np.nanmean(similarity, axis=1), np.nanstd(similarity, axis=1)
    below = np.vectorize(lambda z: 0.5 * math.erfc(-z / math.sqrt(2)))

    def ranking(query: SetQuery) -> list[str]:
        found = space.cosines(space.vector(query))
        among = np.argsort(-found, kind="stable")[:POOL]
        own = (found[among] - mean[among]) / spread[among]
        scores = own if form == "z" else below((found[among] - found.mean()) / found.std()) * below(own)
        return [bench.ids[among[n]] for n in np.argsort(-scores, kind="stable")]

    return ranking


def without(words: frozenset[str]) -> Callable[[str], str]:
    """A description without ``words`` (itself where nothing else is left)."""
    return lambda text: " ".join(w for w in _WORD.findall(text) if w.casefold() not in words) or text


def fed_back(space: Space, first: int, beta: float) -> Scored:
    """The query's vector plus ``beta`` times the mean of its ``first`` messages by CSLS, ranked again."""

    def scored(query: SetQuery) -> list[tuple[str, float]]:
        vector = space.vector(query)
        top = [space.bench.place[key] for key, _ in space.scored(vector)[:first]]
        moved = unit_rows((vector + beta * space.messages[top].mean(axis=0))[None, :])[0]
        return space.scored(moved)

    return scored


def remembered(scored: Scored) -> Scored:
    """``scored``, each query's answer found once."""
    found: dict[str, list[tuple[str, float]]] = {}

    def answer(query: SetQuery) -> list[tuple[str, float]]:
        if query.id not in found:
            found[query.id] = scored(query)
        return found[query.id]

    return answer


def ids(scored: Scored) -> Ranking:
    return lambda query: [key for key, _ in scored(query)]


def convex(bench: Bench, scored: Scored, alpha: float, norm: str) -> Ranking:
    """Words and meaning by ``alpha`` times the words' normalised score plus ``1 - alpha`` times the
    meaning's (a message one ranking lacks: that ranking's least)."""

    def normalised(found: list[tuple[str, float]]) -> dict[str, float]:
        values = np.array([score for _, score in found], dtype=np.float64)
        if not len(values):
            return {}
        if norm == "minmax":
            values = (values - values.min()) / ((values.max() - values.min()) or 1.0)
        elif norm == "max":
            values = values / (values.max() or 1.0)
        else:
            values = (values - values.mean()) / (values.std() or 1.0)
        return {key: float(value) for (key, _), value in zip(found, values, strict=True)}

    def ranking(query: SetQuery) -> list[str]:
        words, meaning = normalised(bench.word_scores[query.id]), normalised(scored(query))
        least_words, least_meaning = min(words.values(), default=0.0), min(meaning.values(), default=0.0)
        keys = list(dict.fromkeys([*words, *meaning]))
        total = {
            key: alpha * words.get(key, least_words) + (1 - alpha) * meaning.get(key, least_meaning)
            for key in keys
        }
        return sorted(keys, key=lambda key: -total[key])

    return ranking


def rrf(bench: Bench, ranking: Ranking, near: int, constant: int) -> Ranking:
    """``about``'s fusion with its agreement asked within the meaning's first ``near`` and rank constant
    ``constant``."""

    def fused(query: SetQuery) -> list[str]:
        with mock.patch.object(fusion, "AGREEMENT_NEAR", near):
            found = fuse(bench.words[query.id], ranking(query)[:POOL], rank_constant=constant)
        return [one.key for one in found]

    return fused


def methods(bench: Bench) -> dict[str, Callable[[], list[tuple[str, Ranking]]]]:
    """Each method's rows, made when asked for (each row fused with words is printed beside it, but the
    fusions')."""
    csls = Space(bench)
    keeps: tuple[int | None, ...] = (None, 32, 64, 128, 192)
    frequency_weights = {a: (a / (a + bench.frequency)).astype(np.float32) for a in (1e-4, 1e-3, 1e-2)}
    feedback = {
        f"k={k} beta={beta}": remembered(fed_back(csls, k, beta))
        for k in (1, 2, 3, 5, 10)
        for beta in (0.25, 0.5, 1.0, 2.0, 3.0)
    }
    shipped = feedback["k=2 beta=1.0"]
    return {
        "whitening": lambda: tuned_on_a(
            bench,
            "whitening",
            {
                f"{'all' if keep is None else keep} directions{suffix}": space.ranking(weight)
                for keep in keeps
                for space in (Space(bench, whitening(bench, keep)),)
                for suffix, weight in (("", 0.0), (", csls", 0.5))
            },
        ),
        "abtt": lambda: tuned_on_a(
            bench,
            "all-but-the-top",
            {
                f"D={top}{suffix}": space.ranking(weight)
                for top in range(1, 11)
                for space in (Space(bench, all_but_the_top(bench, top)),)
                for suffix, weight in (("", 0.0), (", csls", 0.5))
            },
        ),
        "mp": lambda: tuned_on_a(
            bench,
            "hubness reduced by",
            {
                "csls (shipped)": csls.ranking(),
                "mutual proximity": mutual_proximity(bench, "mp"),
                "z-score": mutual_proximity(bench, "z"),
            },
        ),
        "request": lambda: tuned_on_a(
            bench,
            "csls, query",
            {
                "as asked (shipped)": csls.ranking(),
                "without about's stop words": Space(bench, query_text=without(STOP_WORDS)).ranking(),
                "without request words": Space(bench, query_text=without(REQUEST_WORDS)).ranking(),
                **{
                    f"tokens by frequency a={a:g}": Space(bench, query_weight=weight).ranking()
                    for a, weight in frequency_weights.items()
                },
            },
        ),
        "feedback": lambda: tuned_on_a(
            bench, "csls + feedback", {label: ids(scored) for label, scored in feedback.items()}
        ),
        "fusion": lambda: [
            ("feedback k=2 beta=1.0, meaning alone", ids(shipped)),
            ("rrf, agreement in the first 10, constant 30 (before)", rrf(bench, ids(shipped), 10, 30)),
            ("rrf, agreement in the first 5, constant 10 (shipped)", rrf(bench, ids(shipped), 5, 10)),
            *[
                (f"convex {norm} alpha={alpha}", convex(bench, shipped, alpha, norm))
                for norm in ("minmax", "max", "z")
                for alpha in (0.1, 0.2, 0.3, 0.5)
            ],
        ],
    }

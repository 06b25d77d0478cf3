"""Does expanding ``about``'s words with their nearest words in the index's own vocabulary raise its
recall on the meaning set (issue 80)? A measurement, not a feature: ``about`` does not expand today.

The vocabulary is the SQLite index's (FTS5's ``fts5vocab``: every term of the set's messages, alphabetic,
three letters or more), each term embedded exactly by the shipped model. A description's words
(:func:`~mail_imap_mcp.meaning.fusion.about_words`) gain the terms nearest, by cosine, to:

* ``each word``: each of its words (its ``k`` nearest at or above ``floor``; a term sharing a token of the
  model's tokenizer with the word is left out, as its likeness is the shared token's: "heating" and "he");
* ``description``: the description as a whole (``about``'s own vector);
* ``near mail``: the description, among the terms of the 10 messages nearest it in meaning (pseudo
  relevance feedback).

Each expansion is ranked by the engine's BM25 over its words, any of them (rarer words weigh more) and
measured three ways: ``words`` (that ranking alone); ``one search`` (it, as ``about``'s words ranking,
fused with the meaning by :func:`~mail_imap_mcp.meaning.fusion.fuse`); ``apart`` (the description's own
words and the added words as two rankings, each weighed by its agreement with the meaning, fused with it:
a message found by added words alone is then found by meaning). Recall at 10 on each half of the queries,
and on the English paraphrases split in two (A: the first, third, ... English topic; B: the others): the
variant best on A is reported on B. Then the cost of the nearest words at a vocabulary of 100,000 and
300,000 terms (what an index of 100,000 messages may hold; the set's is a few thousand).

``scripts/meaning_expansion`` prints Markdown tables and the load average."""

from __future__ import annotations

import itertools
import os
import re
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

import numpy as np  # noqa: E402
from tests.support.mail.meaning_set import FOLDERS, SetQuery, meaning_set  # noqa: E402
from tests.support.mail.meaning_set.recall import labelled_store, recall_at, with_vectors  # noqa: E402

from mail_imap_mcp.index.engines.sqlite.store import SqliteStore  # noqa: E402
from mail_imap_mcp.meaning.fusion import RANK_CONSTANT, about_words, agreement_weight, fuse  # noqa: E402
from mail_imap_mcp.meaning.model import ENGLISH, shipped_model  # noqa: E402
from mail_imap_mcp.query.tree import AnyOf, Contains  # noqa: E402

if TYPE_CHECKING:
    import numpy.typing as npt

    from mail_imap_mcp.index.store import IndexStore
    from mail_imap_mcp.index.vectors import VectorStore
    from mail_imap_mcp.meaning.model import TextModel

#: Messages each ranking brings to the fusion, as ``about``'s (services/search_meaning.py POOL).
POOL = 100
#: The messages nearest in meaning whose terms ``near mail`` draws from.
NEAR_MAIL = 10
LABELLED = meaning_set()
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Variant:
    """One way to expand: from what (``each word``, ``description``, ``near mail``), how many terms, the
    least cosine."""

    source: str
    k: int
    floor: float

    def __str__(self) -> str:
        return f"{self.source}, k {self.k}, floor {self.floor}"


class Vocabulary:
    """The index's terms and their exact vectors."""

    def __init__(self, path: Path, model: TextModel) -> None:
        db = sqlite3.connect(path)
        try:
            db.execute("CREATE VIRTUAL TABLE temp.vocabulary USING fts5vocab(main, fts, 'row')")
            self.terms = [
                t for (t,) in db.execute("SELECT term FROM temp.vocabulary") if t.isalpha() and len(t) > 2
            ]
        finally:
            db.close()
        self.model = model
        self.vectors = model.embed(self.terms)
        tokenizer = getattr(model, "_tokenizer", None)
        self._tokens: Callable[[str], set[int]] = (
            (lambda text: set(tokenizer.encode(text, add_special_tokens=False).ids))
            if tokenizer is not None
            else (lambda text: {hash(text)})
        )
        self._term_tokens = [self._tokens(term) for term in self.terms]
        self._embedded: dict[str, npt.NDArray[np.float32]] = {}

    def vector(self, text: str) -> npt.NDArray[np.float32]:
        if text not in self._embedded:
            self._embedded[text] = self.model.embed([text])[0]
        return self._embedded[text]

    def nearest(
        self,
        vector: npt.NDArray[np.float32],
        k: int,
        floor: float,
        unlike: Sequence[str],
        allowed: set[str] | None,
    ) -> list[str]:
        """The ``k`` terms nearest ``vector`` at or above ``floor``, none of ``unlike`` nor sharing a token
        with them, only ``allowed`` ones (None: any)."""
        similarity = self.vectors @ vector
        shared = set().union(*(self._tokens(word) for word in unlike)) if unlike else set()
        found: list[str] = []
        for row in np.argsort(-similarity, kind="stable"):
            if similarity[row] < floor or len(found) == k:
                break
            term = self.terms[row]
            if term in unlike or self._term_tokens[row] & shared:
                continue
            if allowed is None or term in allowed:
                found.append(term)
        return found


class Measure:
    """The rankings of one variant on the set's index store."""

    def __init__(self, store: IndexStore, vectors: VectorStore, vocabulary: Vocabulary) -> None:
        self.store = store
        self.vectors = vectors
        self.vocabulary = vocabulary
        self._searched: dict[tuple[str, ...], list[str]] = {}
        self._near: dict[str, list[str]] = {}
        self._texts = {m.id: f"{m.subject} {m.body}".casefold() for m in LABELLED.messages}

    def by_words(self, words: Sequence[str]) -> list[str]:
        """The engine's BM25 over ``words``, any of them (nothing where it weighs nothing)."""
        key = tuple(sorted(words))
        if key not in self._searched:
            ranked: list[str] = []
            if words:
                page = self.store.search(
                    AnyOf(tuple(Contains("text", word) for word in words)),
                    folders=FOLDERS,
                    order="relevance",
                    limit=POOL,
                    offset=0,
                )
                if not page.unweighted:
                    ranked = [LABELLED.id_at(hit.folder, hit.uid) for hit in page.hits]
            self._searched[key] = ranked
        return self._searched[key]

    def by_meaning(self, text: str) -> list[str]:
        if text not in self._near:
            near = self.vectors.nearest(self.vocabulary.vector(text), None, list(FOLDERS), POOL)
            self._near[text] = [LABELLED.id_at(h.folder, h.uid) for h in near if 1 - h.rank > 0]
        return self._near[text]

    def added(self, query: SetQuery, variant: Variant) -> list[str]:
        """The words ``variant`` adds to the query's."""
        words = about_words(query.text)
        vocabulary = self.vocabulary
        if variant.source == "each word":
            added: dict[str, None] = {}
            for word in words:
                near = vocabulary.nearest(vocabulary.vector(word), variant.k, variant.floor, words, None)
                added.update(dict.fromkeys(near))
            return list(added)
        allowed = None
        if variant.source == "near mail":
            ids = self.by_meaning(query.text)[:NEAR_MAIL]
            allowed = set(itertools.chain.from_iterable(_WORD.findall(self._texts[i]) for i in ids))
        return vocabulary.nearest(vocabulary.vector(query.text), variant.k, variant.floor, words, allowed)

    def rankings(self, query: SetQuery, variant: Variant | None) -> dict[str, list[str]]:
        words = about_words(query.text)
        added = self.added(query, variant) if variant is not None else []
        expanded = self.by_words([*words, *added])
        meaning = self.by_meaning(query.text)
        own, by_added = self.by_words(words), self.by_words(added)
        apart: dict[str, float] = {}
        for ranking, weight in (
            (own, agreement_weight(own, meaning)),
            (by_added, agreement_weight(by_added, meaning)),
            (meaning, 1.0),
        ):
            for place, key in enumerate(ranking, start=1):
                apart[key] = apart.get(key, 0.0) + weight / (RANK_CONSTANT + place)
        return {
            "words": expanded,
            "one search": [one.key for one in fuse(expanded, meaning)],
            "apart": sorted(apart, key=lambda key: -apart[key]),
        }


def halves() -> dict[str, list[SetQuery]]:
    """The set's halves, the English paraphrases first and then split into A and B."""
    found = LABELLED.halves()
    paraphrases = found["paraphrase, English"]
    return {
        "paraphrase, English": paraphrases,
        "A": paraphrases[::2],
        "B": paraphrases[1::2],
        **{half: queries for half, queries in found.items() if half != "paraphrase, English"},
    }


def measured(measure: Measure, variant: Variant | None) -> dict[str, dict[str, float]]:
    """Recall at 10 of each ranking on each half."""
    found: dict[str, dict[str, float]] = {}
    for half, queries in halves().items():
        for query in queries:
            for name, ranking in measure.rankings(query, variant).items():
                found.setdefault(name, {}).setdefault(half, 0.0)
                found[name][half] += recall_at(ranking, query.relevant) / len(queries)
    return found


def lookup_ms(terms: int, dimensions: int, words: int) -> float:
    """Median CPU milliseconds (the machine may be shared) to find the 5 nearest of ``words`` vectors among ``terms`` random unit rows."""
    rng = np.random.default_rng(80)
    table = rng.standard_normal((terms, dimensions), dtype=np.float32)
    table /= np.linalg.norm(table, axis=1, keepdims=True)
    asked = table[:words].copy()
    samples = []
    for _ in range(15):
        start = time.process_time()
        similarity = asked @ table.T  # a row per word
        np.argpartition(-similarity, 5, axis=1)[:, :5]
        samples.append((time.process_time() - start) * 1000)
    return median(samples)


def main() -> None:
    model = shipped_model(ENGLISH)
    variants: list[Variant | None] = [None]
    variants += [Variant("each word", k, floor) for k in (2, 3, 5) for floor in (0.3, 0.4)]
    variants += [
        Variant(source, k, floor)
        for source in ("description", "near mail")
        for k in (5, 10)
        for floor in (0.2, 0.3)
    ]
    with (
        tempfile.TemporaryDirectory(prefix="meaning-expansion-") as scratch,
        labelled_store(Path(scratch), "sqlite", None) as store,
    ):
        vectors = with_vectors(store, model)
        assert isinstance(store, SqliteStore), "the vocabulary is read from the SQLite engine's FTS5 table"
        vocabulary = Vocabulary(store.path, model)
        measure = Measure(store, vectors, vocabulary)
        start = time.perf_counter()
        rows = [(variant, measured(measure, variant)) for variant in variants]
        seconds = time.perf_counter() - start
    names = list(halves())
    print(
        f"recall@10 on the meaning set, words expanded from the index's vocabulary ({len(vocabulary.terms):,} terms); "
        f"load {', '.join(f'{n:.1f}' for n in os.getloadavg())}\n"
    )
    print(f"| expansion | ranking | {' | '.join(names)} |\n|---|---|{'---:|' * len(names)}")
    for variant, found in rows:
        for ranking, recall in found.items():
            if variant is None and ranking == "apart":
                continue
            print(f"| {variant or 'none'} | {ranking} | {' | '.join(f'{recall[h]:.2f}' for h in names)} |")
    for ranking in ("one search", "apart"):
        best = max(rows[1:], key=lambda row: row[1][ranking]["A"])  # the first of equals: fewest words
        print(
            f"\nBest on A by `{ranking}`: {best[0]}: A {best[1][ranking]['A']:.2f}, B {best[1][ranking]['B']:.2f} "
            f"(no expansion: B {rows[0][1]['one search']['B']:.2f}), English keywords "
            f"{best[1][ranking]['keyword, English']:.2f}"
        )
    print(f"\n{len(variants)} variants x {len(LABELLED.queries)} queries measured in {seconds:.1f} s.")
    print(
        "\nCost of the nearest words (numpy, one matrix product and a partial sort; CPU time, median of 15):\n"
    )
    print("| vocabulary | 1 word | 5 words |\n|---:|---:|---:|")
    for terms in (100_000, 300_000):
        one, five = lookup_ms(terms, model.dimensions, 1), lookup_ms(terms, model.dimensions, 5)
        print(f"| {terms:,} terms | {one:.1f} ms | {five:.1f} ms |")
    vector_bytes = 300_000 * model.dimensions
    print(f"\nKept as int8: {vector_bytes / 1e6:.0f} MB for 300,000 terms ({model.dimensions} bytes a term).")


if __name__ == "__main__":
    main()

"""The bench that scripts/meaning_methods and scripts/meaning_methods_csls measure ways to rank by meaning on:
the meaning set (tests/support/mail/meaning_set, issue 80), the shipped model's token table, the set's
passages and their token ids, words' rankings by the engine's BM25 on a SQLite index of the set (with
their scores), the reported groups of queries (the English paraphrases in two halves: A, the 1st, 3rd,
... English topic, B the others) and recall at 10 of a ranking on each."""

from __future__ import annotations

import re
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from statistics import mean
from typing import TYPE_CHECKING

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests.support.mail.meaning_set import FOLDERS, MeaningSet, SetQuery  # noqa: E402
from tests.support.mail.meaning_set.recall import fill, passages, words_tree  # noqa: E402

from mail_imap_mcp.config import AccountConfig, Config, IndexSettings  # noqa: E402  (after the path above)
from mail_imap_mcp.index.engines import open_engine  # noqa: E402
from mail_imap_mcp.meaning.fusion import fuse  # noqa: E402
from mail_imap_mcp.meaning.hubness import unit_rows  # noqa: E402
from mail_imap_mcp.meaning.model import ENGLISH, shipped_model  # noqa: E402

if TYPE_CHECKING:
    import numpy.typing as npt

    from mail_imap_mcp.meaning.static_model import StaticModel

    Floats = npt.NDArray[np.float32]

K = 10
#: A ranking: message ids, best first.
Ranking = Callable[[SetQuery], list[str]]
GROUPS = ("para A", "para B", "keyword en", "para de/fr", "keyword de/fr")
_WORD = re.compile(r"\w+")


def groups(labelled: MeaningSet) -> dict[str, list[SetQuery]]:
    """The queries of each reported group; the English topics alternate between halves A and B."""
    topics = list(dict.fromkeys(q.id.split("/")[0] for q in labelled.queries if q.language == "en"))
    half = {topic: "AB"[n % 2] for n, topic in enumerate(topics)}
    found: dict[str, list[SetQuery]] = {name: [] for name in GROUPS}
    for query in labelled.queries:
        topic = query.id.split("/")[0]
        if query.language == "en":
            found[f"para {half[topic]}" if query.kind == "paraphrase" else "keyword en"].append(query)
        else:
            found["para de/fr" if query.kind == "paraphrase" else "keyword de/fr"].append(query)
    return found


class Bench:
    """The set, the model's table, the set's passages and their token ids, and words' rankings (each
    query's message ids, best first, and their BM25 scores, higher better)."""

    def __init__(self, labelled: MeaningSet, scored: dict[str, list[tuple[str, float]]]) -> None:
        model: StaticModel = shipped_model(ENGLISH)  # type: ignore[assignment]
        self.labelled = labelled
        self.groups = groups(labelled)
        self.table: Floats = model._table
        self.tokenizer = model._tokenizer
        self.ids = [message.id for message in labelled.messages]
        self.place = {message_id: n for n, message_id in enumerate(self.ids)}
        self.word_scores = scored
        self.words = {query: [message for message, _ in found] for query, found in scored.items()}
        self.owners, texts = self.passages_of(lambda message_passages: message_passages)
        self.tokens = self.token_ids(texts)
        counts = np.zeros(len(self.table))
        for ids in self.tokens:
            np.add.at(counts, ids, 1)
        self.frequency = counts / counts.sum()
        seen = np.zeros(len(self.table))
        for message in range(len(self.ids)):
            rows = np.flatnonzero(self.owners == message)
            seen[np.unique(np.concatenate([self.tokens[r] for r in rows]))] += 1
        self.document_frequency = seen
        self.ones = np.ones(len(self.table), dtype=np.float32)

    def passages_of(self, shape: Callable[[list[str]], list[str]]) -> tuple[npt.NDArray[np.int64], list[str]]:
        owners, texts = [], []
        for n, message in enumerate(self.labelled.messages):
            for passage in shape(passages(message)):
                owners.append(n)
                texts.append(passage)
        return np.array(owners), texts

    def token_ids(self, texts: list[str]) -> list[npt.NDArray[np.int64]]:
        encoded = self.tokenizer.encode_batch(texts, add_special_tokens=False)
        return [np.array(one.ids, dtype=np.int64) for one in encoded]

    def pooled(self, tokens: list[npt.NDArray[np.int64]], weight: Floats) -> Floats:
        out = np.zeros((len(tokens), self.table.shape[1]), dtype=np.float32)
        for row, ids in enumerate(tokens):
            if len(ids):
                out[row] = (self.table[ids] * weight[ids][:, None]).sum(axis=0)
        return unit_rows(out)

    def best(self, similarity: Floats, owners: npt.NDArray[np.int64]) -> Floats:
        """Each message's best passage's similarity."""
        found = np.full(len(self.ids), -9.0, dtype=np.float32)
        np.maximum.at(found, owners, similarity)
        return found

    def ordered(self, scores: Floats, among: Iterable[int] | None = None) -> list[str]:
        rows = np.arange(len(self.ids)) if among is None else np.fromiter(among, dtype=np.int64)
        return [self.ids[rows[n]] for n in np.argsort(-scores[rows], kind="stable")]

    def recall(self, ranking: Ranking) -> dict[str, float]:
        return {
            name: mean(len(q.relevant.intersection(ranking(q)[:K])) / len(q.relevant) for q in queries)
            for name, queries in self.groups.items()
        }

    def fused(self, ranking: Ranking) -> Ranking:
        return lambda query: [one.key for one in fuse(self.words[query.id], ranking(query)[:100])]


def vector_ranking(
    bench: Bench,
    weight: Floats | None = None,
    *,
    remove: int = 0,
    shape: Callable[[list[str]], list[str]] | None = None,
) -> tuple[Ranking, Callable[[SetQuery], Floats], Floats, npt.NDArray[np.int64]]:
    """Rank by the best passage's cosine (token rows weighted by ``weight``; less the first ``remove``
    principal components; passages made by ``shape``): the ranking, the per-message scores, the passage
    vectors and their owners."""
    weight = bench.ones if weight is None else weight
    owners, tokens = bench.owners, bench.tokens
    if shape is not None:
        owners, texts = bench.passages_of(shape)
        tokens = bench.token_ids(texts)
    vectors = bench.pooled(tokens, weight)
    components = np.linalg.svd(vectors, full_matrices=False)[2][:remove] if remove else None
    if components is not None:
        vectors = unit_rows(vectors - (vectors @ components.T) @ components)

    def scores(query: SetQuery) -> Floats:
        vector = bench.pooled(bench.token_ids([query.text]), weight)
        if components is not None:
            vector = unit_rows(vector - (vector @ components.T) @ components)
        return bench.best(vectors @ vector[0], owners)

    return (lambda query: bench.ordered(scores(query))), scores, vectors, owners


def message_vectors(bench: Bench, vectors: Floats, owners: npt.NDArray[np.int64]) -> Floats:
    """Each message's unit mean of its passages' vectors."""
    summed = np.zeros((len(bench.ids), vectors.shape[1]), dtype=np.float32)
    np.add.at(summed, owners, vectors)
    return unit_rows(summed)


def tuned_on_a(bench: Bench, name: str, candidates: dict[str, Ranking]) -> list[tuple[str, Ranking]]:
    """Every candidate's row is printed; the one best on half A is marked as the method's pick."""
    recalls = {label: bench.recall(ranking) for label, ranking in candidates.items()}
    pick = max(recalls, key=lambda label: recalls[label]["para A"])
    return [
        (f"{name} {label}" + (" (tuned on A)" if label == pick else ""), candidates[label])
        for label in candidates
    ]


def words_rankings(labelled: MeaningSet) -> dict[str, list[tuple[str, float]]]:
    """Each query's first 100 messages by the engine's BM25 on its content words (any of them), on a
    SQLite index of the set, with their scores (higher is better)."""
    account = AccountConfig.model_validate({"host": "imap.example.org", "username": "u", "password_env": "X"})
    with tempfile.TemporaryDirectory(prefix="meaning-methods-") as scratch:
        config = Config.model_validate(
            {"server": {"index_dir": scratch}, "index": IndexSettings(index_engine="sqlite").model_dump()}
        )
        engine = open_engine(config)
        store = engine.location("meaning", account).open().store
        try:
            fill(store, labelled)
            found = {}
            for query in labelled.queries:
                page = store.search(
                    words_tree(query.text), folders=FOLDERS, order="relevance", limit=100, offset=0
                )
                found[query.id] = [(labelled.id_at(hit.folder, hit.uid), -hit.rank) for hit in page.hits]
            return found
        finally:
            store.close()
            engine.close()

"""Recall at 10 on the meaning set: of the messages a query should find, the share in the first ten of
a ranking, averaged over each half of the queries (:meth:`MeaningSet.halves`). The rankings measured:

* words only, :func:`by_words`: the engine's BM25 on the query's content words, any of them
  (``query`` ranked by relevance, as the index answers it), on a real index store of the set
  (:func:`fill`);
* meaning only, :func:`by_meaning`: a text model's (the shipped one) vectors of each message's passages
  against the query's, exact cosine, a message by its best passage;
* meaning only through the index's own vectors, :func:`by_nearest`, and ``about``'s fusion of words and
  meaning on them, :func:`by_about` (services/search_meaning.py).

Used by tests/integration/index/test_meaning_recall.py and scripts/meaning_recall.py."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from statistics import mean
from typing import TYPE_CHECKING

import pytest

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.index.engines import open_engine
from mail_imap_mcp.index.store import IndexStore
from mail_imap_mcp.query import AnyOf, Contains
from mail_imap_mcp.query.tree import Query
from tests.support.clients.in_process import make_config
from tests.support.mail.meaning_set import FOLDERS, UIDVALIDITY, MeaningSet, SetMessage, SetQuery, meaning_set
from tests.support.mail.meaning_set.words import content_words
from tests.support.servers.postgres import PostgresServer, analyzed, on_engine

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from mail_imap_mcp.index.vectors import VectorStore
    from mail_imap_mcp.meaning.model import TextModel

#: How many of a ranking's first messages count.
K = 10
#: A ranking: the ids of the messages it puts first for a query, best first.
Ranking = Callable[[SetQuery], list[str]]


#: Each engine, and the PostgreSQL server fixture it runs on: Debian's (vectors ranked in the instance from
#: its quantised copy) and one that carries pgvector.
ENGINE_SERVERS = {
    "sqlite": None,
    "sqlite+tantivy": None,
    "postgresql": "postgres",
    "postgresql+pgvector": "postgres_vector",
}


@contextmanager
def labelled_store(
    index_dir: Path, engine: str, server: PostgresServer | None, labelled: MeaningSet | None = None
) -> Iterator[IndexStore]:
    """``labelled`` (None: the meaning set) in an index store of ``engine`` (``server``: PostgreSQL's),
    opened as the application opens one, in ``index_dir``."""
    account = AccountConfig.model_validate({"host": "imap.example.org", "username": "u", "password_env": "X"})
    opened_engine = open_engine(on_engine(make_config({}, index_dir=str(index_dir)), engine, server))
    store = opened_engine.location("meaning", account).open().store
    try:
        fill(store, meaning_set() if labelled is None else labelled)
        yield store
    finally:
        store.close()
        opened_engine.close()


@contextmanager
def engine_store(
    request: pytest.FixtureRequest, index_dir: Path, labelled: MeaningSet | None = None
) -> Iterator[IndexStore]:
    """:func:`labelled_store` on the engine of ``request.param`` (a key of :data:`ENGINE_SERVERS`), its
    PostgreSQL server the fixture that names."""
    server_fixture = ENGINE_SERVERS[request.param]
    server = request.getfixturevalue(server_fixture) if server_fixture else None
    with labelled_store(index_dir, request.param.removesuffix("+pgvector"), server, labelled) as store:
        yield store


def fill(store: IndexStore, labelled: MeaningSet) -> None:
    """Put the set's messages in ``store``, each folder whole, and have its statistics made
    (:func:`~tests.support.servers.postgres.analyzed`)."""
    for folder in FOLDERS:
        state = store.start_folder(folder, UIDVALIDITY)
        store.put(state, [message.indexed() for message in labelled.in_folder(folder)])
    analyzed(store)


def words_tree(text: str) -> Query:
    """The query of a text's content words, any of them (the index ranks by how well they match)."""
    words = dict.fromkeys(content_words(text))
    return AnyOf(tuple(Contains("text", word) for word in words))


def by_words(store: IndexStore, labelled: MeaningSet, k: int = K) -> Ranking:
    """The store's first ``k`` by relevance for the query's words."""

    def ranking(query: SetQuery) -> list[str]:
        page = store.search(words_tree(query.text), folders=FOLDERS, order="relevance", limit=k, offset=0)
        return [labelled.id_at(hit.folder, hit.uid) for hit in page.hits]

    return ranking


def passages(message: SetMessage) -> list[str]:
    """The passages of a message that are embedded, as the index makes them
    (:func:`mail_imap_mcp.index.passages.passages`)."""
    from mail_imap_mcp.index.passages import passages as of_texts

    return of_texts(message.texts)


def by_meaning(
    model: TextModel,
    labelled: MeaningSet,
    k: int = K,
    passages_of: Callable[[SetMessage], list[str]] = passages,
) -> Ranking:
    """The first ``k`` messages by the cosine of their best passage's vector (``passages_of`` a message:
    the text embedded) with the query's."""
    import numpy as np

    owners, texts = [], []
    for message in labelled.messages:
        for passage in passages_of(message):
            owners.append(message.id)
            texts.append(passage)
    vectors = model.embed(texts)

    def ranking(query: SetQuery) -> list[str]:
        similarity = vectors @ model.embed([query.text])[0]
        ranked: list[str] = []
        for row in np.argsort(-similarity, kind="stable"):
            if owners[row] not in ranked:
                ranked.append(owners[row])
            if len(ranked) == k:
                break
        return ranked

    return ranking


def by_nearest(
    store: IndexStore, labelled: MeaningSet, model: TextModel, k: int = K, *, fed_back: bool = True
) -> Ranking:
    """Meaning alone through the index's own vectors, as ``about`` ranks by them
    (:func:`~mail_imap_mcp.services.search_meaning_near.by_meaning`): the store's
    :data:`~mail_imap_mcp.services.search_meaning.NEAREST_POOL` nearest (:meth:`VectorStore.nearest`),
    their hubness reduced, sought again from the vector moved towards the first of them (unless not ``fed_back``); the
    store's vectors made first (:func:`with_vectors`)."""
    from mail_imap_mcp.services.search_meaning import NEAREST_POOL
    from mail_imap_mcp.services.search_meaning_near import NearestAsk, by_meaning

    vectors = with_vectors(store, model)

    def ranking(query: SetQuery) -> list[str]:
        ask = NearestAsk(vectors, None, list(FOLDERS), NEAREST_POOL)
        ranked = by_meaning(ask, model.embed([query.text])[0], fed_back=fed_back)[:k]
        return [labelled.id_at(hit.folder, hit.uid) for hit in ranked]

    return ranking


def by_about(store: IndexStore, labelled: MeaningSet, model: TextModel, k: int = K) -> Ranking:
    """``about``'s ranking: words and meaning fused (:class:`~mail_imap_mcp.services.search_meaning.MeaningRanking`),
    on the store's vectors (:func:`with_vectors`)."""
    from mail_imap_mcp.index.store import PageAsk
    from mail_imap_mcp.query import EVERYTHING
    from mail_imap_mcp.services.search_meaning import MeaningRanking

    with_vectors(store, model)

    def ranking(query: SetQuery) -> list[str]:
        ask = PageAsk(folders=list(FOLDERS), order="relevance", limit=k, offset=0)
        page = MeaningRanking(model, query.text, None, 0).page(store, EVERYTHING, ask)
        return [labelled.id_at(hit.folder, hit.uid) for hit in page.hits]

    return ranking


def by_like(
    store: IndexStore, labelled: MeaningSet, model: TextModel, k: int = K
) -> Callable[[str], list[str]]:
    """``like``'s ranking: the messages nearest in meaning to the message of the given id, without it, on
    the store's vectors (:func:`with_vectors`)."""
    from mail_imap_mcp.index.store import PageAsk
    from mail_imap_mcp.mail.ids import MessageRef
    from mail_imap_mcp.query import EVERYTHING
    from mail_imap_mcp.services.search_meaning import MeaningRanking

    with_vectors(store, model)

    def ranking(message_id: str) -> list[str]:
        message = labelled.by_id[message_id]
        ref = MessageRef("recall", message.folder, UIDVALIDITY, message.uid)
        ask = PageAsk(folders=list(FOLDERS), order="relevance", limit=k, offset=0)
        page = MeaningRanking(model, None, ref, 0).page(store, EVERYTHING, ask)
        return [labelled.id_at(hit.folder, hit.uid) for hit in page.hits]

    return ranking


def like_recall(liked: Callable[[str], list[str]], relevant: frozenset[str], k: int = K) -> float:
    """Each of ``relevant`` liked, the share of the others among its first ``k`` (against at most ``k``),
    averaged."""
    cells = []
    for message_id in sorted(relevant):
        others = relevant - {message_id}
        cells.append(len(others.intersection(liked(message_id)[:k])) / min(k, len(others)))
    return mean(cells)


def with_vectors(store: IndexStore, model: TextModel) -> VectorStore:
    """``store`` with every message's vectors, made by the index's own pass (:func:`fill_vectors`)."""
    from mail_imap_mcp.index.sync_vectors import fill_vectors, vector_store

    vectors = vector_store(store)
    assert vectors is not None, "this engine keeps no vectors"
    if vectors.vector_counts(model.name).partial:
        fill_vectors(vectors, model, lambda: False, pause=lambda: None)
    return vectors


def recall_at(ranked: Sequence[str], relevant: frozenset[str], k: int = K) -> float:
    """The share of ``relevant`` among the first ``k`` of ``ranked``."""
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def recall(ranking: Ranking, labelled: MeaningSet, k: int = K) -> dict[str, float]:
    """Recall at ``k`` of ``ranking``, averaged over each half of the set's queries."""
    return {
        half: mean(recall_at(ranking(query), query.relevant, k) for query in queries)
        for half, queries in labelled.halves().items()
    }


def table(columns: dict[str, dict[str, float]], labelled: MeaningSet) -> str:
    """The recalls of each ranking (``columns``: its name, and its recall per half) as a Markdown table."""
    halves = labelled.halves()
    lines = [
        f"| queries | {' | '.join(columns)} |",
        f"|---|{'---:|' * len(columns)}",
    ]
    for half, queries in halves.items():
        cells = " | ".join(f"{found[half]:.2f}" for found in columns.values())
        lines.append(f"| {half} ({len(queries)}) | {cells} |")
    return "\n".join(lines)


class Remembered:
    """A model that embeds each distinct text once for the process: every mailbox and engine measured
    embeds the same distractors again (the figures are the same; only the run is shorter)."""

    def __init__(self, model: TextModel) -> None:
        self.name, self.dimensions, self._model = model.name, model.dimensions, model
        self._vectors: dict[str, npt.NDArray[np.float32]] = {}

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        import numpy as np

        new = list(dict.fromkeys(text for text in texts if text not in self._vectors))
        if new:
            self._vectors.update(zip(new, self._model.embed(new), strict=True))
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return np.stack([self._vectors[text] for text in texts])

    def rest(self) -> None:
        self._model.rest()

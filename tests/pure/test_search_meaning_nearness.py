"""A page's nearest messages on one snapshot of the SQLite engines (index/engines/sqlite/nearness.py): the
same ranking, the same hits, the same fused page as the store's nearest asked each time with the vectors
read back apart (the way every engine without it ranks, services/search_meaning_near.py), by the exact
path and the two-pass one, with and without filters; and what a page no longer does twice: the
signatures' freshness checked once a page, the texts read of the page's hits alone."""

from __future__ import annotations

import functools
import sqlite3
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

import mail_imap_mcp.index.engines.sqlite.pages as sqlite_pages
import mail_imap_mcp.meaning.vectors as meaning_vectors
from mail_imap_mcp.index.densities import DensityKeeper
from mail_imap_mcp.index.engines.sqlite.store import SqliteStore
from mail_imap_mcp.index.engines.tantivy.store import TantivyStore
from mail_imap_mcp.index.passages import passages
from mail_imap_mcp.index.store import TEXT_COLUMNS, HitPage, IndexedMessage, PageAsk
from mail_imap_mcp.mail.errors import MessageGone
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.query import EVERYTHING, Contains, HasFlag, Query
from mail_imap_mcp.services.search_meaning import MeaningRanking
from mail_imap_mcp.services.search_meaning_near import NearestAsk, by_meaning

STORES = {"sqlite": SqliteStore, "sqlite+tantivy": TantivyStore}
DIMENSIONS = 64
WORDS = [
    "invoice",
    "bill",
    "amount",
    "due",
    "payment",
    "heating",
    "radiator",
    "boiler",
    "flat",
    "landlord",
    "website",
    "homepage",
    "redesign",
    "landing",
    "pages",
    "flight",
    "trip",
    "hotel",
    "lisbon",
    "booked",
    "lunch",
    "friday",
    "noon",
    "meeting",
    "agenda",
    "minutes",
    "report",
]
FOLDERS = ("INBOX", "Archive", "Lists")


@functools.cache
def _word_vector(word: str) -> npt.NDArray[np.float32]:
    return np.random.default_rng(zlib.crc32(word.encode())).standard_normal(DIMENSIONS).astype(np.float32)


class WordModel:
    """A text as the unit sum of its words' fixed random vectors (a text of none: a row of zeros)."""

    name = "words-64"
    dimensions = DIMENSIONS

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        rows = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.casefold().split():
                rows[row] += _word_vector(word.strip(".,:"))
        lengths = np.linalg.norm(rows, axis=1, keepdims=True)
        return np.divide(rows, lengths, out=rows, where=lengths > 0)

    def rest(self) -> None:
        """Nothing is kept between calls."""


def _message(uid: int, rng: np.random.Generator) -> IndexedMessage:
    subject = " ".join(rng.choice(WORDS, 3))
    body = " ".join(rng.choice(WORDS, 12))
    texts = tuple(subject if c == "subject" else body if c == "body" else "" for c in TEXT_COLUMNS)
    flags = ("\\Seen",) if uid % 3 else ()
    return IndexedMessage(
        uid, 1_700_000_000 + uid * 60, 20231114, 1000 + uid, flags, False, texts, arrival=uid
    )


@pytest.fixture(params=sorted(STORES))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqliteStore]:
    """Three folders of 120 messages of a few words each, their passages' vectors by :class:`WordModel`,
    their densities found."""
    opened = STORES[request.param](tmp_path / "index.sqlite3")
    rng = np.random.default_rng(7)
    model = WordModel()
    for number, folder in enumerate(FOLDERS):
        mail = [_message(uid, rng) for uid in range(1, 121)]
        opened.put(opened.start_folder(folder, 10 + number), mail)
        opened.put_vectors(model.name, {(folder, m.uid): model.embed(passages(m.texts)) for m in mail})
    DensityKeeper(opened, model.name).fill(lambda: False, lambda: None)  # the pass: every density found
    yield opened
    opened.close()


@pytest.fixture(params=[meaning_vectors.EXACT_MOST, 0], ids=["exact", "two passes"])
def exact_most(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    """Few candidates are ranked whole; with the bound at 0, the two passes are taken at any size."""
    monkeypatch.setattr(meaning_vectors, "EXACT_MOST", request.param)
    return int(request.param)


class AskedEachTime:
    """The store as an engine without a page's snapshot (PostgreSQL's): its nearest asked each time, the
    vectors read back apart. Its class has no ``nearness``: everything else is the store's."""

    def __init__(self, store: SqliteStore) -> None:
        self.store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


SEARCHES: list[tuple[Query | None, tuple[str, ...]]] = [
    (None, FOLDERS),
    (Contains("text", "invoice"), ("INBOX", "Lists")),
    (HasFlag("seen", present=False), FOLDERS),
]
DESCRIPTIONS = ("the bill for the website redesign", "heating in the flat", "agenda")


@pytest.mark.parametrize(("query", "folders"), SEARCHES)
def test_the_nearest_of_one_snapshot_rank_and_read_as_the_nearest_asked_each_time(
    store: SqliteStore, exact_most: int, query: Query | None, folders: tuple[str, ...]
) -> None:
    model = WordModel()
    each_time = AskedEachTime(store)
    for text in DESCRIPTIONS:
        vector = model.embed([text])[0]
        for fed_back, leave_out in ((True, None), (False, ("INBOX", 5))):
            found = []
            for vectors in (store, each_time):
                ask = NearestAsk(vectors, query, folders, 30, leave_out)  # type: ignore[arg-type]
                with ask.opened() as near:
                    ranked = by_meaning(ask, vector, fed_back=fed_back, near=near)
                    found.append(([(one.folder, one.uid, one.rank) for one in ranked], near.hits(ranked)))
            (snapshot, snapshot_hits), (asked, asked_hits) = found
            assert snapshot == asked and snapshot
            assert snapshot_hits == asked_hits


def _page(ranking: MeaningRanking, store: Any, query: Query, offset: int) -> tuple[HitPage, Any]:
    ask = PageAsk(folders=list(FOLDERS), order="relevance", limit=10, offset=offset, keep=200)
    page = ranking.page(store, query, ask)
    return page, page.places.result() if page.places is not None else None


def test_a_page_of_about_and_of_like_is_the_page_asked_each_time_makes(
    store: SqliteStore, exact_most: int
) -> None:
    model = WordModel()
    each_time = AskedEachTime(store)
    asked: list[tuple[str | None, MessageRef | None]] = [(text, None) for text in DESCRIPTIONS]
    asked += [
        (None, MessageRef("a", folder, 10 + n, uid)) for n, folder in enumerate(FOLDERS) for uid in (2,)
    ]
    for about, like in asked:
        for offset in (0, 10):
            pages = []
            for vectors in (store, each_time):
                ranking = MeaningRanking(model, about, like, 0)  # type: ignore[arg-type]
                page, places = _page(ranking, vectors, HasFlag("seen") if offset else EVERYTHING, offset)
                pages.append((page.hits, page.total, places, ranking.whys, ranking.kept))
            assert pages[0] == pages[1]
            assert pages[0][0]


def test_an_about_page_checks_the_signatures_once_and_reads_the_texts_of_its_hits_alone(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two nearest a page (``about`` fed back), one check of the changes to the vectors; the texts of a
    ``like`` page (no words searched) read for its own message and its 10 hits, not its 100 nearest."""
    monkeypatch.setattr(meaning_vectors, "EXACT_MOST", 0)  # the signatures' first pass
    statements: list[str] = []
    connect = sqlite3.connect

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        db = connect(*args, **kwargs)
        db.set_trace_callback(statements.append)
        return db

    monkeypatch.setattr(sqlite3, "connect", traced)  # the read connections, opened by the first search
    opened = store
    model = WordModel()
    ask = PageAsk(folders=list(FOLDERS), order="relevance", limit=10, offset=0, keep=0)
    for text in DESCRIPTIONS:
        MeaningRanking(model, text, None, 0).page(opened, EVERYTHING, ask)  # type: ignore[arg-type]
    statements.clear()
    MeaningRanking(model, "the bill for the website redesign", None, 0).page(opened, EVERYTHING, ask)  # type: ignore[arg-type]
    assert sum("vector_changes" in statement for statement in statements) == 1

    texts_read = 0
    unpack = sqlite_pages.unpack_doc

    def counted(doc: bytes) -> tuple[list[str], tuple[str, ...]]:
        nonlocal texts_read
        texts_read += 1
        return unpack(doc)

    monkeypatch.setattr(sqlite_pages, "unpack_doc", counted)
    like = MessageRef("a", "INBOX", 10, 4)
    page = MeaningRanking(model, None, like, 0).page(opened, EVERYTHING, ask)  # type: ignore[arg-type]
    assert len(page.hits) == 10 and page.total > 10
    assert texts_read == 1 + 10


def test_a_like_page_searched_again_embeds_its_message_once_and_reads_it_each_time(
    store: SqliteStore,
) -> None:
    """A page searched again after a sync (index/answer.py) ranks by the same message: its texts read
    from the store each time (gone: MessageGone), embedded once, the same page both times."""
    embedded: list[int] = []

    class Counted(WordModel):
        def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
            embedded.append(len(texts))
            return super().embed(texts)

    ranking = MeaningRanking(Counted(), None, MessageRef("a", "INBOX", 10, 4), 0)  # type: ignore[arg-type]
    first, _ = _page(ranking, store, EVERYTHING, 0)
    again, _ = _page(ranking, store, EVERYTHING, 0)
    assert len(embedded) == 1 and again.hits == first.hits
    store.put(store.start_folder("INBOX", 99), [])  # its UIDVALIDITY changed: every message gone
    with pytest.raises(MessageGone):
        _page(ranking, store, EVERYTHING, 0)

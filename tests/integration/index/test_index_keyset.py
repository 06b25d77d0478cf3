"""Pages of the index in PostgreSQL by key (issue 50 item 1), on a throwaway cluster (tests/support/servers/postgres.py).

A later page goes on after the previous page's last row, by its sort key, over the rows that existed when
the first page was read: in every order, its pages are the whole listing cut in pieces, whatever arrives
or is deleted between them; newer rows are left out and counted. This rests on ``ts_rank`` using nothing
but the message's own words (no corpus statistics): a row's rank is the same on every page, which the
SQLite index's BM25 is not (its pages keep places instead, tests/integration/index/test_index_pages.py).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mail_imap_mcp.config import AccountConfig, IndexSettings
from mail_imap_mcp.credentials.secrets import index_password
from mail_imap_mcp.index.engine import IndexEngine
from mail_imap_mcp.index.engines.postgresql.engine import PostgresEngine
from mail_imap_mcp.index.engines.sqlite.engine import SqliteEngine
from mail_imap_mcp.index.store import (
    RESUME_BYTES,
    TEXT_COLUMNS,
    FolderState,
    IndexedMessage,
    IndexStore,
    Order,
    StaleResume,
)
from mail_imap_mcp.query.tree import Contains, Query
from tests.support.servers.postgres import PostgresServer, index_table

ACCOUNT = AccountConfig.model_validate({"host": "imap.example.org", "username": "u", "password_env": "X"})
KIWI = Contains("text", "kiwi")
FOLDERS = ["INBOX", "Archive"]


def message(uid: int, *, kiwis: int, sent: int, subject: bool = False, arrival: int = 0) -> IndexedMessage:
    """A message with ``kiwis`` times the word (none: it does not match), sent at ``sent``, arrived at
    ``arrival`` (0: at half of it, long ago)."""
    values = {
        "subject": "kiwi" if subject and kiwis else "note",
        "body": "kiwi " * kiwis + "words " * (uid % 4),
    }
    texts = tuple(values.get(column, "") for column in TEXT_COLUMNS)
    return IndexedMessage(uid, sent, 20260101, 100, (), False, texts, arrival=arrival or sent // 2)


@pytest.fixture
def engine(postgres: PostgresServer) -> Iterator[IndexEngine]:
    index = IndexSettings.model_validate(index_table(postgres))
    engine = PostgresEngine(index, index_password(index))
    yield engine
    engine.close()


@pytest.fixture
def pg(engine: IndexEngine) -> Iterator[IndexStore]:
    store = engine.location("a", ACCOUNT).open().store
    yield store
    store.close()


_uids = itertools.count(1)


def fill(
    store: IndexStore, count: int, *, first_sent: int = 1000, arrival: int = 0
) -> dict[str, FolderState]:
    """``count`` messages over two folders: ties of rank and of sent date, and some that do not match;
    ``arrival``: when they arrived (0: long ago)."""
    states = {name: store.folders().get(name) or store.start_folder(name, 1) for name in FOLDERS}
    batches: dict[str, list[IndexedMessage]] = {name: [] for name in FOLDERS}
    for number in range(count):
        uid = next(_uids)
        batches[FOLDERS[uid % 2]].append(
            message(
                uid, kiwis=number % 3, sent=first_sent + number // 3, subject=number % 7 == 1, arrival=arrival
            )
        )
    for name, batch in batches.items():
        store.put(states[name], batch)
    return {name: store.folders()[name] for name in FOLDERS}


def listing(store: IndexStore, order: Order, query: Query = KIWI) -> list[tuple[str, int]]:
    page = store.search(query, folders=FOLDERS, order=order, limit=10_000, offset=0)
    return [(hit.folder, hit.uid) for hit in page.hits]


@pytest.mark.parametrize("order", ["relevance", "date", "uid", "arrival"])
def test_pages_by_key_are_the_listing_cut_in_pieces_while_rows_arrive_and_go(
    pg: IndexStore, order: Order
) -> None:
    fill(pg, 90)
    whole = listing(pg, order)
    first = pg.search(KIWI, folders=FOLDERS, order=order, limit=7, offset=0, keep=2000)
    assert first.keyed is not None and first.places is None  # by key: no places kept
    assert first.total == len(whole) == 60
    listed = [(hit.folder, hit.uid) for hit in first.hits]
    resume, deleted, arrived = first.keyed.resume, [], 0
    while resume is not None:
        assert len(resume) <= RESUME_BYTES
        arrived += sum(1 for m in range(12) if m % 3)  # 12 more, 8 of them matching (and ranking first)
        # Arrived now, after the first page (mail filed meanwhile keeps an older INTERNALDATE, and is listed).
        fill(pg, 12, first_sent=10_000 + arrived, arrival=int(time.time()) + arrived)
        waiting = [place for place in whole if place not in listed and place not in deleted]
        if len(waiting) > 3:
            gone = waiting[1]
            pg.update(pg.folders()[gone[0]], flags={}, removed=[gone[1]])
            deleted.append(gone)
        page = pg.search(KIWI, folders=FOLDERS, order=order, limit=7, offset=len(listed), after=resume)
        assert page.keyed is not None
        assert page.keyed.newer == arrived  # the newer matches, left out and counted
        assert page.total == len(whole) - len(deleted)  # the matches among the rows of the first page
        listed += [(hit.folder, hit.uid) for hit in page.hits]
        resume = page.keyed.resume
    assert deleted
    assert listed == [place for place in whole if place not in deleted]  # none repeated, none skipped


def test_a_resume_of_another_order_or_engine_is_refused(pg: IndexStore) -> None:
    fill(pg, 30)
    first = pg.search(KIWI, folders=FOLDERS, order="relevance", limit=3, offset=0)
    assert first.keyed is not None and first.keyed.resume is not None
    with pytest.raises(StaleResume):
        pg.search(KIWI, folders=FOLDERS, order="uid", limit=3, offset=3, after=first.keyed.resume)
    with pytest.raises(StaleResume):
        pg.search(KIWI, folders=FOLDERS, order="relevance", limit=3, offset=3, after=b"\x01" * 5)


def test_a_rows_rank_does_not_move_as_other_rows_arrive_in_postgresql_and_does_in_sqlite(
    pg: IndexStore, tmp_path: Path
) -> None:
    """``ts_rank`` reads the message's own ``tsvector`` alone; SQLite's BM25 weighs a word by how many
    messages hold it and a message by the average length: new mail moves every rank."""
    sqlite_engine = SqliteEngine(tmp_path / "ix")
    sqlite = sqlite_engine.location("a", ACCOUNT).open().store
    try:
        ranks: dict[str, list[dict[int, float]]] = {"pg": [], "sqlite": []}
        for round_ in range(2):
            for name, store in (("pg", pg), ("sqlite", sqlite)):
                if round_ == 0:
                    state = store.start_folder("INBOX", 1)
                    store.put(state, [message(uid, kiwis=uid, sent=uid) for uid in range(1, 6)])
                else:  # many more messages, most of them with the word, some long
                    more = [message(uid, kiwis=uid % 9, sent=uid) for uid in range(6, 200)]
                    store.put(store.folders()["INBOX"], more)
                page = store.search(KIWI, folders=["INBOX"], order="relevance", limit=500, offset=0)
                ranks[name].append({hit.uid: hit.rank for hit in page.hits if hit.uid <= 5})
        assert ranks["pg"][0] == ranks["pg"][1]
        assert len(ranks["pg"][0]) == 5
        assert ranks["sqlite"][0] != ranks["sqlite"][1]
    finally:
        sqlite.close()

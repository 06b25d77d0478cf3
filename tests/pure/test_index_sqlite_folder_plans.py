"""How the SQLite index finds a condition's matches in some folders (issue 80): SQLite keeps no
statistics, and took the folders' index for any folders, then looked each message's row up, ten times
slower than reading the table where those folders hold most messages (a words page of a flag filter over
a million messages: seconds). Its plan of a page's count and list, read from SQLite itself: the table
where the folders asked hold a tenth of the messages or more, their index where they hold fewer or where
there is no condition (the index answers alone), and the page the same messages either way."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import cast

import pytest

from mail_imap_mcp.index.engines.sqlite.pages import page_task
from mail_imap_mcp.index.engines.sqlite.query import compile_fts5
from mail_imap_mcp.index.engines.sqlite.ranking import Ranker
from mail_imap_mcp.index.engines.sqlite.store import SqliteStore
from mail_imap_mcp.index.store import TEXT_COLUMNS, IndexedMessage, PageAsk
from mail_imap_mcp.query import EVERYTHING, HasFlag, Query

#: Messages a folder holds: two large, one small (2 of 82: fewer than a tenth).
HELD = {"INBOX": 40, "Archive": 40, "Drafts": 2}
EVERY_FLAG = HasFlag("flagged")


def message(uid: int) -> IndexedMessage:
    texts = tuple("note" if column == "subject" else "" for column in TEXT_COLUMNS)
    return IndexedMessage(
        uid, 1_700_000_000 + uid * 60, 20231114, 1000, ("\\Flagged",) * (uid % 2), False, texts
    )


@pytest.fixture
def db(tmp_path: Path) -> sqlite3.Connection:
    store = SqliteStore(tmp_path / "index.sqlite3")
    for name, count in HELD.items():
        store.put(store.start_folder(name, 7), [message(uid) for uid in range(1, count + 1)])
    store.close()
    return sqlite3.connect(tmp_path / "index.sqlite3")


@pytest.mark.parametrize(
    ("asked", "query", "by_index"),
    [
        (["INBOX", "Archive", "Drafts"], EVERY_FLAG, False),
        (["Archive", "INBOX"], EVERY_FLAG, False),
        (["Drafts"], EVERY_FLAG, True),
        (["INBOX", "Archive", "Drafts"], EVERYTHING, True),
    ],
    ids=["every folder", "most messages", "few messages", "no condition"],
)
def test_a_page_reads_the_table_where_its_folders_hold_most_messages(
    db: sqlite3.Connection, asked: list[str], query: Query, by_index: bool
) -> None:
    stored = [
        (str(name), int(key), int(held))
        for key, name, held in db.execute("SELECT id, name, messages FROM folders")
    ]
    statements: list[str] = []
    db.set_trace_callback(statements.append)
    ask: PageAsk = {"folders": asked, "order": "date", "limit": 100, "offset": 0}
    page, _ = page_task(stored, cast(Ranker, None), compile_fts5(query), ask)(db)
    db.set_trace_callback(None)
    wanted = {
        (name, uid) for name in asked for uid in range(1, HELD[name] + 1) if uid % 2 or query != EVERY_FLAG
    }
    assert {(hit.folder, hit.uid) for hit in page.hits} == wanted and page.total == len(wanted)
    listing = [s for s in statements if "FROM messages m WHERE" in s and "m.id IN" not in s]
    # the list, and the count where the filter is more than flags (else the total is the file's counts)
    assert len(listing) == (1 if compile_fts5(query).flag_values is not None else 2), statements
    for statement in listing:
        plan = " ".join(str(row[-1]) for row in db.execute("EXPLAIN QUERY PLAN " + statement))
        assert ("(folder=?)" in plan) is by_index, (statement, plan)

"""Flag filters on the SQLite engines (issue 80): SQLite keeps no statistics, and a flag was tested on
every message's row read (its bits, which no index answers): ``flagged`` where a few messages are, among a
million, read the whole table (a words page 0.6-0.8 s, search by meaning 0.17-0.24 s). A flag few
messages have or lack is now asked of the index of ``flag_bits``, a common one still tested on each row
read (an index look-up of most rows is ten times the table read), as SQLite's own plan of each statement
says; counts of each value of ``flag_bits``, kept by triggers, tell one from the other; a file made before
gains them when it is opened; and every flag filter finds the same messages whichever way it is asked."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import numpy as np
import pytest

from mail_imap_mcp.index.engines.sqlite.store import SqliteStore
from mail_imap_mcp.index.engines.tantivy.store import TantivyStore
from mail_imap_mcp.index.store import TEXT_COLUMNS, IndexedMessage
from mail_imap_mcp.query import AllOf, AnyOf, Contains, DateBound, HasFlag, Not, Query
from tests.support.shared.index_flag_changes import sqlite_reads
from tests.support.shared.index_fts5 import matches

#: Messages a folder holds: two large, one small (fewer than a tenth: its own index finds its messages).
HELD = {"INBOX": 400, "Archive": 400, "Lists": 30}
FOLDERS = tuple(HELD)
EVERY = sum(HELD.values())
MODEL = "flags-model"
#: What this change adds to a file: the flags' index, their counts and the triggers that keep them.
ADDED = (
    "messages_flag_bits",
    "folder_flag_counts",
    "folder_flag_counts_added",
    "folder_flag_counts_removed",
    "folder_flag_counts_changed",
)


def flags(uid: int) -> tuple[str, ...]:
    """Seen but one in 25 (unseen rare), flagged one in 50 and draft one in 20 (rare), answered one in 3
    (common and not), deleted none."""
    kept = [] if uid % 25 == 0 else ["\\Seen"]
    kept += ["\\Flagged"] * (uid % 50 == 0) + ["\\Draft"] * (uid % 20 == 0) + ["\\Answered"] * (uid % 3 == 0)
    return tuple(kept)


def message(uid: int, folder: str) -> IndexedMessage:
    subject = "invoice" if uid % 4 == 0 else "note"
    texts = tuple(f"{subject} {folder.lower()}" if column == "subject" else "" for column in TEXT_COLUMNS)
    day = 20260101 + uid % 28
    return IndexedMessage(uid, 1_767_225_600 + uid * 60, day, 100, flags(uid), False, texts)


def fill(store: SqliteStore) -> None:
    rng = np.random.default_rng(80)
    for folder, held in HELD.items():
        kept = [message(uid, folder) for uid in range(1, held + 1)]
        store.put(store.start_folder(folder, 7), kept)
        vectors = rng.standard_normal((held, 8)).astype(np.float32)
        store.put_vectors(MODEL, {(folder, m.uid): vectors[at : at + 1] for at, m in enumerate(kept)})


@pytest.fixture(params=[SqliteStore, TantivyStore], ids=["sqlite", "sqlite+tantivy"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqliteStore]:
    opened: SqliteStore = request.param(tmp_path / "index.sqlite3")
    fill(opened)
    yield opened
    opened.close()


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement the stores' read connections run (with their values)."""
    return sqlite_reads(monkeypatch)


def found(store: SqliteStore, query: Query, folders: list[str]) -> tuple[set[tuple[str, int]], ...]:
    """The messages a words page (every match on it) and search by meaning (every match near) find."""
    page = store.search(query, folders=folders, order="date", limit=EVERY, offset=0)
    assert page.total == len(page.hits)
    vector = np.random.default_rng(1).standard_normal(8).astype(np.float32)
    near = store.nearest(vector, query, folders, EVERY)
    return {(hit.folder, hit.uid) for hit in page.hits}, {(hit.folder, hit.uid) for hit in near}


RARE = [
    HasFlag("flagged"),
    HasFlag("deleted"),
    HasFlag("seen", present=False),
    Not(HasFlag("seen")),
    AllOf((HasFlag("draft"), DateBound("since", date(2026, 1, 10)))),
]
COMMON = [HasFlag("seen"), HasFlag("flagged", present=False), Not(HasFlag("deleted")), HasFlag("answered")]


@pytest.mark.parametrize(("query", "rare"), [(q, True) for q in RARE] + [(q, False) for q in COMMON])
def test_a_flag_few_messages_have_or_lack_is_asked_of_its_index_and_a_common_one_is_not(
    store: SqliteStore, statements: list[str], query: Query, rare: bool
) -> None:
    """Each statement that lists a flag filter's matches (a words page's count and list, search by
    meaning's list): SQLite's plan searches the flags' index for a rare flag, and never for a common
    one (a look-up of most rows); in a small folder, by the index that finds fewer messages (the
    folder's where a flag passes more messages than it holds), never by reading the table."""
    db = sqlite3.connect(store.path)
    for folders in (list(FOLDERS), ["INBOX", "Archive"], ["Lists"]):
        statements.clear()
        found(store, query, folders)
        listing = [
            s
            for s in statements
            if s.lstrip().startswith("SELECT") and "m.flag_bits" in s and "m.id IN" not in s
        ]
        # the page's count (none of flags alone: the file's counts say) and list, search by meaning's list
        assert len(listing) >= (2 if store.compiled(query).flag_values is not None else 3), statements
        small = folders == ["Lists"]
        for statement in listing:
            plan = " ".join(str(row[-1]) for row in db.execute("EXPLAIN QUERY PLAN " + statement))
            flags_index = "messages_flag_bits (flag_bits=?)" in plan
            if small:  # the flags' index where its flag passes fewer messages than the folder holds
                passing = store.compiled(query).flagged
                fewer = passing is not None and passing < HELD["Lists"]
                assert "SCAN m" not in plan and flags_index is fewer, (statement, plan)
            else:
                assert flags_index is rare, (statement, plan)


WORD = Contains("subject", "invoice")
SINCE = DateBound("since", date(2026, 1, 15))


def grid() -> Iterator[Query]:
    """Each flag set and not, alone, under NOT, and with dates, words and another flag."""
    for name in ("seen", "answered", "flagged", "deleted", "draft"):
        for present in (True, False):
            flag = HasFlag(name, present=present)
            yield flag
            yield Not(flag)
            yield AllOf((flag, SINCE))
            yield AllOf((WORD, flag))
            yield AllOf((WORD, Not(flag), SINCE))
            yield AnyOf((flag, HasFlag("flagged")))


def test_every_flag_filter_finds_the_messages_the_query_language_says(store: SqliteStore) -> None:
    """Set and not, with NOT, folders, dates and words, asked of the index or tested on each row: a words
    page and search by meaning find the messages the query says (the file's counts decide the way)."""
    rendered = set()
    for query in grid():
        rendered.add("IN (" in store.compiled(query).where)
        for folders in (list(FOLDERS), ["Archive"], ["INBOX", "Lists"]):
            expected = {
                (folder, uid)
                for folder in folders
                for uid in range(1, HELD[folder] + 1)
                if matches(query, message(uid, folder))
            }
            assert found(store, query, folders) == (expected, expected), (query, folders)
    assert rendered == {True, False}  # both ways were asked


def counted(path: Path) -> tuple[dict[int, int], dict[int, int]]:
    """The file's counts of each value of ``flag_bits``, and its messages' own."""
    db = sqlite3.connect(path)
    try:
        kept = dict(
            db.execute(
                "SELECT flag_bits, sum(messages) FROM folder_flag_counts GROUP BY flag_bits HAVING sum(messages) > 0"
            ).fetchall()
        )
        real = dict(db.execute("SELECT flag_bits, count(*) FROM messages GROUP BY flag_bits").fetchall())
        return kept, real
    finally:
        db.close()


def test_a_file_made_before_gains_the_flags_index_and_counts_when_opened(tmp_path: Path) -> None:
    """The file of the release before (this change's objects dropped: its schema) is not rebuilt: opened,
    it gains the index and counts that match its messages, which the triggers then keep as messages
    come, change their flags, go and leave with their folder."""
    path = tmp_path / "index.sqlite3"
    store = SqliteStore(path)
    fill(store)
    store.close()
    with contextlib.closing(sqlite3.connect(path)) as db:  # the file as the release before made it
        db.executescript(
            "".join(f"DROP TRIGGER {trigger};" for trigger in ADDED[2:])
            + "DROP TABLE folder_flag_counts; DROP INDEX messages_flag_bits;"
        )

    store = SqliteStore(path)
    try:
        names = {row[0] for row in sqlite3.connect(path).execute("SELECT name FROM sqlite_master")}
        assert set(ADDED) <= names
        kept, real = counted(path)
        assert kept == real and sum(kept.values()) == EVERY
        inbox = store.folders()["INBOX"]
        store.put(inbox, [message(uid, "INBOX") for uid in range(401, 406)])
        store.put(inbox, [message(1, "INBOX")])  # stored again: its row replaced
        store.update(
            store.folders()["INBOX"],
            flags={2: ("\\Flagged",), 3: (), 4: ("\\Seen", "\\Deleted")},
            removed=[5, 6],
        )
        kept, real = counted(path)
        assert kept == real and sum(kept.values()) == EVERY + 5 - 2
        store.drop_folder("Archive")
        kept, real = counted(path)
        assert kept == real and sum(kept.values()) == EVERY - HELD["Archive"] + 5 - 2
    finally:
        store.close()

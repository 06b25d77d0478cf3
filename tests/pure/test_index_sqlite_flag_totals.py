"""The total of a page whose filter is flags alone, on the SQLite engines (issue 80, last item): a common
flag's page counted its matches (230 ms of a million messages); it is now the sum of the file's counts of
each folder and value of ``flag_bits``, kept by triggers. It must be what counting gives, whatever came,
changed, moved and went; the page then runs no count of rows, nor does a change to count its folder; and a file of the first flags' index
(counts of each value alone) has its counts replaced when opened."""

from __future__ import annotations

import contextlib
import sqlite3
import tempfile
from collections.abc import Iterator
from datetime import date
from functools import partial
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mail_imap_mcp.index.engines.sqlite.query import compile_fts5
from mail_imap_mcp.index.engines.sqlite.store import SqliteStore
from mail_imap_mcp.query import AllOf, AnyOf, Contains, DateBound, HasFlag, Not, Query
from tests.support.shared.index_flag_changes import (
    FOLDERS,
    Mailbox,
    changes,
    check_totals,
    flag_filters,
    sqlite_reads,
)
from tests.support.shared.index_flag_changes import searched as folder_sets


def count_rows(path: Path, query: Query, folders: list[str]) -> int:
    """COUNT(*) of the messages of ``folders`` the query matches, in the file, tested row by row."""
    fts = compile_fts5(query)
    with contextlib.closing(sqlite3.connect(path)) as db:
        row = db.execute(
            "SELECT count(*) FROM messages m JOIN folders f ON f.id = m.folder "
            f"WHERE f.name IN ({', '.join('?' for _ in folders)}) AND ({fts.where})",
            [*folders, *fts.params],
        ).fetchone()
    return int(row[0])


@settings(max_examples=40, deadline=None)
@given(
    changes=changes,
    queries=st.lists(flag_filters, min_size=1, max_size=3),
    searched=folder_sets,
)
def test_a_flag_filters_total_is_what_counting_gives_after_any_changes(
    changes: list[tuple[object, ...]], queries: list[Query], searched: list[list[str]]
) -> None:
    """Random adds, flag changes, moves, deletes and folders dropped: after each, the total of a page of
    each flag filter (the counts' sum) is COUNT(*) of its matches, in every set of folders searched."""
    with (
        tempfile.TemporaryDirectory() as directory,
        contextlib.closing(SqliteStore(Path(directory) / "index.sqlite3")) as store,
    ):
        check_totals(store, changes, queries, searched, partial(count_rows, store.path))


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    return sqlite_reads(monkeypatch)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    opened = SqliteStore(tmp_path / "index.sqlite3")
    box = Mailbox(opened)
    for name in FOLDERS:
        box.add(name, [("\\Seen",)] * 30 + [()] * 3 + [("\\Seen", "\\Flagged")] * 2)
    yield opened
    opened.close()


@pytest.mark.parametrize(
    ("query", "flags_alone"),
    [
        (HasFlag("seen"), True),
        (Not(HasFlag("seen")), True),
        (AnyOf((HasFlag("flagged"), AllOf((HasFlag("seen", present=False),)))), True),
        (AllOf((HasFlag("seen"), DateBound("since", date(2026, 1, 1)))), False),
        (AllOf((HasFlag("seen"), Contains("subject", "note"))), False),
    ],
)
def test_a_page_of_flags_alone_counts_no_rows(
    store: SqliteStore, statements: list[str], query: Query, flags_alone: bool
) -> None:
    """A page whose filter is flags alone reads its total from the counts (no count(*), so no table read
    or index walk); one with anything else still counts its matches, and the two agree."""
    page = store.search(query, folders=["INBOX", "Lists"], order="arrival", limit=5, offset=0)
    counts = [s for s in statements if "count(*)" in s]
    assert bool(counts) is not flags_alone, statements
    assert any("folder_flag_counts" in s for s in statements) is flags_alone, statements
    with contextlib.closing(sqlite3.connect(store.path)) as db:
        plans = [
            " ".join(str(row[-1]) for row in db.execute("EXPLAIN QUERY PLAN " + s))
            for s in statements
            if "folder_flag_counts" in s
        ]
    assert all("messages" not in plan.replace("folder_flag_counts", "") for plan in plans), plans
    fts = compile_fts5(query)
    with contextlib.closing(sqlite3.connect(store.path)) as db:
        real = db.execute(
            f"SELECT count(*) FROM messages m WHERE m.folder IN (SELECT id FROM folders WHERE name IN ('INBOX', 'Lists')) AND ({fts.where})",
            fts.params,
        ).fetchone()[0]
    assert page.total == real


def test_a_change_counts_its_folder_from_the_kept_counts_not_its_rows(store: SqliteStore) -> None:
    """A sync's write sets the folder's count of messages from its kept counts: counting the folder's rows
    took 34 ms at a million messages in one folder, in every write transaction, holding other writers back."""
    written: list[str] = []
    store._db.set_trace_callback(written.append)
    box = Mailbox(store)
    box.next_uid = 1000
    box.add("INBOX", [("\\Seen",), ()])
    state = store.folders()["INBOX"]
    store.update(state, flags={1: ("\\Flagged",)}, removed=[2, 3])
    store._db.set_trace_callback(None)
    assert not [s for s in written if "count(*)" in s.lower()], written
    assert any("folder_flag_counts" in s and "UPDATE folders" in s for s in written), written
    assert store.folders()["INBOX"].messages == 35 + 2 - 2


def test_a_file_of_the_first_flags_index_has_its_counts_replaced_when_opened(tmp_path: Path) -> None:
    """The file of the release before (counts of each value alone, in ``flag_counts``) is not rebuilt:
    opened, it loses those and gains the counts of each folder, right from the start and kept after."""
    path = tmp_path / "index.sqlite3"
    store = SqliteStore(path)
    box = Mailbox(store)
    box.add("INBOX", [("\\Seen",), (), ("\\Flagged",)])
    box.add("Archive", [("\\Seen",)] * 4)
    store.close()
    with contextlib.closing(sqlite3.connect(path)) as db:  # the file as the release before left it
        db.executescript(
            "DROP TRIGGER folder_flag_counts_added; DROP TRIGGER folder_flag_counts_removed; "
            "DROP TRIGGER folder_flag_counts_changed; DROP TABLE folder_flag_counts; "
            "CREATE TABLE flag_counts(flag_bits INTEGER PRIMARY KEY, messages INTEGER NOT NULL); "
            "INSERT INTO flag_counts SELECT flag_bits, count(*) FROM messages GROUP BY flag_bits; "
            "CREATE TRIGGER flag_counts_added AFTER INSERT ON messages BEGIN "
            "UPDATE flag_counts SET messages = messages + 1 WHERE flag_bits = new.flag_bits; END;"
        )
    store = SqliteStore(path)
    box.store = store
    try:
        with contextlib.closing(sqlite3.connect(path)) as db:
            names = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        assert "flag_counts" not in names and "flag_counts_added" not in names
        box.add("INBOX", [("\\Seen",)])
        box.apply(("move", "INBOX", "Archive", 1))
        for query in (HasFlag("seen"), Not(HasFlag("seen"))):
            for folders in (["INBOX"], ["Archive"], ["INBOX", "Archive"]):
                page = store.search(query, folders=folders, order="arrival", limit=3, offset=0)
                assert page.total == count_rows(store.path, query, folders) == box.expected(query, folders)
    finally:
        store.close()

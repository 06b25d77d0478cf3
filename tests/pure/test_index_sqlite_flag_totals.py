"""The total of a page whose filter is flags alone, on the SQLite engines (issue 80, last item): a common
flag's page counted its matches (230 ms of a million messages); it is now the sum of the file's counts of
each folder and value of ``flag_bits``, kept by triggers. It must be what counting gives, whatever came,
changed, moved and went; the page then runs no count of rows; and a file of the first flags' index
(counts of each value alone) has its counts replaced when opened."""

from __future__ import annotations

import contextlib
import sqlite3
import tempfile
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mail_imap_mcp.index.engines.sqlite.query import compile_fts5
from mail_imap_mcp.index.engines.sqlite.ranking import ReadConnections
from mail_imap_mcp.index.engines.sqlite.store import SqliteStore
from mail_imap_mcp.index.store import FLAG_BITS, TEXT_COLUMNS, IndexedMessage
from mail_imap_mcp.query import AllOf, AnyOf, Contains, DateBound, HasFlag, Not, Query
from tests.support.shared.index_fts5 import matches

FOLDERS = ("INBOX", "Archive", "Lists")
SYSTEM_FLAGS = tuple("\\" + name.title() for name in FLAG_BITS)

flag_sets = st.frozensets(st.sampled_from(SYSTEM_FLAGS)).map(lambda found: tuple(sorted(found)))
flag_filters = st.recursive(
    st.builds(HasFlag, st.sampled_from(tuple(FLAG_BITS)), st.booleans()),
    lambda inner: st.one_of(
        st.builds(Not, inner),
        st.lists(inner, max_size=3).map(lambda parts: AllOf(tuple(parts))),
        st.lists(inner, min_size=1, max_size=3).map(lambda parts: AnyOf(tuple(parts))),
    ),
    max_leaves=4,
)
folder = st.sampled_from(FOLDERS)
changes = st.lists(
    st.one_of(
        st.tuples(st.just("add"), folder, st.lists(flag_sets, min_size=1, max_size=6)),
        st.tuples(st.just("flags"), folder, st.integers(0, 50), flag_sets),
        st.tuples(st.just("move"), folder, folder, st.integers(0, 50)),
        st.tuples(st.just("delete"), folder, st.integers(0, 50)),
        st.tuples(st.just("drop"), folder),
    ),
    min_size=1,
    max_size=12,
)


def message(uid: int, flags: tuple[str, ...]) -> IndexedMessage:
    texts = tuple("note" if column == "subject" else "" for column in TEXT_COLUMNS)
    return IndexedMessage(uid, 1_767_225_600 + uid * 60, 20260101, 100, flags, False, texts)


class Mailbox:
    """The store and what it should hold: each folder's messages (UID: flags)."""

    def __init__(self, store: SqliteStore) -> None:
        self.store = store
        self.held: dict[str, dict[int, tuple[str, ...]]] = {}
        self.next_uid = 1

    def add(self, name: str, flags: list[tuple[str, ...]]) -> None:
        state = self.store.folders().get(name) or self.store.start_folder(name, 7)
        added = {self.next_uid + at: kept for at, kept in enumerate(flags)}
        self.next_uid += len(flags)
        self.store.put(state, [message(uid, kept) for uid, kept in added.items()])
        self.held.setdefault(name, {}).update(added)

    def pick(self, name: str, at: int) -> int | None:
        uids = sorted(self.held.get(name, {}))
        return uids[at % len(uids)] if uids else None

    def apply(self, change: tuple[object, ...]) -> None:
        kind, name, *rest = change
        assert isinstance(name, str)
        if kind == "add":
            self.add(name, rest[0])  # type: ignore[arg-type]
        elif kind == "drop" and name in self.held:
            self.store.drop_folder(name)
            del self.held[name]
        elif kind in ("flags", "move", "delete"):
            uid = self.pick(name, rest[-1] if kind != "flags" else rest[0])  # type: ignore[arg-type]
            if uid is None:
                return
            state = self.store.folders()[name]
            if kind == "flags":
                self.store.update(state, flags={uid: rest[1]}, removed=[])  # type: ignore[dict-item]
                self.held[name][uid] = rest[1]  # type: ignore[assignment]
            else:  # a move is the message gone from one folder and new in another, as a sync sees it
                kept = self.held[name].pop(uid)
                self.store.update(state, flags={}, removed=[uid])
                if kind == "move":
                    self.add(str(rest[0]), [kept])

    def counted(self, query: Query, folders: list[str]) -> int:
        """COUNT(*) of the messages of ``folders`` the query matches, in the file, tested row by row."""
        fts = compile_fts5(query)
        with contextlib.closing(sqlite3.connect(self.store.path)) as db:
            row = db.execute(
                "SELECT count(*) FROM messages m JOIN folders f ON f.id = m.folder "
                f"WHERE f.name IN ({', '.join('?' for _ in folders)}) AND ({fts.where})",
                [*folders, *fts.params],
            ).fetchone()
        expected = sum(
            matches(query, message(uid, kept))
            for name in folders
            for uid, kept in self.held.get(name, {}).items()
        )
        assert int(row[0]) == expected
        return expected


@settings(max_examples=40, deadline=None)
@given(
    changes=changes,
    queries=st.lists(flag_filters, min_size=1, max_size=3),
    searched=st.lists(st.lists(folder, min_size=1, max_size=3, unique=True), min_size=1, max_size=2),
)
def test_a_flag_filters_total_is_what_counting_gives_after_any_changes(
    changes: list[tuple[object, ...]], queries: list[Query], searched: list[list[str]]
) -> None:
    """Random adds, flag changes, moves, deletes and folders dropped: after each, the total of a page of
    each flag filter (the counts' sum) is COUNT(*) of its matches, in every set of folders searched."""
    with tempfile.TemporaryDirectory() as directory:
        store = SqliteStore(Path(directory) / "index.sqlite3")
        try:
            box = Mailbox(store)
            box.add("INBOX", [("\\Seen",), ()])
            for change in changes:
                box.apply(change)
                for query in queries:
                    assert store.compiled(query).flag_values is not None
                    for folders in searched:
                        page = store.search(query, folders=folders, order="arrival", limit=3, offset=0)
                        assert page.total == box.counted(query, folders), (query, folders, change)
        finally:
            store.close()


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement the stores' read connections run."""
    ran: list[str] = []
    real = ReadConnections._open

    def traced(self: ReadConnections) -> sqlite3.Connection:
        db = real(self)
        db.set_trace_callback(ran.append)
        return db

    monkeypatch.setattr(ReadConnections, "_open", traced)
    return ran


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
                assert page.total == box.counted(query, folders)
    finally:
        store.close()

"""Random changes of an index's messages and random filters of flags alone (issue 80: a flag filter's
total from kept counts): what the SQLite and PostgreSQL tests compare the counts' answer against COUNT(*)
after, and the messages the store should then hold."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import replace

import pytest
from hypothesis import strategies as st

from mail_imap_mcp.index.engines.sqlite.ranking import ReadConnections
from mail_imap_mcp.index.store import FLAG_BITS, TEXT_COLUMNS, IndexedMessage, IndexStore
from mail_imap_mcp.query import AllOf, AnyOf, HasFlag, Not, Query
from tests.support.shared.index_fts5 import matches

FOLDERS = ("INBOX", "Archive", "Lists")
SYSTEM_FLAGS = tuple("\\" + name.title() for name in FLAG_BITS)

flag_sets = st.frozensets(st.sampled_from(SYSTEM_FLAGS)).map(lambda found: tuple(sorted(found)))
#: Flag tests under AND (none: every message), OR and NOT.
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
#: Messages added, a message's flags changed, moved (gone from one folder, new in another: what a sync
#: sees), deleted, and a folder dropped.
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
searched = st.lists(st.lists(folder, min_size=1, max_size=3, unique=True), min_size=1, max_size=2)


def message(uid: int, flags: tuple[str, ...]) -> IndexedMessage:
    texts = tuple("note" if column == "subject" else "" for column in TEXT_COLUMNS)
    return IndexedMessage(uid, 1_767_225_600 + uid * 60, 20260101, 100, flags, False, texts)


class Mailbox:
    """A store and what it should hold: each folder's messages (UID: flags)."""

    def __init__(self, store: IndexStore) -> None:
        self.store = store
        self.held: dict[str, dict[int, tuple[str, ...]]] = {}
        self.next_uid = 1

    def add(self, name: str, flags: list[tuple[str, ...]]) -> None:
        state = self.store.folders().get(name) or self.store.start_folder(name, 7)
        added = {self.next_uid + at: kept for at, kept in enumerate(flags)}
        self.next_uid += len(flags)
        state = replace(state, uidnext=self.next_uid, complete=True)
        self.store.put(state, [message(uid, kept) for uid, kept in added.items()])
        self.held.setdefault(name, {}).update(added)

    def _pick(self, name: str, at: int) -> int | None:
        uids = sorted(self.held.get(name, {}))
        return uids[at % len(uids)] if uids else None

    def apply(self, change: tuple[object, ...]) -> None:
        """One of :data:`changes`."""
        kind, name, *rest = change
        assert isinstance(name, str)
        if kind == "add":
            self.add(name, rest[0])  # type: ignore[arg-type]
        elif kind == "drop" and name in self.held:
            self.store.drop_folder(name)
            del self.held[name]
        elif kind in ("flags", "move", "delete"):
            uid = self._pick(name, rest[0] if kind == "flags" else rest[-1])  # type: ignore[arg-type]
            if uid is None:
                return
            state = self.store.folders()[name]
            if kind == "flags":
                self.store.update(state, flags={uid: rest[1]}, removed=[])  # type: ignore[dict-item]
                self.held[name][uid] = rest[1]  # type: ignore[assignment]
            else:
                kept = self.held[name].pop(uid)
                self.store.update(state, flags={}, removed=[uid])
                if kind == "move":
                    self.add(str(rest[0]), [kept])

    def expected(self, query: Query, folders: list[str]) -> int:
        """The messages of ``folders`` the query matches, as the query language says."""
        return sum(
            matches(query, message(uid, kept))
            for name in folders
            for uid, kept in self.held.get(name, {}).items()
        )


def check_totals(
    store: IndexStore,
    changes: list[tuple[object, ...]],
    queries: list[Query],
    searched: list[list[str]],
    count_rows: Callable[[Query, list[str]], int],
) -> None:
    """After each of ``changes``, each folder's count of messages is what it holds, and the total of a page
    of each of ``queries`` in each of ``searched`` is ``count_rows`` (COUNT(*) of its matches in the store's
    own tables), what the query language says."""
    box = Mailbox(store)
    box.add("INBOX", [("\\Seen",), ()])
    for change in changes:
        box.apply(change)
        held = {name: state.messages for name, state in store.folders().items() if name in box.held}
        assert held == {name: len(uids) for name, uids in box.held.items()}, change
        for query in queries:
            for folders in searched:
                page = store.search(query, folders=folders, order="date", limit=3, offset=0)
                counted = count_rows(query, folders)
                assert page.total == counted == box.expected(query, folders), (query, folders, change)


def sqlite_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement the SQLite stores' read connections run from now on (with their values)."""
    ran: list[str] = []
    real = ReadConnections._open

    def traced(self: ReadConnections) -> sqlite3.Connection:
        db = real(self)
        db.set_trace_callback(ran.append)
        return db

    monkeypatch.setattr(ReadConnections, "_open", traced)
    return ran

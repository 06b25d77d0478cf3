"""The index in SQLite FTS5 (Python's own ``sqlite3``): one database file per account.

Tables: ``folders`` (each indexed folder's sync state), ``messages`` (a row per message: its place, the
facts a query filters on, and its text columns compressed, to cut snippets from and to delete its
terms again) and ``fts``, a contentless FTS5 table of the text columns (the terms only: the text is
kept once, compressed, in ``messages``). Every change is one transaction (``BEGIN IMMEDIATE``), the
journal is WAL, so a process killed at any point leaves the last batch committed or not at all, and a
second process on the same file waits for the first one's transaction (SQLite's locking) instead of
corrupting it. ``application_id`` marks the file as this index; a file without the mark, of another
schema version or unreadable is :class:`IndexUnusable` (:mod:`.location` moves it aside).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from mail_imap_mcp.index.sqlite_errors import busy, open_failure, write_failure
from mail_imap_mcp.index.sqlite_pages import page_task
from mail_imap_mcp.index.sqlite_ranking import SHARDS, Ranker, ReadConnections
from mail_imap_mcp.index.store import (
    TEXT_COLUMNS,
    WRITER_WAIT_S,
    CompiledQuery,
    FolderState,
    HitPage,
    IndexBusy,
    IndexedMessage,
    IndexUnusable,
    IndexWriteFailed,
    Order,
    flag_bits,
    pack_texts,
    unpack_texts,
)
from mail_imap_mcp.query.fts5 import PLACE_COLUMN, label_keys, place_token

#: "MIMX": marks a database as this index (``PRAGMA application_id``).
APPLICATION_ID = 0x4D494D58
SCHEMA_VERSION = 7
#: Row ids per second of sent date (a row id is the sent time times this, plus a counter).
IDS_PER_SECOND = 4096
BUSY_TIMEOUT_S = WRITER_WAIT_S

#: The FTS5 table's columns: the text columns, then the folder of the message as one word
#: (:func:`~mail_imap_mcp.query.fts5.place_token`), so that a search of some folders is one MATCH.
_FTS_COLUMNS = (*TEXT_COLUMNS, PLACE_COLUMN)
_FTS_VALUES = ", ".join("?" for _ in _FTS_COLUMNS)

_SCHEMA = f"""
CREATE TABLE folders(
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, uidvalidity INTEGER NOT NULL,
    uidnext INTEGER NOT NULL, highestmodseq INTEGER NOT NULL, messages INTEGER NOT NULL,
    complete INTEGER NOT NULL);
CREATE TABLE messages(
    id INTEGER PRIMARY KEY, folder INTEGER NOT NULL REFERENCES folders(id), uid INTEGER NOT NULL,
    sent INTEGER NOT NULL, arrival_day INTEGER NOT NULL, size INTEGER NOT NULL,
    flag_bits INTEGER NOT NULL, keywords TEXT NOT NULL, has_attachment INTEGER NOT NULL,
    filenames TEXT NOT NULL, doc BLOB NOT NULL,
    global_id INTEGER, -- X-GM-MSGID: Gmail's id of a message in every folder (one row per message)
    labels TEXT NOT NULL DEFAULT '', -- X-GM-LABELS, one a line
    label_keys TEXT NOT NULL DEFAULT '', -- the labels as label: compares them (query.fts5.label_key)
    attachments_read INTEGER NOT NULL DEFAULT 0, -- with index_attachments (schema 6)
    arrival INTEGER NOT NULL, -- INTERNALDATE, seconds since the epoch (schema 7)
    UNIQUE(folder, uid));
CREATE INDEX messages_sent ON messages(sent);
CREATE INDEX messages_arrival ON messages(arrival);
CREATE INDEX messages_global_id ON messages(global_id) WHERE global_id IS NOT NULL;
CREATE VIRTUAL TABLE fts USING fts5({", ".join(_FTS_COLUMNS)}, content='',
    tokenize='unicode61 remove_diacritics 2');
PRAGMA application_id = {APPLICATION_ID};
PRAGMA user_version = {SCHEMA_VERSION};
"""


class SqliteStore:
    """:class:`~mail_imap_mcp.index.store.IndexStore` in one SQLite file."""

    def __init__(self, path: Path, *, shards: int = SHARDS) -> None:
        self.path = path
        try:
            self._db = sqlite3.connect(
                path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            self._prepare()
        except sqlite3.DatabaseError as exc:
            self._close_quietly()
            raise open_failure(path, exc) from exc
        except IndexWriteFailed:  # the schema could not be written (IndexBusy: another process's lock)
            self._close_quietly()
            raise
        self._ranker = Ranker(ReadConnections(path, BUSY_TIMEOUT_S), shards)

    def _prepare(self) -> None:
        db = self._db
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        application_id = db.execute("PRAGMA application_id").fetchone()[0]
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if application_id == 0 and version == 0:
            tables = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if tables:
                raise IndexUnusable(f"{self.path} is a database of something else")
            with self._transaction():
                if db.execute("PRAGMA application_id").fetchone()[0] == 0:  # not made meanwhile
                    for statement in _SCHEMA.split(";\n"):
                        if statement.strip():
                            db.execute(statement)
            return
        if application_id != APPLICATION_ID:
            raise IndexUnusable(f"{self.path} is a database of something else")
        if version != SCHEMA_VERSION:
            raise IndexUnusable(f"{self.path} is an index of schema {version}, not {SCHEMA_VERSION}")
        db.execute("SELECT count(*) FROM folders").fetchone()

    def _close_quietly(self) -> None:
        with contextlib.suppress(sqlite3.Error, AttributeError):
            self._db.close()

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)

    def folders(self) -> dict[str, FolderState]:
        rows = self._db.execute(
            "SELECT name, uidvalidity, uidnext, highestmodseq, messages, complete FROM folders"
        ).fetchall()
        return {row[0]: FolderState(row[0], row[1], row[2], row[3], row[4], bool(row[5])) for row in rows}

    def _folder_id(self, name: str) -> int | None:
        row = self._db.execute("SELECT id FROM folders WHERE name = ?", (name,)).fetchone()
        return None if row is None else int(row[0])

    def start_folder(self, name: str, uidvalidity: int) -> FolderState:
        with self._transaction():
            known = self.folders().get(name)
            if known is not None and known.uidvalidity == uidvalidity:
                return known
            if known is not None:
                self._drop(name)
            fresh = FolderState(name, uidvalidity)
            self._save(fresh)
            return fresh

    def _save(self, state: FolderState) -> int:
        self._db.execute(
            "INSERT INTO folders(name, uidvalidity, uidnext, highestmodseq, messages, complete) "
            "VALUES(?, ?, ?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET uidvalidity = excluded.uidvalidity, "
            "uidnext = excluded.uidnext, highestmodseq = excluded.highestmodseq, "
            "messages = excluded.messages, complete = excluded.complete",
            (
                state.name,
                state.uidvalidity,
                state.uidnext,
                state.highestmodseq,
                state.messages,
                state.complete,
            ),
        )
        folder = self._folder_id(state.name)
        assert folder is not None
        return folder

    def _forget(self, row_id: int, folder: int, doc: bytes) -> None:
        """Take a message's terms out of the FTS5 table (a contentless table is told the old text)."""
        self._db.execute(
            f"INSERT INTO fts(fts, rowid, {', '.join(_FTS_COLUMNS)}) VALUES('delete', ?, {_FTS_VALUES})",
            (row_id, *unpack_texts(doc), place_token(folder)),
        )
        self._db.execute("DELETE FROM messages WHERE id = ?", (row_id,))

    def _free_id(self, sent: int) -> int:
        """A row id in the order of sent dates (:data:`IDS_PER_SECOND` per second), so that FTS5, which
        walks its matches by row id, walks them by date: the newest matches first without a sort."""
        base = max(sent, 0) * IDS_PER_SECOND
        row = self._db.execute(
            "SELECT max(id) FROM messages WHERE id BETWEEN ? AND ?", (base, base + IDS_PER_SECOND - 1)
        ).fetchone()
        candidate = base if row[0] is None else row[0] + 1
        while self._db.execute("SELECT 1 FROM messages WHERE id = ?", (candidate,)).fetchone():
            candidate += 1  # more than IDS_PER_SECOND messages sent in one second: the next free one
        return int(candidate)

    def put(self, state: FolderState, messages: Sequence[IndexedMessage]) -> None:
        with self._transaction():
            folder = self._save(state)
            for message in messages:
                old = self._db.execute(
                    "SELECT id, doc FROM messages WHERE folder = ? AND uid = ?", (folder, message.uid)
                ).fetchone()
                if old is not None:
                    self._forget(old[0], folder, old[1])
                if message.global_id is not None:  # shown in another folder before: one row, this one
                    for row_id, shown_in, doc in self._db.execute(
                        "SELECT id, folder, doc FROM messages WHERE global_id = ?", (message.global_id,)
                    ).fetchall():
                        self._forget(row_id, shown_in, doc)
                bits, keywords = flag_bits(message.flags)
                row_id = self._free_id(message.sent)
                self._db.execute(
                    "INSERT INTO messages(id, folder, uid, sent, arrival_day, size, flag_bits, keywords, "
                    "has_attachment, filenames, doc, global_id, labels, label_keys, attachments_read, arrival) "
                    "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        row_id,
                        folder,
                        message.uid,
                        message.sent,
                        message.arrival_day,
                        message.size,
                        bits,
                        keywords,
                        message.has_attachment,
                        "\n".join(message.filenames),
                        pack_texts(message.texts),
                        message.global_id,
                        "\n".join(message.labels),
                        label_keys(message.labels),
                        message.attachments_read,
                        message.arrival,
                    ),
                )
                self._db.execute(
                    f"INSERT INTO fts(rowid, {', '.join(_FTS_COLUMNS)}) VALUES(?, {_FTS_VALUES})",
                    (row_id, *message.texts, place_token(folder)),
                )
            self._db.execute(
                "UPDATE folders SET messages = (SELECT count(*) FROM messages WHERE folder = ?) WHERE id = ?",
                (folder, folder),
            )

    def update(
        self,
        state: FolderState,
        *,
        flags: dict[int, tuple[str, ...]],
        removed: Iterable[int],
        labels: dict[int, tuple[str, ...]] | None = None,
    ) -> None:
        with self._transaction():
            folder = self._save(state)
            for uid, names in (labels or {}).items():
                self._db.execute(
                    "UPDATE messages SET labels = ?, label_keys = ? WHERE folder = ? AND uid = ?",
                    ("\n".join(names), label_keys(names), folder, uid),
                )
            for uid, now in flags.items():
                bits, keywords = flag_bits(now)
                self._db.execute(
                    "UPDATE messages SET flag_bits = ?, keywords = ? WHERE folder = ? AND uid = ?",
                    (bits, keywords, folder, uid),
                )
            for uid in removed:
                old = self._db.execute(
                    "SELECT id, doc FROM messages WHERE folder = ? AND uid = ?", (folder, uid)
                ).fetchone()
                if old is not None:
                    self._forget(old[0], folder, old[1])
            self._db.execute(
                "UPDATE folders SET messages = (SELECT count(*) FROM messages WHERE folder = ?) WHERE id = ?",
                (folder, folder),
            )

    def uids(self, folder: str) -> list[int]:
        rows = self._db.execute(
            "SELECT uid FROM messages WHERE folder = (SELECT id FROM folders WHERE name = ?) ORDER BY uid",
            (folder,),
        )
        return [row[0] for row in rows]

    def unread_attachments(self, folder: str) -> list[int]:
        unread = "has_attachment AND NOT attachments_read"
        query = (
            f"SELECT uid FROM messages WHERE folder = (SELECT id FROM folders WHERE name = ?) AND {unread}"
        )
        return [row[0] for row in self._db.execute(query + " ORDER BY uid DESC", (folder,))]

    def flags_of(self, folder: str) -> dict[int, tuple[int, str]]:
        rows = self._db.execute(
            "SELECT uid, flag_bits, keywords FROM messages WHERE folder = (SELECT id FROM folders WHERE name = ?)",
            (folder,),
        )
        return {row[0]: (row[1], row[2]) for row in rows}

    def _drop(self, name: str) -> None:
        folder = self._folder_id(name)
        if folder is None:
            return
        for row_id, doc in self._db.execute(
            "SELECT id, doc FROM messages WHERE folder = ?", (folder,)
        ).fetchall():
            self._forget(row_id, folder, doc)
        self._db.execute("DELETE FROM folders WHERE id = ?", (folder,))

    def drop_folder(self, name: str) -> None:
        with self._transaction():
            self._drop(name)

    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM messages").fetchone()[0])

    def search(
        self, query: CompiledQuery, *, folders: Sequence[str], order: Order, limit: int, offset: int
    ) -> HitPage:
        task = self._page_task(query, list(folders), order, limit, offset)
        return PendingSearch(lambda: self._ranker.run(task)).result()

    def start_search(
        self, query: CompiledQuery, *, folders: Sequence[str], order: Order, limit: int, offset: int
    ) -> PendingSearch:
        """Start :meth:`search` in a thread on a read connection and return at once (the search's
        freshness round trip runs meanwhile); :meth:`PendingSearch.result` is the page."""
        started = self._ranker.submit(self._page_task(query, list(folders), order, limit, offset))
        return PendingSearch(started.result, started.cancel)

    def _page_task(
        self, query: CompiledQuery, folders: list[str], order: Order, limit: int, offset: int
    ) -> Callable[[sqlite3.Connection], HitPage]:
        try:
            stored = self._db.execute("SELECT name, id, messages FROM folders").fetchall()
        except sqlite3.DatabaseError as exc:
            raise IndexUnusable(f"{self.path}: {exc}") from exc
        return page_task(stored, self._ranker, query, folders, order, limit, offset)

    def wait_for_writers(self, seconds: float) -> None:
        self._db.execute(f"PRAGMA busy_timeout = {max(int(seconds * 1000), 1)}")

    def close(self) -> None:
        self._ranker.close()
        self._close_quietly()


class PendingSearch:
    """A search under way (:meth:`SqliteStore.start_search`)."""

    def __init__(self, finish: Callable[[], HitPage], cancel: Callable[[], object] | None = None) -> None:
        self._finish = finish
        self._cancel = cancel

    def result(self) -> HitPage:
        """The page (waiting for it); an unreadable file is :class:`IndexUnusable`."""
        try:
            return self._finish()
        except sqlite3.DatabaseError as exc:
            raise IndexUnusable(str(exc)) from exc

    def cancel(self) -> None:
        """Not needed after all (the index changed before it was taken)."""
        if self._cancel is not None:
            self._cancel()


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on an exception); nested use joins the open one.
    A write SQLite refuses (disk full, read-only) is :class:`IndexWriteFailed`; the write lock held by
    another process longer than the connection waits (:meth:`SqliteStore.wait_for_writers`) is
    :class:`IndexBusy`."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._outer = False

    def __enter__(self) -> None:
        if not self._db.in_transaction:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as failure:
                if busy(failure):
                    raise IndexBusy(str(failure)) from failure
                raise
            self._outer = True

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if not self._outer:
            return
        if kind is None:
            try:
                self._db.execute("COMMIT")
                return
            except sqlite3.OperationalError as failure:
                self._db.execute("ROLLBACK")
                raise IndexWriteFailed(str(failure)) from failure
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")
        if isinstance(exc, sqlite3.OperationalError) and busy(exc):
            raise IndexBusy(str(exc)) from exc
        if isinstance(exc, sqlite3.OperationalError) and write_failure(exc):
            raise IndexWriteFailed(str(exc)) from exc

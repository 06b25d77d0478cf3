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
import json
import sqlite3
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path

from mail_imap_mcp.index.store import (
    COLUMN_WEIGHTS,
    TEXT_COLUMNS,
    CompiledQuery,
    FolderState,
    Hit,
    HitPage,
    IndexBusy,
    IndexedMessage,
    IndexUnusable,
    IndexWriteFailed,
    Order,
    flag_bits,
    flag_names,
)
from mail_imap_mcp.query.fts5 import label_keys

#: "MIMX": marks a database as this index (``PRAGMA application_id``).
APPLICATION_ID = 0x4D494D58
SCHEMA_VERSION = 4
#: Row ids per second of sent date (a row id is the sent time times this, plus a counter).
IDS_PER_SECOND = 4096
#: A text query matching more messages than this is ranked among its newest this many matches: ranking
#: costs a few microseconds a match, and a word in most messages says little of relevance anyway.
RANKED_MATCHES = 2_000
#: How long a writer waits for another process's transaction before it gives up.
BUSY_TIMEOUT_S = 30.0

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
    UNIQUE(folder, uid));
CREATE INDEX messages_sent ON messages(sent);
CREATE INDEX messages_global_id ON messages(global_id) WHERE global_id IS NOT NULL;
CREATE VIRTUAL TABLE fts USING fts5({", ".join(TEXT_COLUMNS)}, content='',
    tokenize='unicode61 remove_diacritics 2');
PRAGMA application_id = {APPLICATION_ID};
PRAGMA user_version = {SCHEMA_VERSION};
"""


def _pack(texts: Sequence[str]) -> bytes:
    return zlib.compress(json.dumps(list(texts), ensure_ascii=False).encode(), 6)


def _unpack(doc: bytes) -> list[str]:
    texts: list[str] = json.loads(zlib.decompress(doc))
    return texts


class SqliteStore:
    """:class:`~mail_imap_mcp.index.store.IndexStore` in one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._db = sqlite3.connect(
                path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            self._prepare()
        except sqlite3.DatabaseError as exc:
            self._close_quietly()
            raise IndexUnusable(f"{path}: {exc}") from exc

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

    def _forget(self, row_id: int, doc: bytes) -> None:
        """Take a message's terms out of the FTS5 table (a contentless table is told the old text)."""
        texts = _unpack(doc)
        placeholders = ", ".join("?" for _ in TEXT_COLUMNS)
        self._db.execute(
            f"INSERT INTO fts(fts, rowid, {', '.join(TEXT_COLUMNS)}) VALUES('delete', ?, {placeholders})",
            (row_id, *texts),
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
        columns = ", ".join(TEXT_COLUMNS)
        placeholders = ", ".join("?" for _ in TEXT_COLUMNS)
        with self._transaction():
            folder = self._save(state)
            for message in messages:
                old = self._db.execute(
                    "SELECT id, doc FROM messages WHERE folder = ? AND uid = ?", (folder, message.uid)
                ).fetchone()
                if old is not None:
                    self._forget(old[0], old[1])
                if message.global_id is not None:  # shown in another folder before: one row, this one
                    for row_id, doc in self._db.execute(
                        "SELECT id, doc FROM messages WHERE global_id = ?", (message.global_id,)
                    ).fetchall():
                        self._forget(row_id, doc)
                bits, keywords = flag_bits(message.flags)
                row_id = self._free_id(message.sent)
                self._db.execute(
                    "INSERT INTO messages(id, folder, uid, sent, arrival_day, size, flag_bits, keywords, "
                    "has_attachment, filenames, doc, global_id, labels, label_keys) "
                    "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                        _pack(message.texts),
                        message.global_id,
                        "\n".join(message.labels),
                        label_keys(message.labels),
                    ),
                )
                self._db.execute(
                    f"INSERT INTO fts(rowid, {columns}) VALUES(?, {placeholders})",
                    (row_id, *message.texts),
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
                    self._forget(old[0], old[1])
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
            self._forget(row_id, doc)
        self._db.execute("DELETE FROM folders WHERE id = ?", (folder,))

    def drop_folder(self, name: str) -> None:
        with self._transaction():
            self._drop(name)

    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM messages").fetchone()[0])

    def search(
        self, query: CompiledQuery, *, folders: Sequence[str], order: Order, limit: int, offset: int
    ) -> HitPage:
        if not folders:
            return HitPage([], 0)
        if query.match is not None and query.where == "1" and set(folders) >= set(self.folders()):
            return self._everywhere(query.match, order, limit, offset, list(folders))
        in_folders = f"f.name IN ({', '.join('?' for _ in folders)})"
        params: list[object] = []
        if query.match is not None:
            source = "fts JOIN messages m ON m.id = fts.rowid JOIN folders f ON f.id = m.folder"
            condition = f"fts MATCH ? AND {in_folders} AND ({query.where})"
            params = [query.match, *folders, *query.params]
            rank = _BM25
        else:
            source = "messages m JOIN folders f ON f.id = m.folder"
            condition = f"{in_folders} AND ({query.where})"
            params = [*folders, *query.params]
            rank = "0.0"
        ordering = f"{rank}, m.sent DESC, m.id DESC" if order == "relevance" else "m.sent DESC, m.id DESC"
        try:
            counted = self._db.execute(f"SELECT count(*) FROM {source} WHERE {condition}", params)
            total = int(counted.fetchone()[0])
            rows = self._db.execute(
                f"SELECT {_HIT_COLUMNS.format(rank=rank)} FROM {source} "
                f"WHERE {condition} ORDER BY {ordering} LIMIT ? OFFSET ?",
                [*params, limit, offset],
            ).fetchall()
        except sqlite3.DatabaseError as exc:
            raise IndexUnusable(f"{self.path}: {exc}") from exc
        return HitPage([_hit(row) for row in rows], total, list(folders))

    def _everywhere(self, match: str, order: Order, limit: int, offset: int, folders: list[str]) -> HitPage:
        """A text query over every folder: FTS5 ranks (or, by date, walks its row ids, which follow sent
        dates) and counts its own matches alone (every row of the FTS5 table is a message of a folder),
        and only the page's rows are joined. Beyond :data:`RANKED_MATCHES` matches, the newest that many
        are ranked."""
        try:
            total = int(
                self._db.execute("SELECT count(*) FROM fts WHERE fts MATCH ?", (match,)).fetchone()[0]
            )
            ranked_among = None
            if order == "date":
                inner = "SELECT rowid, 0.0 AS rank FROM fts WHERE fts MATCH ? ORDER BY rowid DESC LIMIT ? OFFSET ?"
                params: tuple[object, ...] = (match, limit, offset)
                ordering = "m.id DESC"
            else:
                floor = 0
                if total > RANKED_MATCHES:
                    ranked_among = RANKED_MATCHES
                    found = self._db.execute(
                        "SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
                        (match, RANKED_MATCHES - 1),
                    ).fetchone()
                    floor = int(found[0]) if found else 0
                inner = (
                    f"SELECT rowid, {_BM25} AS rank FROM fts WHERE fts MATCH ? AND rowid >= ? "
                    "ORDER BY rank LIMIT ? OFFSET ?"
                )
                params = (match, floor, limit, offset)
                ordering = "top.rank, m.sent DESC, m.id DESC"
            rows = self._db.execute(
                f"SELECT {_HIT_COLUMNS.format(rank='top.rank')} FROM ({inner}) AS top "
                f"JOIN messages m ON m.id = top.rowid JOIN folders f ON f.id = m.folder ORDER BY {ordering}",
                params,
            ).fetchall()
        except sqlite3.DatabaseError as exc:
            raise IndexUnusable(f"{self.path}: {exc}") from exc
        return HitPage([_hit(row) for row in rows], total, folders, ranked_among)

    def wait_for_writers(self, seconds: float) -> None:
        self._db.execute(f"PRAGMA busy_timeout = {max(int(seconds * 1000), 1)}")

    def close(self) -> None:
        self._close_quietly()


#: BM25 with the columns' weights, called as a function (as FTS5's ``rank`` column it took twice as long).
_BM25 = f"bm25(fts, {', '.join(str(w) for w in COLUMN_WEIGHTS)})"
_HIT_COLUMNS = (
    "f.name, f.uidvalidity, m.uid, {rank}, m.sent, m.doc, m.flag_bits, m.keywords, m.size, m.has_attachment, "
    "m.labels"
)


def _hit(row: tuple[object, ...]) -> Hit:
    name, uidvalidity, uid, rank, sent, doc, bits, keywords, size, attached, labels = row
    assert isinstance(doc, bytes) and isinstance(bits, int) and isinstance(keywords, str)
    assert isinstance(labels, str)
    flags = (*flag_names(bits), *keywords.split())
    return Hit(
        str(name),
        int(uidvalidity),  # type: ignore[call-overload]
        int(uid),  # type: ignore[call-overload]
        float(rank),  # type: ignore[arg-type]
        int(sent),  # type: ignore[call-overload]
        tuple(_unpack(doc)),
        flags,
        int(size),  # type: ignore[call-overload]
        bool(attached),
        tuple(labels.split("\n")) if labels else (),
    )


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
                if _busy(failure):
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
        if isinstance(exc, sqlite3.OperationalError) and _busy(exc):
            raise IndexBusy(str(exc)) from exc
        if isinstance(exc, sqlite3.OperationalError) and _write_failure(exc):
            raise IndexWriteFailed(str(exc)) from exc


def _busy(exc: sqlite3.OperationalError) -> bool:
    words = str(exc).lower()
    return "locked" in words or "busy" in words


def _write_failure(exc: sqlite3.OperationalError) -> bool:
    words = str(exc).lower()
    return any(word in words for word in ("full", "readonly", "read-only", "disk i/o"))

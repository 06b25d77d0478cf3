"""The store in one SQLite file (WAL) under the state directory, shared by every process of the machine
that is given the same file, and kept across restarts.

It holds what must outlive a process where no Redis is configured: the record of each send (``sending``,
``sent``, ``unknown``), the hourly count of sends and the mark of a draft waiting on an approval page
(``services/send_draft.py``). Each call is one ``BEGIN IMMEDIATE`` transaction, so of two processes
adding one key only one succeeds; times are wall-clock (:func:`time.time`), the one clock every process
and a restart agree on. Publish/subscribe reach this process's subscribers only (``shared`` is False:
instances on other machines see nothing of it). Every failure to open or use the file leaves this module
as :class:`StateUnavailable` (``setting``: ``state_dir``), so a server whose state directory cannot be
written still starts, reads and searches, and only what needs the record is refused.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from mail_imap_mcp.state.sqlite_wal import use_wal
from mail_imap_mcp.state.store import MemoryStore, StateUnavailable, Subscription

#: The file's name in the state directory.
FILE_NAME = "records.sqlite3"
#: How long a call waits for another process's transaction before it fails as unavailable.
BUSY_TIMEOUT_S = 10.0
#: Expired rows are removed after this many writes (and when the file is opened).
PURGE_EVERY = 200

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, value BLOB NOT NULL, expires REAL NOT NULL)"
)


class FileStore:
    """The :class:`~mail_imap_mcp.state.Store` in the SQLite file ``path`` (made 0600, its directory
    0700, on first use); thread-safe."""

    shared = False

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self._clock = clock
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._writes = 0
        self._local = MemoryStore()  # publish/subscribe of this process

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not self.path.exists():
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        try:
            use_wal(db, BUSY_TIMEOUT_S)  # two processes opening a new file at once both open it
            db.execute("PRAGMA synchronous=FULL")  # a record must survive a crash of the machine too
            db.execute(_SCHEMA)
            db.execute("DELETE FROM entries WHERE expires <= ?", (self._clock(),))
        except BaseException:
            db.close()
            raise
        return db

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """The file's connection inside ``BEGIN IMMEDIATE`` (the one writer of the machine until it ends)."""
        with self._lock:
            try:
                if self._db is None:
                    self._db = self._open()
                db = self._db
                db.execute("BEGIN IMMEDIATE")
                try:
                    yield db
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
            except (sqlite3.Error, OSError) as exc:
                raise StateUnavailable(f"{self.path} cannot be used ({exc})", setting="state_dir") from None

    def _live(self, db: sqlite3.Connection, key: str) -> bytes | None:
        row = db.execute("SELECT value, expires FROM entries WHERE key = ?", (key,)).fetchone()
        if row is None or row[1] <= self._clock():
            return None
        return bytes(row[0])

    def _put(self, db: sqlite3.Connection, key: str, value: bytes, expires: float) -> None:
        db.execute(
            "INSERT OR REPLACE INTO entries (key, value, expires) VALUES (?, ?, ?)", (key, value, expires)
        )
        self._writes += 1
        if self._writes % PURGE_EVERY == 0:
            db.execute("DELETE FROM entries WHERE expires <= ?", (self._clock(),))

    def get(self, key: str) -> bytes | None:
        with self._transaction() as db:
            return self._live(db, key)

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        with self._transaction() as db:  # one transaction: the values as they were at one moment
            return [self._live(db, key) for key in keys]

    def set(self, key: str, value: bytes, ttl_s: float) -> None:
        with self._transaction() as db:
            self._put(db, key, value, self._clock() + ttl_s)

    def add(self, key: str, value: bytes, ttl_s: float) -> bool:
        with self._transaction() as db:
            if self._live(db, key) is not None:
                return False
            self._put(db, key, value, self._clock() + ttl_s)
            return True

    def take(self, key: str) -> bytes | None:
        with self._transaction() as db:
            value = self._live(db, key)
            db.execute("DELETE FROM entries WHERE key = ?", (key,))
            return value

    def renew(self, key: str, value: bytes, ttl_s: float) -> bool:
        with self._transaction() as db:
            if self._live(db, key) != value:
                return False
            self._put(db, key, value, self._clock() + ttl_s)
            return True

    def release(self, key: str, value: bytes) -> None:
        with self._transaction() as db:
            if self._live(db, key) == value:
                db.execute("DELETE FROM entries WHERE key = ?", (key,))

    def incr(self, key: str, ttl_s: float, by: int = 1) -> int:
        with self._transaction() as db:
            row = db.execute("SELECT value, expires FROM entries WHERE key = ?", (key,)).fetchone()
            live = row is not None and row[1] > self._clock()
            count = int(bytes(row[0]) if live else b"0") + by
            self._put(db, key, str(count).encode(), row[1] if live else self._clock() + ttl_s)
            return count

    def mark_used(self, key: str, ttl_s: float, *, owner: str = "") -> bool:
        # As in Redis: no count per owner; the file holds what the marks' lifetimes allow.
        return self.add(key, b"1", ttl_s)

    def delete(self, key: str) -> None:
        with self._transaction() as db:
            db.execute("DELETE FROM entries WHERE key = ?", (key,))

    def publish(self, channel: str, message: bytes) -> None:
        self._local.publish(channel, message)

    def subscribe(self, channel: str, deliver: Callable[[bytes], None]) -> Subscription:
        return self._local.subscribe(channel, deliver)

    def close(self) -> None:
        self._local.close()
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

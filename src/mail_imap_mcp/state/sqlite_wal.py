"""Write-ahead logging for a SQLite file that several connections may open at once (the state file of
every process of a machine, an index file opened by a first search beside its background sync).

Switching a file to WAL takes the file's exclusive lock, for which SQLite does not wait (its busy timeout
is not applied): of two connections opening a new file at the same moment, one was told "database is
locked" at once. It tries again here, until one of them switched it.
"""

from __future__ import annotations

import sqlite3
import time

#: The pause between two tries.
RETRY_S = 0.01


def locked(exc: sqlite3.Error) -> bool:
    """Another connection holds a lock this one needed (SQLite's BUSY or LOCKED, any extended code)."""
    code = getattr(exc, "sqlite_errorcode", None)  # None on an error not raised by SQLite itself
    return code is not None and (code & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def use_wal(db: sqlite3.Connection, wait_s: float) -> None:
    """Switch ``db``'s file to WAL (the file keeps it), trying again for up to ``wait_s`` while another
    connection holds the lock; the last refusal leaves as it came."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if not locked(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(RETRY_S)

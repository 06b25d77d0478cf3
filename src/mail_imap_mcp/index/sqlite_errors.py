"""What an error of SQLite means for the index: another process's lock, a write refused, or a file
that is no index."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from mail_imap_mcp.index.store import IndexBusy, IndexUnusable


def busy(exc: sqlite3.OperationalError) -> bool:
    """Another connection holds the lock this one waited for."""
    return any(word in str(exc).lower() for word in ("locked", "busy"))


def write_failure(exc: sqlite3.OperationalError) -> bool:
    """The write was refused: a full disk, a read-only file, an I/O error."""
    return any(word in str(exc).lower() for word in ("full", "readonly", "read-only", "disk i/o"))


def open_failure(path: Path, exc: sqlite3.DatabaseError) -> IndexUnusable | IndexBusy:
    """Why the file at ``path`` could not be opened as the index: locked by another process while its
    schema was set (:class:`IndexBusy`: try again later, the file is fine), else no index SQLite can
    read (:class:`IndexUnusable`: moved aside)."""
    if isinstance(exc, sqlite3.OperationalError) and busy(exc):
        return IndexBusy(f"{path}: {exc}")
    return IndexUnusable(f"{path}: {exc}")

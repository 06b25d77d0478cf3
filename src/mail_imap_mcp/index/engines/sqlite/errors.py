"""What an error of SQLite means for the index: another process's lock (:class:`IndexBusy`: later), a
file whose pages are damaged or that is no database (:class:`IndexUnusable`: moved aside), or anything
else the file or its disk refused (:class:`IndexWriteFailed`: a full disk, an I/O error, a read-only
file; the file is kept and tried again). No error of SQLite leaves the store as it is."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from mail_imap_mcp.index.store import IndexBusy, IndexUnusable, IndexWriteFailed
from mail_imap_mcp.state.sqlite_wal import locked

#: SQLite's result codes of a file that is damaged or no database at all (its extended codes start so).
_DAMAGED = ("SQLITE_CORRUPT", "SQLITE_NOTADB")


def damaged(exc: sqlite3.Error) -> bool:
    """The file's pages cannot be read as a database (overwritten, truncated, another kind of file)."""
    return (exc.sqlite_errorname or "").startswith(_DAMAGED)


def failure_of(path: Path, exc: sqlite3.Error) -> IndexWriteFailed | IndexUnusable:
    """The index's error for ``exc`` of SQLite on the file at ``path``: :class:`IndexBusy` for another
    process's lock, :class:`IndexUnusable` for a damaged file, else :class:`IndexWriteFailed` (a full
    disk, an I/O error: never a reason to move a file aside)."""
    if locked(exc):  # another connection held the lock longer than this one waited
        return IndexBusy(f"{path}: {exc}")
    if damaged(exc):
        return IndexUnusable(f"{path} is damaged: {exc}")
    return IndexWriteFailed(f"{path}: {exc}")


class _HasPath(Protocol):
    path: Path


S = TypeVar("S", bound=_HasPath)
P = ParamSpec("P")
R = TypeVar("R")


def translated(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """A store's ``method`` whose errors of SQLite leave it as the index's (:func:`failure_of`)."""

    @functools.wraps(method)
    def run(store: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(store, *args, **kwargs)
        except sqlite3.Error as exc:
            raise failure_of(store.path, exc) from exc

    return run


class Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on an exception); nested use joins the open one.
    An error of SQLite inside it leaves as :func:`failure_of` says (the write lock held by another
    process longer than the connection waits is :class:`IndexBusy`; a full disk
    :class:`IndexWriteFailed`), the transaction rolled back where SQLite had not already."""

    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self._db = db
        self._path = path
        self._outer = False

    def __enter__(self) -> None:
        if not self._db.in_transaction:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as failure:
                raise failure_of(self._path, failure) from failure
            self._outer = True

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if not self._outer:
            return
        try:
            if kind is None:
                self._db.execute("COMMIT")
                return
        except sqlite3.Error as failure:
            exc = failure
        # A COMMIT or statement that failed on a full disk may have ended the transaction already.
        if self._db.in_transaction:
            try:
                self._db.execute("ROLLBACK")
            except sqlite3.Error as failure:
                raise failure_of(self._path, failure) from failure
        if isinstance(exc, sqlite3.Error):
            raise failure_of(self._path, exc) from exc

"""The SQLite engine: one FTS5 file per index (:mod:`.store`) under ``index_dir``
(:mod:`.location`), its queries compiled by :mod:`.query`, its syncs taking turns on one lock per
file in a process and SQLite's own locking between processes, its pages by offset (the places of a
first page kept for the later ones, :class:`~.store.PageAsk`)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.index.engine import IndexLocation, Opened
from mail_imap_mcp.index.engines.sqlite.location import (
    account_identity,
    discard_aside,
    drop_index,
    identity_index_path,
    index_path,
    move_aside,
    open_index,
    take_over,
    user_index_path,
    user_index_paths,
)
from mail_imap_mcp.index.engines.sqlite.query import compile_fts5
from mail_imap_mcp.query.tree import Query

_file_locks: dict[Path, threading.RLock] = {}
_file_locks_guard = threading.Lock()


def file_lock(path: Path) -> threading.RLock:
    """The one lock of the index file at ``path`` in this process, whichever index opens it: an index
    closed while its sync still ran and the one made again on the same file take turns, never sync the
    same folder at once."""
    key = path.expanduser().resolve()
    with _file_locks_guard:
        return _file_locks.setdefault(key, threading.RLock())


@dataclass(frozen=True)
class SqliteLocation:
    """:class:`~.engine.IndexLocation` of one file; ``identity``: the account it must record
    (:func:`~.location.account_identity`; None: not checked); ``legacy``: where a release before kept it
    (taken over, :func:`~.location.take_over`)."""

    path: Path
    identity: str | None = None
    legacy: Path | None = None
    #: What lives beside the file and moves with it when it is taken over.
    companions: ClassVar[tuple[str, ...]] = ()

    @property
    def where(self) -> str:
        return str(self.path)

    def _take_over(self) -> None:
        if self.legacy is not None and self.identity is not None:
            take_over(self.legacy, self.path, self.identity, self.companions)

    def exists(self) -> bool:
        self._take_over()
        return self.path.exists()

    def open(self) -> Opened:
        self._take_over()
        return open_index(self.path, self.identity)

    def move_aside(self) -> str:
        return str(move_aside(self.path))

    def discard_aside(self) -> list[str]:
        return [str(path) for path in discard_aside(self.path, self.identity, self.legacy)]

    def drop(self) -> bool:
        self._take_over()
        return bool(drop_index(self.path))

    def lock(self) -> threading.RLock:
        return file_lock(self.path)


class SqliteEngine:
    """:class:`~.engine.IndexEngine` of SQLite files in ``index_dir`` (None: the platform's)."""

    name = "sqlite"
    shared = False

    def __init__(self, index_dir: Path | None) -> None:
        self.index_dir = index_dir

    def check(self, query: Query) -> None:
        compile_fts5(query)

    def location(self, account_id: str, account: AccountConfig, user: str | None = None) -> SqliteLocation:
        if user is not None:
            path = user_index_path(self.index_dir, account_id, user)
            return SqliteLocation(path, account_identity(account, path))
        # The identity a file of a release before records (named by the account id alone).
        legacy = index_path(self.index_dir, account_id)
        path = identity_index_path(self.index_dir, account_id, account)
        return SqliteLocation(path, account_identity(account, legacy), legacy)

    def user_locations(self, account_id: str) -> list[IndexLocation]:
        return [SqliteLocation(path) for path in user_index_paths(self.index_dir, account_id)]

    def close(self) -> None:
        """Nothing is held between searches (each index's store holds its own connections)."""

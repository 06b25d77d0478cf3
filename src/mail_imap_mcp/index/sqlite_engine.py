"""The SQLite engine: one FTS5 file per index (:mod:`.sqlite_store`) under ``index_dir``
(:mod:`.location`), its queries compiled by :mod:`.sqlite_query`, its syncs taking turns on one lock per
file in a process and SQLite's own locking between processes, its pages by offset (the places of a
first page kept for the later ones, :class:`~.store.PageAsk`)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.index.engine import IndexLocation, Opened
from mail_imap_mcp.index.location import (
    account_identity,
    drop_index,
    index_path,
    move_aside,
    open_index,
    user_index_path,
    user_index_paths,
)
from mail_imap_mcp.index.sqlite_query import compile_fts5
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
    (:func:`~.location.account_identity`; None: not checked)."""

    path: Path
    identity: str | None = None

    @property
    def where(self) -> str:
        return str(self.path)

    def exists(self) -> bool:
        return self.path.exists()

    def open(self) -> Opened:
        return open_index(self.path, self.identity)

    def move_aside(self) -> str:
        return str(move_aside(self.path))

    def drop(self) -> bool:
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
        path = (
            index_path(self.index_dir, account_id)
            if user is None
            else user_index_path(self.index_dir, account_id, user)
        )
        return SqliteLocation(path, account_identity(account, path))

    def user_locations(self, account_id: str) -> list[IndexLocation]:
        return [SqliteLocation(path) for path in user_index_paths(self.index_dir, account_id)]

    def close(self) -> None:
        """Nothing is held between searches (each index's store holds its own connections)."""

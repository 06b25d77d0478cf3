"""The index engine: chosen once in the application root (:func:`~.engines.open_engine`, from
``[index] index_engine``), it owns everything of the index that depends on how it is kept.

An engine owns its compiler from the query tree (:mod:`mail_imap_mcp.query.tree`: the store is handed the
tree, never a query language or SQL of the engine), its schema and migrations (an index of a schema it
cannot use is :class:`~.store.IndexUnusable`, saying so, and searches go to the server), its locking (one
sync of an index at a time) and its paging. It says where each account's index lives
(:meth:`IndexEngine.location`: a file for SQLite, a schema for PostgreSQL) and opens, moves aside and
drops it there. Nothing above ``index/`` names an engine.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.index.store import IndexStore
from mail_imap_mcp.query.tree import Query


@dataclass
class Opened:
    """An index store, and the warning of an index moved aside to make it (None: none was)."""

    store: IndexStore
    warning: str | None = None


class IndexLocation(Protocol):
    """Where one index lives in its engine (a file, a schema), and what is done to it there."""

    @property
    def where(self) -> str:
        """The index's place as an operator finds it (a path, ``schema`` in a database)."""
        ...

    def exists(self) -> bool:
        """Whether the index is there (never makes it: the state listing)."""
        ...

    def open(self) -> Opened:
        """The index, made where missing, moved aside and made again where unusable (a damaged file, one
        of another account); a write refused (:class:`~.store.IndexWriteFailed`) leaves it as it is."""
        ...

    def move_aside(self) -> str:
        """Keep the index as it is under another name (it is built again); where it went."""
        ...

    def discard_aside(self) -> list[str]:
        """Delete the copies of this index moved aside (a build of it completed); what was deleted."""
        ...

    def drop(self) -> bool:
        """Delete the index; whether there was one."""
        ...

    def lock(self) -> threading.RLock:
        """The one lock of this index in this process: its syncs take turns."""
        ...


class IndexEngine(Protocol):
    """The engine every index of this server is kept in."""

    #: ``sqlite``, ``sqlite+tantivy`` or ``postgresql`` (``[index] index_engine``).
    name: str
    #: Every instance of a team deployment opens the same indexes (one sync each: :mod:`.lease`).
    shared: bool

    def check(self, query: Query) -> None:
        """Raise :class:`~.store.Unsupported` when this engine cannot answer ``query`` (the server does)."""
        ...

    def location(self, account_id: str, account: AccountConfig, user: str | None = None) -> IndexLocation:
        """The index of ``account_id`` (``user``: that team user's own, ``index_per_user``)."""
        ...

    def user_locations(self, account_id: str) -> list[IndexLocation]:
        """The indexes of every team user of ``account_id`` this engine holds."""
        ...

    def close(self) -> None:
        """Release what the engine holds (connections)."""
        ...

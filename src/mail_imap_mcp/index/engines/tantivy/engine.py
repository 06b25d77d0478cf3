"""The ``sqlite+tantivy`` engine: the SQLite engine's files (:mod:`..sqlite.engine`: folders, flags,
labels, attachments, every order but relevance, counts, freshness, locking), each with a Tantivy index of
its text beside it (``<file>.tantivy``, :mod:`.text`) that ranks relevance pages
(:mod:`.store`). The Tantivy index is derived data: dropped with its file, and built again from
the file's texts whenever it does not match it."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import ClassVar

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.index.engine import IndexLocation, Opened
from mail_imap_mcp.index.engines.sqlite.engine import SqliteEngine, SqliteLocation
from mail_imap_mcp.index.engines.sqlite.location import open_index, user_index_paths
from mail_imap_mcp.index.engines.tantivy.store import TantivyStore
from mail_imap_mcp.index.engines.tantivy.text import text_dir


@dataclass(frozen=True)
class TantivyLocation(SqliteLocation):
    """An index file and the Tantivy index beside it (a file moved aside keeps it where it is: the new
    file's epoch differs, so it is rebuilt from the new file, by a store of this process that may hold
    it open)."""

    companions: ClassVar[tuple[str, ...]] = (".tantivy",)

    def open(self) -> Opened:
        self._take_over()
        return open_index(self.path, self.identity, TantivyStore)

    def drop(self) -> bool:
        self._take_over()
        shutil.rmtree(text_dir(self.path), ignore_errors=True)
        return super().drop()


class TantivyEngine(SqliteEngine):
    """:class:`~.engine.IndexEngine` of SQLite files in ``index_dir`` ranked by Tantivy."""

    name = "sqlite+tantivy"

    def location(self, account_id: str, account: AccountConfig, user: str | None = None) -> TantivyLocation:
        plain = super().location(account_id, account, user)
        return TantivyLocation(plain.path, plain.identity, plain.legacy)

    def user_locations(self, account_id: str) -> list[IndexLocation]:
        return [TantivyLocation(path) for path in user_index_paths(self.index_dir, account_id)]

"""The local search indexes' lifecycle: the engine chosen once, the server's own indexes started with it,
a team user's (``index_per_user``) started by their first search and closed with their scope."""

from __future__ import annotations

import logging
import threading
from functools import partial
from typing import TYPE_CHECKING

from mail_imap_mcp.app.scopes import UserScope, UserScopes
from mail_imap_mcp.config import AccountConfig, Config
from mail_imap_mcp.index.engines import open_engine
from mail_imap_mcp.state import ANONYMOUS, Caller, Store

if TYPE_CHECKING:
    from mail_imap_mcp.index.engine import IndexEngine, IndexLocation
    from mail_imap_mcp.index.runtime import AccountIndex

log = logging.getLogger("mail_imap_mcp")


class Indexes:
    """The index of each account that keeps one: of the server's own configuration (``index = true``),
    synced in the background from the start; a team user's only with ``index_per_user`` (each user's
    index their own, see :meth:`of`): off by default, as every user's mail would land on the server's
    disk."""

    def __init__(self, config: Config, store: Store, scopes: UserScopes) -> None:
        self._config = config
        self._store = store
        self._scopes = scopes
        self._engine_lock = threading.Lock()
        self._engine: IndexEngine | None = None
        if config.index.index_engine != "sqlite":  # its driver and settings are checked before the first call
            self._engine = open_engine(config)
        own = scopes.get(ANONYMOUS)
        #: The server's own indexes, by account id.
        self.own = {
            account_id: self._new(
                own, account_id, self.engine.location(account_id, own.config.accounts[account_id])
            )
            for account_id in own.config.accounts
            if config.indexed(account_id)
        }
        for index in self.own.values():
            index.start()

    @property
    def engine(self) -> IndexEngine:
        """The engine of every index (``[index] index_engine``), chosen once: SQLite's opened (and its modules
        loaded) at its first use, so a server whose accounts keep no index never loads them."""
        with self._engine_lock:
            if self._engine is None:
                self._engine = open_engine(self._config)
            return self._engine

    def close_engine(self) -> None:
        """Close the engine, if it was opened."""
        with self._engine_lock:
            if self._engine is not None:
                self._engine.close()

    def _new(self, scope: UserScope, account_id: str, location: IndexLocation) -> AccountIndex:
        # An index's machinery loads with the first index: a server whose accounts keep none never needs it.
        from mail_imap_mcp.index.attachments import AttachmentReading
        from mail_imap_mcp.index.lease import FOLDER_LEASE_MIN_TTL_S, FolderLeases, SyncLease
        from mail_imap_mcp.index.runtime import AccountIndex
        from mail_imap_mcp.meaning.model import model_for

        config = self._config
        # An index every instance shares is synced by the one holding its lease in the shared state.
        shared = self.engine.shared and self._store.shared
        return AccountIndex(
            account_id,
            location,
            config.server.index_text_bytes,
            partial(scope.pool.new_connection, account_id, enable_qresync=True),
            AttachmentReading.of(config.server) if config.attachments_indexed(account_id) else None,
            SyncLease(self._store, f"index-sync:{location.where}") if shared else None,
            FolderLeases(
                self._store,
                f"index-folder:{location.where}",
                max(FOLDER_LEASE_MIN_TTL_S, 2 * config.server.index_fresh_budget_ms / 1000),
            )
            if shared
            else None,
            push=config.server.index_fresh_from_push,
            meaning=partial(model_for, config) if config.meaning_indexed(account_id) else None,
            meaning_cpu_share=config.index.meaning_cpu_share,
        )

    def of(self, caller: Caller, account_id: str, *, start: bool = True) -> AccountIndex | None:
        """The local index of ``account_id`` as ``caller`` reaches it (None: it keeps none). A team
        user's, of an account with ``index_per_user``, is theirs alone: its own file, synced on their own
        connection, started here on first use (unless ``start`` is False) and closed with their scope. A
        shared mailbox (``users`` without ``per_user``: one mailbox on one login) is the server's own
        index of it, for each user it serves: they searched none, and ``about`` was ``unavailable``
        though that index kept its vectors (issue 89)."""
        who = caller.user
        if who == ANONYMOUS:
            return self.own.get(account_id)
        scope = self._scopes.get(who)
        account = scope.config.accounts.get(account_id)
        if account is not None and not account.index_per_user and not account.per_user:
            return self.own.get(account_id)
        if account is None or not account.index_per_user:
            return None
        with self._scopes.lock:
            index = scope.indexes.get(account_id)
            if index is None and start:
                location = self.engine.location(account_id, account, who)
                self._drop_as_spelled(caller, account_id, account)
                index = scope.indexes[account_id] = self._new(scope, account_id, location)
                index.start()
        return index

    def _drop_as_spelled(self, caller: Caller, account_id: str, account: AccountConfig) -> None:
        """Delete the caller's index file of ``account_id`` made by an earlier version under the tag of
        the name as their token spells it, before folding: nothing opens it any more."""
        spelled = caller.spelled_otherwise
        if spelled is None:
            return
        old = self.engine.location(account_id, account, spelled)
        if old.drop():
            log.info("deleted %s, a team user's index of %s under an unfolded name", old.where, account_id)

    def state(self, caller: Caller, account_id: str) -> str:
        """What ``imap_list_accounts`` says of ``caller``'s index of ``account_id``."""
        index = self.of(caller, account_id, start=False)
        if index is not None:
            meaning = index.meaning  # while its vectors are made: how far
            if index.ready and meaning is not None and meaning.counts is not None and meaning.counts.partial:
                return f"{index.status.words()}; search by meaning {meaning.words()}"
            return index.status.words()
        account = self._scopes.get(caller.user).config.accounts.get(account_id)
        waiting = caller.user != ANONYMOUS and account is not None and account.index_per_user
        return "not started (the first search starts it)" if waiting else "off"

    def meaning_state(self, caller: Caller, account_id: str) -> str | None:
        """How far ``caller``'s index of ``account_id`` has vectors (None: it keeps none)."""
        index = self.of(caller, account_id, start=False)
        status = None if index is None else index.meaning
        return None if status is None else status.words()

    def close_own(self) -> None:
        """Stop the server's own indexes (a team user's close with their scope)."""
        for index in self.own.values():
            index.close()

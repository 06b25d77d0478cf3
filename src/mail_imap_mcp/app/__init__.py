"""What every tool handler gets: the configuration, the account connections and the shared state,
as the user of the call sees them."""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NoReturn

from mail_imap_mcp.capabilities import WRITING
from mail_imap_mcp.config import AccountConfig, Config, ConfigError
from mail_imap_mcp.confirmation import ApprovalPage, ConfirmationGate
from mail_imap_mcp.envelope import ToolFailure
from mail_imap_mcp.envelope.user_call import UserCall
from mail_imap_mcp.imap import sealing
from mail_imap_mcp.imap.attachment_errors import AttachmentTooLarge, ModeUnsupported
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.draft_errors import DraftNotReplaceable
from mail_imap_mcp.imap.name_errors import MailboxNameRefused, MailboxNameUnknown
from mail_imap_mcp.imap.pool import ConnectionPool
from mail_imap_mcp.imap.watch import WatchHub, WatchSettings
from mail_imap_mcp.index.attachments import AttachmentReading
from mail_imap_mcp.index.engine import IndexEngine, IndexLocation
from mail_imap_mcp.index.engines import open_engine
from mail_imap_mcp.index.lease import FOLDER_LEASE_MIN_TTL_S, FolderLeases, SyncLease
from mail_imap_mcp.index.runtime import AccountIndex
from mail_imap_mcp.operations import OperationRegistry
from mail_imap_mcp.presentation import failures
from mail_imap_mcp.presentation.arguments import DEFAULT_ACCOUNT
from mail_imap_mcp.query import GmailOnly
from mail_imap_mcp.sign_in_flow import SignInAttempts
from mail_imap_mcp.state import (
    ANONYMOUS,
    ANONYMOUS_CALLER,
    Caller,
    MemoryStore,
    StateUnavailable,
    Store,
    lasting_store,
    open_store,
    shared_secret,
)

log = logging.getLogger("mail_imap_mcp")

#: The store's channel on which writes announce the accounts they changed.
CHANGES_CHANNEL = "mim:changes"
#: How long a position cursor's mailbox list is kept for its next pages (then they list again).
MAILBOX_LIST_TTL_S = 3600.0

#: At most this many team users' scopes are kept (their accounts, connections and watches); past it the
#: least recently used are closed, never one in use (see :meth:`AppContext.scope`).
MAX_USER_SCOPES = 256
#: A team user's scope unused this long is closed (its connections logged out); their next call makes
#: it again.
USER_SCOPE_IDLE_S = 900.0
#: Nor is a scope closed sooner than this after its last use, however many there are (a call that just
#: got it may not have sent its first command yet).
USER_SCOPE_MIN_IDLE_S = 60.0

#: How often at most the scopes are looked over for one to close, while no new one is made.
SCOPE_SWEEP_S = 1.0


def _no_call_to_ask(request: object) -> NoReturn:
    raise RuntimeError("only a tool call's view of the application asks its user")


@dataclass
class UserScope:
    """What one user reaches: their accounts (templates filled in for them), their connections,
    their mailbox watches and the local indexes of their accounts with ``index_per_user`` (started by
    their first search); ``last_used`` (monotonic seconds) and ``held`` (calls under way,
    :meth:`AppContext.holding`) say whether it may be closed."""

    config: Config
    pool: ConnectionPool
    watches: WatchHub
    last_used: float = 0.0
    held: int = 0
    indexes: dict[str, AccountIndex] = field(default_factory=dict)

    def in_use(self) -> bool:
        """A call holds it, a connection is running a command, or a mailbox is watched."""
        return self.held > 0 or self.pool.busy() or self.watches.watching()

    def close(self) -> None:
        for index in self.indexes.values():  # its sync stops, its connection logs out, its file closes
            index.close()
        self.watches.close()
        self.pool.close_all()


def accounts_of(config: Config, user: str) -> Config:
    """``config`` with only the accounts ``user`` may use, each as that user logs in to it."""
    accounts = {
        aid: account.for_user(user) for aid, account in config.accounts.items() if account.serves(user)
    }
    return config.model_copy(update={"accounts": accounts})


class AppContext:
    """Shared state of a running server, and each user's scope of it. A tool handler is given the
    application as its caller sees it (:meth:`for_caller`; ``caller``: the :class:`Caller` record):
    ``config``, ``pool`` and ``watches`` are that user's, ``full_config`` is everything configured.
    ``store``: the state instances share (:mod:`mail_imap_mcp.state`); ``lasting_store``: what must outlive
    the process and reach every process (a send's record; :func:`~mail_imap_mcp.state.lasting_store`)."""

    #: Whom this view of the application serves (the server's own: nobody in particular).
    caller: Caller = ANONYMOUS_CALLER
    #: How a call asks its user to approve something (``asking.Ask`` -> its answer, or the background
    #: operation waiting for the user): set on the per-call view by the tool registry (``asking.asker``).
    ask: Callable[[Any], Any] = staticmethod(_no_call_to_ask)
    #: The call being handled as asking its user goes (the registry's, for its per-call view).
    user_call: UserCall = UserCall()
    #: The sign-ins a call may start (:mod:`mail_imap_mcp.sign_in_flow`): a stdio server's; None over
    #: HTTP, where a call only says to run ``mail-imap-mcp login``.
    sign_ins: SignInAttempts | None = None

    def __init__(
        self,
        config: Config,
        pool: ConnectionPool,
        confirmations: ConfirmationGate | None = None,
        operations: OperationRegistry | None = None,
        *,
        store: Store | None = None,
        lasting_store: Store | None = None,
        pool_for: Callable[[dict[str, AccountConfig]], ConnectionPool] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.full_config = config
        #: The bounds of the team users' scopes (:data:`MAX_USER_SCOPES` and friends).
        self.max_user_scopes = MAX_USER_SCOPES
        self.user_scope_idle_s = USER_SCOPE_IDLE_S
        self.user_scope_min_idle_s = USER_SCOPE_MIN_IDLE_S
        self._clock = clock
        self._swept = [clock()]  # shared by every caller's view
        self.store: Store = store or MemoryStore()
        self.lasting_store: Store = lasting_store or self.store
        self.confirmations = confirmations or ConfirmationGate(store=self.store)
        #: Where the user approves a send when their client cannot ask (None: nowhere, sending refused).
        self.approval_page: ApprovalPage | None = None
        self.operations = operations or OperationRegistry(store=self.store)
        self._pool_for = pool_for or (lambda accounts: ConnectionPool(accounts))
        self._scopes: dict[str, UserScope] = {ANONYMOUS: self._scope_of(accounts_of(config, ANONYMOUS), pool)}
        self._lock = threading.Lock()
        # The local search index of each account of the server's own configuration that keeps one
        # (index = true), synced in the background. A team user's accounts are indexed only with
        # index_per_user (each user's index of their own, see index_of): off by default, as every user's
        # mail would land on the server's disk.
        own = self._scopes[ANONYMOUS]
        #: The engine of every index (``[index] index_engine``), chosen here once.
        self.index_engine: IndexEngine = open_engine(config)
        self.indexes = {
            account_id: self._new_index(
                own, account_id, self.index_engine.location(account_id, own.config.accounts[account_id])
            )
            for account_id in own.config.accounts
            if config.indexed(account_id)
        }
        for index in self.indexes.values():
            index.start()

    def _new_index(self, scope: UserScope, account_id: str, location: IndexLocation) -> AccountIndex:
        config = self.full_config
        # An index every instance shares is synced by the one holding its lease in the shared state.
        shared = self.index_engine.shared and self.store.shared
        return AccountIndex(
            account_id,
            location,
            config.server.index_text_bytes,
            partial(scope.pool.new_connection, account_id, enable_qresync=True),
            AttachmentReading.of(config.server) if config.attachments_indexed(account_id) else None,
            SyncLease(self.store, f"index-sync:{location.where}") if shared else None,
            FolderLeases(
                self.store,
                f"index-folder:{location.where}",
                max(FOLDER_LEASE_MIN_TTL_S, 2 * config.server.index_fresh_budget_ms / 1000),
            )
            if shared
            else None,
            push=config.server.index_fresh_from_push,
        )

    def index_of(self, account_id: str, *, start: bool = True) -> AccountIndex | None:
        """The local index of ``account_id`` as the caller reaches it (None: it keeps none). A team
        user's, of an account with ``index_per_user``, is theirs alone: its own file, synced on their own
        connection, started here on first use (unless ``start`` is False) and closed with their scope."""
        who = self.caller.user
        if who == ANONYMOUS:
            return self.indexes.get(account_id)
        scope = self.scope(who)
        account = scope.config.accounts.get(account_id)
        if account is None or not account.index_per_user:
            return None
        with self._lock:
            index = scope.indexes.get(account_id)
            if index is None and start:
                location = self.index_engine.location(account_id, account, who)
                self._drop_index_as_spelled(account_id, account)
                index = scope.indexes[account_id] = self._new_index(scope, account_id, location)
                index.start()
        return index

    def _drop_index_as_spelled(self, account_id: str, account: AccountConfig) -> None:
        """Delete the caller's index file of ``account_id`` made by an earlier version under the tag of
        the name as their token spells it, before folding: nothing opens it any more."""
        spelled = self.caller.spelled_otherwise
        if spelled is None:
            return
        old = self.index_engine.location(account_id, account, spelled)
        if old.drop():
            log.info("deleted %s, a team user's index of %s under an unfolded name", old.where, account_id)

    def index_state(self, account_id: str) -> str:
        """What ``imap_list_accounts`` says of the caller's index of ``account_id``."""
        index = self.index_of(account_id, start=False)
        if index is not None:
            return index.status.words()
        account = self.config.accounts.get(account_id)
        waiting = self.caller.user != ANONYMOUS and account is not None and account.index_per_user
        return "not started (the first search starts it)" if waiting else "off"

    def _scope_of(self, config: Config, pool: ConnectionPool) -> UserScope:
        server = config.server
        watches = WatchHub(
            pool.new_connection,
            WatchSettings(
                max_connections=server.max_watch_connections,
                poll_interval_s=server.watch_poll_interval_s,
                idle_restart_s=server.watch_idle_restart_s,
            ),
        )
        return UserScope(config, pool, watches)

    def scope(self, user: str | None = None) -> UserScope:
        """The scope of ``user`` (the caller's unless given), made on their first call (again after it
        was closed: the scopes of team users are bounded, see :meth:`_evict`)."""
        who = self.caller.user if user is None else user
        with self._lock:
            now = self._clock()
            scope = self._scopes.pop(who, None)
            made = scope is None
            if scope is None:
                config = accounts_of(self.full_config, who)
                scope = self._scope_of(config, self._pool_for(dict(config.accounts)))
            self._scopes[who] = scope  # the most recently used last
            scope.last_used = now
            # Looked over when a scope is made, else at most every SCOPE_SWEEP_S: this runs at every
            # step of every call.
            evicted: list[UserScope] = []
            if made or now - self._swept[0] >= SCOPE_SWEEP_S:
                self._swept[0] = now
                evicted = self._evict(now, keep=who)
        if evicted:
            threading.Thread(
                target=_close_scopes, args=(evicted,), name="close-user-scopes", daemon=True
            ).start()
        return scope

    def _evict(self, now: float, keep: str) -> list[UserScope]:
        """(Under the lock.) Take out the team users' scopes unused for :attr:`user_scope_idle_s`, and
        the least recently used past :attr:`max_user_scopes`; never one in use or used within
        :attr:`user_scope_min_idle_s`, nor ``keep``'s (being handed out), nor the server's own."""
        evicted: list[UserScope] = []
        team = len(self._scopes) - (ANONYMOUS in self._scopes)
        writing: set[str] | None = None
        for who, scope in list(self._scopes.items()):  # least recently used first
            idle = now - scope.last_used
            if idle < self.user_scope_min_idle_s:
                break
            if who in (ANONYMOUS, keep) or scope.in_use():
                continue
            if writing is None:
                writing = self.operations.running_users()
            if who in writing:  # a background write goes on with the user's connection
                continue
            if team - len(evicted) > self.max_user_scopes or idle >= self.user_scope_idle_s:
                evicted.append(self._scopes.pop(who))
        if evicted:
            log.info("closed the scopes of %d team users not used lately", len(evicted))
        return evicted

    @contextlib.contextmanager
    def holding(self, user: str | None = None) -> Iterator[UserScope]:
        """Keep the scope of ``user`` (the caller's unless given) for the length of a call: it is not
        closed meanwhile, however long the call takes."""
        who = self.caller.user if user is None else user
        scope = self.scope(who)
        with self._lock:
            scope.held += 1
        try:
            yield scope
        finally:
            with self._lock:
                scope.held -= 1
                scope.last_used = self._clock()
                if self._scopes.get(who) is scope:  # the most recently used last
                    self._scopes[who] = self._scopes.pop(who)

    def user_scopes(self) -> int:
        """How many team users' scopes are open now."""
        with self._lock:
            return len(self._scopes) - (ANONYMOUS in self._scopes)

    def for_caller(self, user: str, as_given: str = ANONYMOUS) -> AppContext:
        """The application as ``user`` (folded, :func:`~mail_imap_mcp.state.fold_user`; spelled
        ``as_given`` by their token) sees it, for one call: ``caller`` is their :class:`Caller` (the
        accounts served per user for them from their scope); everything else is this application's,
        shared."""
        per_user = frozenset(
            account_id for account_id, account in self.scope(user).config.accounts.items() if account.per_user
        )
        view = copy.copy(self)
        view.caller = Caller(user, per_user, as_given)
        return view

    @contextlib.contextmanager
    def entered(self) -> Iterator[AppContext]:
        """This view's call under way: its scope held (:meth:`holding`)."""
        with self.holding():
            yield self

    @property
    def config(self) -> Config:
        """The configuration as the caller sees it: their accounts only."""
        return self.scope().config

    @property
    def pool(self) -> ConnectionPool:
        return self.scope().pool

    @property
    def watches(self) -> WatchHub:
        return self.scope().watches

    @classmethod
    def from_config(cls, config: Config) -> AppContext:
        """The server of ``config``; :class:`ConfigError` when ``[state]``'s Redis cannot be reached
        (its shared secrets are needed before the first call)."""
        try:
            return cls._from_config(config)
        except StateUnavailable as exc:
            raise ConfigError(
                f"[state] redis_url: {exc.detail}; start Redis (or remove [state] to run one instance alone)"
            ) from None

    @classmethod
    def _from_config(cls, config: Config) -> AppContext:
        store = open_sealing_store(config)

        def pool_for(accounts: dict[str, AccountConfig]) -> ConnectionPool:
            return ConnectionPool(
                accounts,
                keepalive_interval_s=config.server.keepalive_interval_s,
                summary_cache_entries=config.server.summary_cache_entries,
                # A tool's own refusal inside an operation is judged on the mailbox's view, like the IMAP
                # layer's: when the view turns out stale, the read runs again instead.
                judged_on_the_view=(
                    ToolFailure,
                    AttachmentTooLarge,
                    ModeUnsupported,
                    DraftNotReplaceable,
                    MailboxNameUnknown,
                    MailboxNameRefused,
                    GmailOnly,  # its answers read first: left unread, the connection was dropped
                ),
            )

        gate = ConfirmationGate(
            tokens_for_irreversible=config.server.confirm_without_elicitation,
            store=store,
            secret=shared_secret(store, "confirm") if store.shared else None,
        )
        operations = OperationRegistry(
            inline_s=config.server.background_after_s, store=store, ttl_s=config.state.operation_ttl_s
        )
        anonymous = accounts_of(config, ANONYMOUS)
        state_dir = config.server.state_dir or sealing.default_state_dir()
        app = cls(config, pool_for(dict(anonymous.accounts)), gate, operations, store=store, pool_for=pool_for,
                  lasting_store=lasting_store(store, state_dir))  # fmt: skip
        if config.http.auth is not None:
            app.user_scope_idle_s = config.http.auth.user_idle_s
            app.user_scope_min_idle_s = min(USER_SCOPE_MIN_IDLE_S, app.user_scope_idle_s)
        return app

    def mailbox_list(self, account_id: str, digest: str) -> tuple[str, ...] | None:
        """The mailbox list a position cursor's first page made (``digest``), where any instance
        sharing the store made it for this user; None when none did (the next page lists again)."""
        try:
            raw = self.store.get(self.caller.key("mailboxes", account_id, digest))
        except StateUnavailable as exc:  # the page lists the mailboxes again: a read needs no store
            log.warning("mailbox list not read from the shared state: %s", exc.detail)
            return None
        return None if raw is None else tuple(json.loads(raw))

    def remember_mailbox_list(self, account_id: str, digest: str, names: Sequence[str]) -> None:
        """Keep a first page's mailbox list for its cursor's next pages (:data:`MAILBOX_LIST_TTL_S`);
        where the store cannot be reached, the next page lists them again."""
        try:
            self.store.set(
                self.caller.key("mailboxes", account_id, digest),
                json.dumps(list(names), ensure_ascii=False).encode(),
                MAILBOX_LIST_TTL_S,
            )
        except StateUnavailable as exc:
            log.warning("mailbox list not kept in the shared state: %s", exc.detail)

    def announce_change(self, account_id: str) -> None:
        """Tell every instance sharing the store that a write changed mail of ``account_id`` (as the
        caller reaches it), so that their listen streams of its mailboxes hear of it at once
        (``subscriptions.py``); nothing without a shared store (the watches of this process see it)."""
        if not self.store.shared or account_id not in self.config.accounts:
            return
        mine = self.config.accounts[account_id].per_user
        event = {"account": account_id, "user": self.caller.tag if mine else "-"}
        try:
            self.store.publish(CHANGES_CHANNEL, json.dumps(event).encode())
        except StateUnavailable as exc:  # the watches still see it, later
            log.warning("change of account %s not announced: %s", account_id, exc.detail)

    def resolve_account(self, account_id: str) -> str:
        if (
            account_id == DEFAULT_ACCOUNT
            and account_id not in self.config.accounts
            and len(self.config.accounts) == 1
        ):
            return next(iter(self.config.accounts))
        return account_id

    def connection(self, account_id: str) -> AccountConnection:
        """The account's connection; ``AccountUnknown`` (worded by the tool runner) when none is configured."""
        return self.pool.get(self.resolve_account(account_id))

    @staticmethod
    def failure_of(exc: Exception) -> ToolFailure | None:
        """The registry's words of a failure a service goes on past, for an issue of its partial answer
        (services import nothing of ``presentation/``; see ``presentation.failures.failure_of``): None
        for a domain error its caller answers itself and for a bug, to be raised."""
        return failures.failure_of(exc)

    @property
    def writes_possible(self) -> bool:
        """Whether any account allows writes (otherwise write tools are not listed)."""
        return WRITING.on(self.full_config, ANONYMOUS)

    def write_connection(self, account_id: str) -> AccountConnection:
        """The connection of ``account_id`` for a write; ``permission_denied`` when writes are off."""
        connection = self.connection(account_id)
        WRITING.gate(self.config, connection.account_id)
        return connection

    def close(self) -> None:
        if self.sign_ins is not None:
            self.sign_ins.close()
        for index in self.indexes.values():
            index.close()
        with self._lock:
            scopes = list(self._scopes.values())
        _close_scopes(scopes)
        self.index_engine.close()
        self.operations.close()
        self.store.close()
        if self.lasting_store is not self.store:
            self.lasting_store.close()


def open_sealing_store(config: Config) -> Store:
    """The state store of ``config``, with the key that seals cursors (and names team users' index
    files) in use: the one every instance shares in Redis, else the state directory's;
    :class:`StateUnavailable` when Redis cannot be reached."""
    store = open_store(config.state.resolve_url())
    if store.shared:
        sealing.use_key(shared_secret(store, "seal"))
    else:
        sealing.load_key(config.server.state_dir or sealing.default_state_dir())
    return store


def _close_scopes(scopes: list[UserScope]) -> None:
    for scope in scopes:
        try:
            scope.close()
        except Exception:  # one scope's failure must not keep the others open
            log.warning("a user's scope did not close cleanly", exc_info=True)

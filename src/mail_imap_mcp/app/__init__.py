"""The composition root: what every tool handler gets (the configuration, the account connections and
the shared state, as the user of the call sees them), composed of each user's scope (``scopes.py``), the
local indexes' lifecycle (``indexes.py``), the mailbox list cache (``mailbox_lists.py``), the change
announcement (``changes.py``) and whether any account writes (``permits.py``). A tool call's own object,
with its way to ask and its capability's gate, is ``tool_calls.ToolCall``, built on the caller's view."""

from __future__ import annotations

import contextlib
import copy
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from mail_imap_mcp.app.changes import announce
from mail_imap_mcp.app.indexes import Indexes
from mail_imap_mcp.app.mailbox_lists import keep_mailbox_list, kept_mailbox_list
from mail_imap_mcp.app.permits import any_account_writes
from mail_imap_mcp.app.scopes import USER_SCOPE_MIN_IDLE_S, UserScope, UserScopes, accounts_of
from mail_imap_mcp.asking.answers import ApprovalPage
from mail_imap_mcp.asking.gate import ConfirmationGate
from mail_imap_mcp.capabilities import rules_missing
from mail_imap_mcp.config import AccountConfig, Config, ConfigError
from mail_imap_mcp.credentials.logins import Logins
from mail_imap_mcp.envelope import ToolFailure
from mail_imap_mcp.imap.pool import ConnectionPool
from mail_imap_mcp.mail import sealing
from mail_imap_mcp.mail.attachment_errors import AttachmentTooLarge, ModeUnsupported
from mail_imap_mcp.mail.draft_errors import DraftNotReplaceable
from mail_imap_mcp.mail.name_errors import MailboxNameRefused, MailboxNameUnknown
from mail_imap_mcp.mail.sealing_store import open_sealing_store
from mail_imap_mcp.net.one_click import OneClickClient
from mail_imap_mcp.operations import OperationRegistry
from mail_imap_mcp.presentation.arguments import DEFAULT_ACCOUNT
from mail_imap_mcp.query import GmailOnly
from mail_imap_mcp.state import (
    ANONYMOUS,
    ANONYMOUS_CALLER,
    Caller,
    MemoryStore,
    StateUnavailable,
    Store,
    lasting_store,
    shared_secret,
)

if TYPE_CHECKING:
    from mail_imap_mcp.credentials.sign_in_flow import SignInAttempts
    from mail_imap_mcp.imap.connection import AccountConnection
    from mail_imap_mcp.imap.watch import WatchHub
    from mail_imap_mcp.index.engine import IndexEngine
    from mail_imap_mcp.index.runtime import AccountIndex
    from mail_imap_mcp.mail.backend import MailBackend
    from mail_imap_mcp.mail.sieve import SieveScripts
    from mail_imap_mcp.net.tokens import Credentials

#: Opens an account's Sieve scripts with its credentials (:func:`mail_imap_mcp.app.sieve.managesieve`).
SieveOpener = Callable[[AccountConfig, "Credentials"], contextlib.AbstractContextManager["SieveScripts"]]

log = logging.getLogger("mail_imap_mcp")


class AppContext:
    """Shared state of a running server, and each user's scope of it. A tool handler is given the
    application as its caller sees it (:meth:`for_caller`; ``caller``: the :class:`Caller` record):
    ``config``, ``pool`` and ``watches`` are that user's, ``full_config`` is everything configured.
    ``store``: the state instances share (:mod:`mail_imap_mcp.state`); ``lasting_store``: what must outlive
    the process and reach every process (a send's record; :func:`~mail_imap_mcp.state.lasting_store`)."""

    #: Whom this view of the application serves (the server's own: nobody in particular).
    caller: Caller = ANONYMOUS_CALLER
    #: The sign-ins a call may start (:mod:`mail_imap_mcp.credentials.sign_in_flow`): a stdio server's; None over
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
        self.store: Store = store or MemoryStore()
        self.lasting_store: Store = lasting_store or self.store
        self.confirmations = confirmations or ConfirmationGate(store=self.store)
        #: Where the user approves a send when their client cannot ask (None: nowhere, sending refused).
        self.approval_page: ApprovalPage | None = None
        #: The Sieve extensions each ManageSieve server announced, by its endpoint and the login (shared
        #: by every caller's view): a rule tried needs no session to know what it may use.
        self.sieve_offers: dict[tuple[str, int, str], frozenset[str]] = {}
        #: The one-click unsubscribe request's client (tests hand in one that reaches a loopback server).
        self.one_click = OneClickClient()
        self.operations = operations or OperationRegistry(store=self.store)
        logins = Logins()  # without pool_for: the users' pools share one application token
        #: Every user's scope, shared by every caller's view (its bounds: :class:`UserScopes`).
        self.scopes = UserScopes(
            config,
            pool,
            pool_for or (lambda accounts: ConnectionPool(accounts, logins.all(accounts))),
            self.operations.running_users,
            clock,
        )
        #: The local search indexes: the server's own, started here, and the team users' (:meth:`index_of`).
        self.index_lifecycle = Indexes(config, self.store, self.scopes)
        self.indexes = self.index_lifecycle.own
        #: How an account's Sieve scripts are reached (None: ManageSieve; the tests' fake goes here).
        self.sieve_opener: SieveOpener | None = None

    @property
    def index_engine(self) -> IndexEngine:
        """The engine of the local indexes (:attr:`Indexes.engine`)."""
        return self.index_lifecycle.engine

    def index_of(self, account_id: str, *, start: bool = True) -> AccountIndex | None:
        """The local index of ``account_id`` as the caller reaches it (None: it keeps none;
        :meth:`Indexes.of`)."""
        return self.index_lifecycle.of(self.caller, account_id, start=start)

    def index_state(self, account_id: str) -> str:
        """What ``imap_list_accounts`` says of the caller's index of ``account_id``."""
        return self.index_lifecycle.state(self.caller, account_id)

    def scope(self, user: str | None = None) -> UserScope:
        """The scope of ``user`` (the caller's unless given), made on their first call (again after it
        was closed: the scopes of team users are bounded, see :class:`UserScopes`)."""
        return self.scopes.get(self.caller.user if user is None else user)

    def holding(self, user: str | None = None) -> contextlib.AbstractContextManager[UserScope]:
        """Keep the scope of ``user`` (the caller's unless given) for the length of a call: it is not
        closed meanwhile, however long the call takes."""
        return self.scopes.holding(self.caller.user if user is None else user)

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
        logins = Logins()  # every user's credentials: an application's token is one for all users

        def pool_for(accounts: dict[str, AccountConfig]) -> ConnectionPool:
            return ConnectionPool(
                accounts,
                logins.all(accounts),
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
            app.scopes.idle_s = config.http.auth.user_idle_s
            app.scopes.min_idle_s = min(USER_SCOPE_MIN_IDLE_S, app.scopes.idle_s)
        return app

    def mailbox_list(self, account_id: str, digest: str) -> tuple[str, ...] | None:
        """The mailbox list a position cursor's first page made (``digest``) for this user, if kept."""
        return kept_mailbox_list(self.store, self.caller, account_id, digest)

    def remember_mailbox_list(self, account_id: str, digest: str, names: Sequence[str]) -> None:
        """Keep a first page's mailbox list for its cursor's next pages."""
        keep_mailbox_list(self.store, self.caller, account_id, digest, names)

    def announce_change(self, account_id: str) -> None:
        """Tell every instance sharing the store that a write changed mail of ``account_id`` (as the
        caller reaches it): :func:`~mail_imap_mcp.app.changes.announce`."""
        announce(self.store, self.config, self.caller, account_id)

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

    def mail(self, account_id: str) -> MailBackend:
        """The account's mail through its IMAP connection (``imap/backend.py``, loaded by the first call
        that reads mail)."""
        from mail_imap_mcp.imap.backend import ImapMail

        return ImapMail(self.connection(account_id))

    def sieve(self, account_id: str) -> contextlib.AbstractContextManager[SieveScripts]:
        """The account's Sieve scripts (``app/sieve.py``: a ManageSieve session, loaded by the first call
        that manages rules), closed on leaving."""
        connection = self.connection(account_id)
        account = self.config.accounts[connection.account_id]
        if self.sieve_opener is not None:
            opened = self.sieve_opener(account, connection.credentials)
        else:
            from mail_imap_mcp.app.sieve import managesieve

            opened = managesieve(account, connection.credentials)
        return _offering(opened, self.sieve_offers, self._sieve_key(account_id))

    def find_managesieve(self, account_id: str) -> str:
        """Look at whether the account's server offers ManageSieve, where this process has not yet
        (:func:`~mail_imap_mcp.app.sieve.find_managesieve`; the tests' fake is not looked at); its id."""
        connection = self.connection(account_id)
        if self.sieve_opener is None:
            from mail_imap_mcp.app.sieve import find_managesieve

            find_managesieve(self.config.accounts[connection.account_id])
        return connection.account_id

    def look_for_managesieve(self) -> threading.Thread | None:
        """Read the greeting of each ManageSieve server an account with rules on names, in the background
        (:func:`~mail_imap_mcp.app.sieve.find_managesieve`): a server without it is then neither listed nor
        served. The thread, where one was started."""
        config = self.full_config
        accounts = [
            account
            for account_id, account in config.accounts.items()
            if account.rules_enabled and rules_missing(account) is None and not account.faults
        ]
        if not accounts or self.sieve_opener is not None:
            return None

        def look() -> None:
            from mail_imap_mcp.app.sieve import find_managesieve

            for account in accounts:
                find_managesieve(account)

        thread = threading.Thread(target=look, name="mail-imap-mcp-sieve-probe", daemon=True)
        thread.start()
        return thread

    def sieve_offered(self, account_id: str) -> frozenset[str]:
        """The extensions the account's ManageSieve server announced to this process's last session (the
        first call opens one to learn them)."""
        key = self._sieve_key(account_id)
        if self.sieve_offers.get(key) is None:
            with self.sieve(account_id):
                pass
        return self.sieve_offers[key]

    def _sieve_key(self, account_id: str) -> tuple[str, int, str]:
        account = self.config.accounts[self.connection(account_id).account_id]
        endpoint = account.sieve.endpoint(account.host)
        return endpoint.host, endpoint.port, account.username

    @property
    def writes_possible(self) -> bool:
        """Whether any account allows writes (otherwise write tools are not listed)."""
        return any_account_writes(self.full_config)

    def close(self) -> None:
        if self.sign_ins is not None:
            self.sign_ins.close()
        self.index_lifecycle.close_own()
        self.scopes.close()
        self.index_lifecycle.close_engine()
        self.operations.close()
        self.store.close()
        if self.lasting_store is not self.store:
            self.lasting_store.close()


@contextlib.contextmanager
def _offering(
    opened: contextlib.AbstractContextManager[SieveScripts],
    known: dict[tuple[str, int, str], frozenset[str]],
    key: tuple[str, int, str],
) -> Iterator[SieveScripts]:
    """``opened``'s scripts, the extensions its server announced kept in ``known`` under ``key``."""
    with opened as scripts:
        known[key] = scripts.capabilities().extensions
        yield scripts

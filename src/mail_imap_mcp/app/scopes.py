"""Each user's scope of the application (their accounts, connections, watches and indexes), made on
their first call and closed once unused: the team users' scopes are bounded in number and idle time."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mail_imap_mcp.config import AccountConfig, Config
from mail_imap_mcp.imap.watch import WatchHub, WatchSettings
from mail_imap_mcp.state import ANONYMOUS

if TYPE_CHECKING:
    from mail_imap_mcp.imap.pool import ConnectionPool
    from mail_imap_mcp.index.runtime import AccountIndex

log = logging.getLogger("mail_imap_mcp")

#: At most this many team users' scopes are kept (their accounts, connections and watches); past it the
#: least recently used are closed, never one in use (see :meth:`UserScopes.get`).
MAX_USER_SCOPES = 256
#: A team user's scope unused this long is closed (its connections logged out); their next call makes
#: it again.
USER_SCOPE_IDLE_S = 900.0
#: Nor is a scope closed sooner than this after its last use, however many there are (a call that just
#: got it may not have sent its first command yet).
USER_SCOPE_MIN_IDLE_S = 60.0

#: How often at most the scopes are looked over for one to close, while no new one is made.
SCOPE_SWEEP_S = 1.0


@dataclass
class UserScope:
    """What one user reaches: their accounts (templates filled in for them), their connections,
    their mailbox watches and the local indexes of their accounts with ``index_per_user`` (started by
    their first search); ``last_used`` (monotonic seconds) and ``held`` (calls under way,
    :meth:`UserScopes.holding`) say whether it may be closed."""

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


def scope_of(config: Config, pool: ConnectionPool) -> UserScope:
    """A new scope of ``config``'s accounts on ``pool``, its watches bounded by ``config.server``."""
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


class UserScopes:
    """Every user's scope, the server's own (:data:`ANONYMOUS`) kept for good; a team user's made on
    their first call and closed when unused for :attr:`idle_s`, or past :attr:`max_count` the least
    recently used, never one in use, used within :attr:`min_idle_s` or writing in the background
    (``running_users``: the users whose background writes go on). ``lock`` also guards what a scope
    holds (its indexes, :mod:`mail_imap_mcp.app.indexes`)."""

    def __init__(
        self,
        config: Config,
        own_pool: ConnectionPool,
        pool_for: Callable[[dict[str, AccountConfig]], ConnectionPool],
        running_users: Callable[[], set[str]],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.full_config = config
        self.max_count = MAX_USER_SCOPES
        self.idle_s = USER_SCOPE_IDLE_S
        self.min_idle_s = USER_SCOPE_MIN_IDLE_S
        self.lock = threading.Lock()
        self._pool_for = pool_for
        self._running_users = running_users
        self._clock = clock
        self._swept = clock()
        self._scopes: dict[str, UserScope] = {ANONYMOUS: scope_of(accounts_of(config, ANONYMOUS), own_pool)}

    def get(self, who: str) -> UserScope:
        """The scope of ``who``, made on their first call (again after it was closed: see
        :meth:`_evict`)."""
        with self.lock:
            now = self._clock()
            scope = self._scopes.pop(who, None)
            made = scope is None
            if scope is None:
                config = accounts_of(self.full_config, who)
                scope = scope_of(config, self._pool_for(dict(config.accounts)))
            self._scopes[who] = scope  # the most recently used last
            scope.last_used = now
            # Looked over when a scope is made, else at most every SCOPE_SWEEP_S: this runs at every
            # step of every call.
            evicted: list[UserScope] = []
            if made or now - self._swept >= SCOPE_SWEEP_S:
                self._swept = now
                evicted = self._evict(now, keep=who)
        if evicted:
            threading.Thread(
                target=close_scopes, args=(evicted,), name="close-user-scopes", daemon=True
            ).start()
        return scope

    def _evict(self, now: float, keep: str) -> list[UserScope]:
        """(Under the lock.) Take out the team users' scopes unused for :attr:`idle_s`, and the least
        recently used past :attr:`max_count`; never one in use or used within :attr:`min_idle_s`, nor
        ``keep``'s (being handed out), nor the server's own."""
        evicted: list[UserScope] = []
        team = len(self._scopes) - (ANONYMOUS in self._scopes)
        writing: set[str] | None = None
        for who, scope in list(self._scopes.items()):  # least recently used first
            idle = now - scope.last_used
            if idle < self.min_idle_s:
                break
            if who in (ANONYMOUS, keep) or scope.in_use():
                continue
            if writing is None:
                writing = self._running_users()
            if who in writing:  # a background write goes on with the user's connection
                continue
            if team - len(evicted) > self.max_count or idle >= self.idle_s:
                evicted.append(self._scopes.pop(who))
        if evicted:
            log.info("closed the scopes of %d team users not used lately", len(evicted))
        return evicted

    @contextlib.contextmanager
    def holding(self, who: str) -> Iterator[UserScope]:
        """Keep the scope of ``who`` for the length of a call: it is not closed meanwhile, however long
        the call takes."""
        scope = self.get(who)
        with self.lock:
            scope.held += 1
        try:
            yield scope
        finally:
            with self.lock:
                scope.held -= 1
                scope.last_used = self._clock()
                if self._scopes.get(who) is scope:  # the most recently used last
                    self._scopes[who] = self._scopes.pop(who)

    def team_count(self) -> int:
        """How many team users' scopes are open now."""
        with self.lock:
            return len(self._scopes) - (ANONYMOUS in self._scopes)

    def close(self) -> None:
        with self.lock:
            scopes = list(self._scopes.values())
        close_scopes(scopes)


def close_scopes(scopes: list[UserScope]) -> None:
    for scope in scopes:
        try:
            scope.close()
        except Exception:  # one scope's failure must not keep the others open
            log.warning("a user's scope did not close cleanly", exc_info=True)

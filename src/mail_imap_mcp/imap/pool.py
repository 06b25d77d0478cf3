"""The accounts' connections: one :class:`~mail_imap_mcp.imap.connection.AccountConnection` per configured
account, made on the account's first use, and the keepalive that sends NOOP on those left idle.

A server makes its pool at start and reaches no account until a call does: the connection stack (imapclient,
tenacity, the sign-in methods) is imported by the first connection made (``tests/unit/test_start_cost.py``).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from mail_imap_mcp.config import AccountConfig, Security
from mail_imap_mcp.mail.errors import AccountUnknown
from mail_imap_mcp.net.sockets import OpenSocket
from mail_imap_mcp.net.tls import client_context
from mail_imap_mcp.net.tokens import Credentials

if TYPE_CHECKING:
    from mail_imap_mcp.imap.connection import AccountConnection, Translate

log = logging.getLogger("mail_imap_mcp.imap")


class Keepalive:
    """A background thread that sends NOOP on connections idle for ``interval_s`` (see
    :meth:`AccountConnection.keep_alive`); started on first use, stopped and joined by :meth:`stop`."""

    THREAD_NAME = "mail-imap-mcp-keepalive"

    def __init__(self, connections: Mapping[str, AccountConnection], interval_s: float) -> None:
        self._connections = connections
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        with self._lock:
            if self._thread is not None or self._stop.is_set() or self.interval_s <= 0:
                return
            self._thread = threading.Thread(target=self._loop, name=self.THREAD_NAME, daemon=True)
            self._thread.start()

    def stop(self) -> None:
        with self._lock:
            self._stop.set()
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()

    def _loop(self) -> None:
        # Checked twenty times per interval (at most every 5 s): a connection gets its NOOP within 1.05
        # intervals of idleness, so the default 240 s stays well below a 5-minute NAT timeout.
        tick = min(max(self.interval_s / 20, 0.01), 5.0)
        while not self._stop.wait(tick):
            for connection in list(self._connections.values()):  # those made so far
                if self._stop.is_set():
                    return
                try:
                    connection.keep_alive(self.interval_s)
                except Exception:  # never let one account's trouble end the thread
                    log.warning("account=%s keepalive failed", connection.account_id, exc_info=True)


class ConnectionPool:
    """One :class:`AccountConnection` per configured account, kept alive while idle (``keepalive_interval_s``,
    0: off). ``credentials``: each account's, from the application root, given to every connection the
    account opens (this pool's and :meth:`new_connection`'s: watchers, the index sync), so an account's
    token is fetched once for all. ``open_socket`` replaces the TCP connect
    (:data:`~mail_imap_mcp.net.sockets.OpenSocket`). ``translate``: see
    :data:`~mail_imap_mcp.imap.connection.Translate`."""

    def __init__(
        self,
        accounts: dict[str, AccountConfig],
        credentials: Mapping[str, Credentials],
        *,
        keepalive_interval_s: float = 0.0,
        summary_cache_entries: int = 0,
        open_socket: OpenSocket | None = None,
        translate: Translate | None = None,
        judged_on_the_view: tuple[type[Exception], ...] = (),
    ) -> None:
        self._accounts = accounts
        self._credentials = credentials
        self._open_socket = open_socket
        self._summary_cache_entries = summary_cache_entries
        self._translate = translate
        self._judged_on_the_view = judged_on_the_view
        self._connections: dict[str, AccountConnection] = {}
        self._lock = threading.Lock()
        self.keepalive = Keepalive(self._connections, keepalive_interval_s)
        self._preparing: threading.Thread | None = None

    def prepare(self) -> None:
        """Build every account's TLS context in the background (the process's one per CA file, see
        :func:`~mail_imap_mcp.net.tls.client_context`), so that the first call after start does not spend
        its CPU on the trust store; a failure is left for that call to report."""

        def build() -> None:
            for config in self._accounts.values():
                if config.security is not Security.PLAIN:
                    with contextlib.suppress(Exception):
                        client_context(config.ca_file)

        self._preparing = threading.Thread(target=build, name="mail-imap-mcp-prepare", daemon=True)
        self._preparing.start()

    def get(self, account_id: str) -> AccountConnection:
        """The connection serving ``account_id``'s calls, made on its first use."""
        self.keepalive.start()
        if (connection := self._connections.get(account_id)) is not None:
            return connection
        if account_id not in self._accounts:
            raise AccountUnknown(account_id, self._accounts)
        from mail_imap_mcp.imap.connection import AccountConnection

        with self._lock:
            if (connection := self._connections.get(account_id)) is None:
                connection = self._connections[account_id] = AccountConnection(
                    account_id,
                    self._accounts[account_id],
                    open_socket=self._open_socket,
                    enable_qresync=True,
                    credentials=self._credentials[account_id],
                    summary_cache_entries=self._summary_cache_entries,
                    translate=self._translate,
                    judged_on_the_view=self._judged_on_the_view,
                )
            return connection

    def new_connection(self, account_id: str, *, enable_qresync: bool = False) -> AccountConnection:
        """A connection of its own for ``account_id``, outside the pool (a mailbox watch's, see
        :mod:`mail_imap_mcp.imap.watch`, or the local index's background sync): never the one serving
        tool calls; its owner closes it."""
        if account_id not in self._accounts:
            raise AccountUnknown(account_id, self._accounts)
        from mail_imap_mcp.imap.connection import AccountConnection

        return AccountConnection(
            account_id,
            self._accounts[account_id],
            open_socket=self._open_socket,
            enable_qresync=enable_qresync,
            credentials=self._credentials[account_id],
        )

    def busy(self) -> bool:
        """Whether a connection of the pool is running a command now."""
        return any(connection.busy for connection in list(self._connections.values()))

    def close_all(self) -> None:
        self.keepalive.stop()
        if self._preparing is not None:
            self._preparing.join()
        for connection in list(self._connections.values()):
            connection.close()

"""The accounts' connections: one :class:`~mail_imap_mcp.imap.connection.AccountConnection` per configured
account, and the keepalive that sends NOOP on those left idle."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Mapping, Sequence

from mail_imap_mcp.config import AccountConfig, Security
from mail_imap_mcp.imap.connection import AccountConnection, Translate
from mail_imap_mcp.mail.errors import AccountUnknown
from mail_imap_mcp.net.sockets import OpenSocket
from mail_imap_mcp.net.tokens import Credentials

log = logging.getLogger("mail_imap_mcp.imap")


class Keepalive:
    """A background thread that sends NOOP on connections idle for ``interval_s`` (see
    :meth:`AccountConnection.keep_alive`); started on first use, stopped and joined by :meth:`stop`."""

    THREAD_NAME = "mail-imap-mcp-keepalive"

    def __init__(self, connections: Sequence[AccountConnection], interval_s: float) -> None:
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
            for connection in self._connections:
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
        self._open_socket = open_socket
        self._connections = {
            aid: AccountConnection(
                aid,
                cfg,
                summary_cache_entries=summary_cache_entries,
                open_socket=open_socket,
                translate=translate,
                judged_on_the_view=judged_on_the_view,
                enable_qresync=True,
                credentials=credentials[aid],
            )
            for aid, cfg in accounts.items()
        }
        self.keepalive = Keepalive(list(self._connections.values()), keepalive_interval_s)
        self._preparing: threading.Thread | None = None

    def prepare(self) -> None:
        """Build every account's TLS context in the background, so that the first call after start does
        not spend its CPU on the trust store; a failure is left for that call to report."""

        def build() -> None:
            for connection in self._connections.values():
                if connection.config.security is not Security.PLAIN:
                    with contextlib.suppress(Exception):
                        connection.ssl_context()

        self._preparing = threading.Thread(target=build, name="mail-imap-mcp-prepare", daemon=True)
        self._preparing.start()

    def get(self, account_id: str) -> AccountConnection:
        self.keepalive.start()
        try:
            return self._connections[account_id]
        except KeyError:
            raise AccountUnknown(account_id, self._connections) from None

    def new_connection(self, account_id: str, *, enable_qresync: bool = False) -> AccountConnection:
        """A connection of its own for ``account_id``, outside the pool (a mailbox watch's, see
        :mod:`mail_imap_mcp.imap.watch`, or the local index's background sync): never the one serving
        tool calls; its owner closes it."""
        account = self.get(account_id)
        return AccountConnection(
            account.account_id,
            account.config,
            open_socket=self._open_socket,
            enable_qresync=enable_qresync,
            credentials=account.credentials,
        )

    def busy(self) -> bool:
        """Whether a connection of the pool is running a command now."""
        return any(connection.busy for connection in self._connections.values())

    def close_all(self) -> None:
        self.keepalive.stop()
        if self._preparing is not None:
            self._preparing.join()
        for connection in self._connections.values():
            connection.close()

"""Watching mailboxes for changes made by any client, on IMAP connections of their own.

A :class:`WatchHub` runs, per account, at most ``max_connections`` watching connections, each in a
thread of its own and never the connection that serves tool calls. A connection that watches one
mailbox EXAMINEs it (never SELECT: watching sets no flag) and waits in IDLE (RFC 2177), re-issued every
``idle_restart_s``; without IDLE it sends NOOP every ``poll_interval_s`` (so on Courier too, whose
IDLE looks at the mailbox only once a minute, and which updates a session's view only on NOOP or SELECT).
Once an account watches more mailboxes than it has connections, the newest share the least busy
connection, which selects none of them: where the server offers NOTIFY (RFC 5465) it asks to be told
of their changes as STATUS responses and waits in IDLE, else it checks each with STATUS every
``poll_interval_s``. A connection that drops reconnects with a growing pause, and each of its
mailboxes is reported changed once it is back (changes may have been missed meanwhile).

Each mailbox keeps one fingerprint (UIDVALIDITY, UIDNEXT, MESSAGES, HIGHESTMODSEQ where the server has
CONDSTORE, UNSEEN where STATUS says it) across the two ways of watching: whatever a connection learns
(EXAMINE, STATUS, NOTIFY's STATUS responses, or a change it reported) updates it, and every new look is
compared with it on the items both know. So a change made while a connection switches between one
mailbox and several is reported, and a change already reported is not reported again. Polling a mailbox
(NOOP) also asks its STATUS, which finds out a mailbox deleted by another client where NOOP says nothing
(Courier).

A change is reported by calling the watch's listener in the watching thread; listeners must not block.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from mail_imap_mcp.imap.watch_records import Listener, Watch, WatchSettings
from mail_imap_mcp.state.clock import Pause

if TYPE_CHECKING:
    from mail_imap_mcp.imap.connection import AccountConnection
    from mail_imap_mcp.imap.watcher import Watcher

__all__ = ["ConnectionFactory", "Listener", "Watch", "WatchHub", "WatchSettings"]

log = logging.getLogger("mail_imap_mcp.imap.watch")

#: A new connection of its own for an account (see :meth:`ConnectionPool.new_connection`).
ConnectionFactory = Callable[[str], "AccountConnection"]
#: How long :meth:`WatchHub.cancel` and :meth:`WatchHub.close` wait for a watching thread to end.
JOIN_TIMEOUT_S = 5.0


class WatchHub:
    """The watching connections of every account, shared by every subscriber of the server.

    :meth:`watch` starts watching (or joins a watch of the same mailbox), :meth:`cancel` ends one
    listener's watch, and the last one of a connection ends its thread and logs it out; :meth:`close`
    ends them all. Thread-safe.
    """

    def __init__(
        self,
        connect: ConnectionFactory,
        settings: WatchSettings,
        clock: Callable[[], float] = time.monotonic,
        pause: Pause = threading.Event.wait,
    ) -> None:
        self._connect = connect
        self.settings = settings
        self.clock = clock  # the poll intervals, IDLE restarts and reconnect pauses: a test moves its own
        self.pause = pause
        self.lock = threading.Lock()
        self._watchers: dict[str, list[Watcher]] = {}
        self._closed = False

    def watch(self, account_id: str, mailbox: str, listener: Listener) -> Watch:
        """Call ``listener`` whenever ``mailbox`` of ``account_id`` changes, until :meth:`cancel`; the
        watch's :attr:`~Watch.ready` tells from when on."""
        watch = Watch(account_id, mailbox, listener)
        with self.lock:
            if self._closed:
                raise RuntimeError("the watch hub is closed")
            watchers = self._watchers.setdefault(account_id, [])
            watcher = next((w for w in watchers if mailbox in w.watches), None)
            if watcher is None and len(watchers) < self.settings.max_connections:
                from mail_imap_mcp.imap.watcher import Watcher  # with the connection stack it runs on

                watcher = Watcher(self, account_id, self._connect(account_id))
                watchers.append(watcher)
                watcher.watches[mailbox] = [watch]
                watcher.start()
                return watch
            if watcher is None:
                watcher = min(watchers, key=lambda w: len(w.watches))
            if mailbox not in watcher.watches:
                watcher.version += 1
            joined = watcher.watches.setdefault(mailbox, [])
            if any(other.ready.is_set() for other in joined):
                watch.ready.set()  # the mailbox is watched already
            joined.append(watch)
        return watch

    def cancel(self, watch: Watch) -> None:
        """End ``watch``; a connection left without mailboxes is logged out and its thread joined."""
        ending: Watcher | None = None
        with self.lock:
            for watcher in self._watchers.get(watch.account_id, []):
                listeners = watcher.watches.get(watch.mailbox)
                if listeners is None or watch not in listeners:
                    continue
                listeners.remove(watch)
                if not listeners:
                    del watcher.watches[watch.mailbox]
                    watcher.fingerprints.pop(watch.mailbox, None)
                    watcher.uncertain.discard(watch.mailbox)
                    watcher.version += 1
                if not watcher.watches:
                    watcher.stopping.set()
                    self._watchers[watch.account_id].remove(watcher)
                    ending = watcher
                break
        if ending is not None:
            _join(ending)

    def close(self) -> None:
        """End every watch and join every watching thread (bounded)."""
        with self.lock:
            self._closed = True
            watchers = [w for ws in self._watchers.values() for w in ws]
            self._watchers.clear()
            for watcher in watchers:
                watcher.stopping.set()
        for watcher in watchers:
            _join(watcher)

    def watching(self) -> bool:
        """Whether any mailbox is watched now."""
        with self.lock:
            return any(self._watchers.values())

    def connections(self, account_id: str) -> int:
        """Watching connections of ``account_id`` now."""
        with self.lock:
            return len(self._watchers.get(account_id, []))

    def reconnects(self, account_id: str) -> int:
        """Reconnects of the current watching connections of ``account_id`` after a failure."""
        with self.lock:
            return sum(w.reconnects for w in self._watchers.get(account_id, []))


def _join(watcher: Watcher) -> None:
    if watcher.thread is not None and watcher.thread is not threading.current_thread():
        watcher.thread.join(JOIN_TIMEOUT_S)
        if watcher.thread.is_alive():
            log.warning("account=%s a watching thread did not end in time", watcher.account_id)

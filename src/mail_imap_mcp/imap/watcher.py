"""One watching connection and its thread (:class:`Watcher`), for :class:`~mail_imap_mcp.imap.watch.WatchHub`:
it watches one mailbox in IDLE (or by NOOP), or several with NOTIFY (or by STATUS), keeps each mailbox's
fingerprint, reconnects after a failure and calls the listeners of what changed (see
:mod:`mail_imap_mcp.imap.watch` for how)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from mail_imap_mcp.imap import watch_lines as lines
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.errors import command_refused, says_mailbox_missing
from mail_imap_mcp.imap.watch_records import Watch, WatchingHub
from mail_imap_mcp.imap.wire import BudgetedIMAPClient
from mail_imap_mcp.state.clock import sleep_on

log = logging.getLogger("mail_imap_mcp.imap.watch")

#: How often a waiting watcher looks up from its socket: the most an unsubscribe or a shutdown waits.
TICK_S = 0.2
#: Pauses before reconnecting a watching connection that dropped: doubled per failure, up to the last.
RECONNECT_BACKOFF_S = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0)
#: What a mailbox looked like last (STATUS item -> value); None once it is gone.
Fingerprint = dict[bytes, int] | None
_MESSAGES, _UIDNEXT, _UIDVALIDITY, _HIGHESTMODSEQ = (
    lines.MESSAGES,
    lines.UIDNEXT,
    lines.UIDVALIDITY,
    lines.HIGHESTMODSEQ,
)
_UNSEEN = lines.UNSEEN
#: The items that tell a change of flags (where the server has CONDSTORE; UNSEEN only of \\Seen).
_FLAG_ITEMS = frozenset({_HIGHESTMODSEQ, _UNSEEN})
#: Never looked at yet: the first look is what a watch starts from.
_NEVER_SEEN: Any = object()


@dataclass(eq=False)
class Watcher:
    """One watching connection and its thread; its mailboxes are changed under the hub's lock."""

    hub: WatchingHub
    account_id: str
    connection: AccountConnection
    watches: dict[str, list[Watch]] = field(default_factory=dict)
    #: Bumped whenever ``watches`` changes its mailboxes: a wait in progress ends and plans anew.
    version: int = 0
    stopping: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    #: Set after a failure: every mailbox is reported once the connection is back.
    recovering: bool = False
    reconnects: int = 0
    #: Failures in a row (the pause before the next reconnect grows with them).
    failures: int = 0
    #: Whether the subscribers were told that the mailbox is gone (once, until it is back).
    told_missing: bool = False
    #: Whether the connection is in IDLE (it is then dropped at the end rather than logged out).
    idling: bool = False
    #: What each watched mailbox looked like last, whichever way it was watched (see the module).
    fingerprints: dict[str, Fingerprint] = field(default_factory=dict)
    #: Mailboxes whose fingerprint lost every item that tells flag changes (HIGHESTMODSEQ, UNSEEN) to a
    #: change reported in IDLE (a new message moves them by an amount nobody said): a flag changed before
    #: the next look would not show, so that look reports the mailbox (perhaps once more).
    uncertain: set[str] = field(default_factory=set)
    _mode: str = ""
    #: The mailbox the connection has examined (watching one), if any.
    _examined: str | None = None

    def start(self) -> None:
        self.thread = threading.Thread(
            target=self._run, name=f"mail-imap-mcp-watch-{self.account_id}", daemon=True
        )
        self.thread.start()

    # -- the thread ---------------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self.stopping.is_set():
                try:
                    self._serve_once()
                except Exception as exc:
                    if self.stopping.is_set():
                        break
                    if says_mailbox_missing(exc) and not self.told_missing:
                        # Deleted (or renamed) by another client: say so once; it is watched again
                        # if it comes back.
                        self.told_missing = True
                        self._notify(self._plan()[1])
                    pause = RECONNECT_BACKOFF_S[min(self.failures, len(RECONNECT_BACKOFF_S) - 1)]
                    self.failures += 1
                    log.warning(
                        "account=%s watching connection failed (%s: %s); reconnecting in %g s",
                        self.account_id,
                        type(exc).__name__,
                        exc,
                        pause,
                    )
                    self.connection.discard()
                    self.idling = False
                    self.recovering = True
                    self.reconnects += 1
                    self._sleep(pause, lambda: not self.stopping.is_set())
        finally:
            # A LOGOUT in IDLE would wait for DONE's answer first: a stalled server would hold the stop.
            if self.idling:
                self.connection.discard()
            else:
                self.connection.close()
            log.info("account=%s watching connection closed", self.account_id)

    def _plan(self) -> tuple[int, list[str]]:
        with self.hub.lock:
            return self.version, list(self.watches)

    def _current(self, version: int) -> bool:
        """Whether the plan made at ``version`` still holds (same mailboxes, not stopping)."""
        return not self.stopping.is_set() and self.version == version

    def _serve_once(self) -> None:
        version, mailboxes = self._plan()
        if not mailboxes:
            self.stopping.wait(TICK_S)
            return
        mode = "one" if len(mailboxes) == 1 else "many"
        if self._mode and mode != self._mode:
            if self._examined is not None:
                self._last_look(self._examined)
            # Leave the examined mailbox behind without a command that could change it: log out.
            self.connection.close()
            self._examined = None
        self._mode = mode
        client = self.connection.connect()
        if mode == "one":
            self._watch_one(client, mailboxes[0], version)
        else:
            self._check_many(client, mailboxes, version)

    def _watch_one(self, client: BudgetedIMAPClient, mailbox: str, version: int) -> None:
        self._enable_condstore(client)  # HIGHESTMODSEQ in EXAMINE's answer: flag changes show there too
        answer = client.select_folder(mailbox, readonly=True)
        self._examined = mailbox
        count = answer.get(b"EXISTS")
        exists = int(count) if count is not None else None
        # Examined again after an IDLE restart or a switch: what changed meanwhile shows here.
        seen = lines.known(
            {**{key: answer.get(key) for key in (_UIDVALIDITY, _UIDNEXT, _HIGHESTMODSEQ)}, _MESSAGES: count}
        )
        changed = self.looked(mailbox, seen)
        self._ready([mailbox])
        recovered = self.recovering
        self._back([mailbox])
        if changed and not recovered:
            self._notify([mailbox])
        if self.connection.profile.idles and not lines.idle_is_lazy(client):
            self._idle(client, version, lines.CountWatch(mailbox, exists, self))
        else:
            self._poll(client, mailbox, version, exists)

    def _enable_condstore(self, client: BudgetedIMAPClient) -> None:
        """CONDSTORE on the connection, once: ENABLE goes with the next command, where RFC 5161 allows it
        (before a mailbox is examined; at an IDLE restart, in the mailbox, it failed the connection)."""
        if self.connection.profile.condstore and not client.enabled("CONDSTORE"):
            client.enable_ahead("CONDSTORE")

    def _idle(
        self, client: BudgetedIMAPClient, version: int, changed_by: Callable[[bytes], str | None]
    ) -> None:
        """IDLE until the plan changes or ``idle_restart_s`` passed, reporting the mailbox ``changed_by``
        names for a line the server sends. The caller then starts over: EXAMINE (or NOTIFY SET) and
        IDLE anew, which also finds out a mailbox deleted meanwhile where IDLE did not tell (Cyrus)."""
        client.idle()
        self.idling = True
        try:
            started = self.hub.clock()
            while self._current(version) and self.hub.clock() - started < self.hub.settings.idle_restart_s:
                if not client.input_waiting(TICK_S):
                    continue
                lines = [client.read_response_line()]
                while client.input_waiting(0):  # every line that came together, then one report
                    lines.append(client.read_response_line())
                self._notify_lines(lines, changed_by)
        finally:
            if not self.stopping.is_set() and not client.unusable:
                # What came between the last look and DONE counts too.
                self._notify_lines(client.end_idle(), changed_by)
                self.idling = False

    def _notify_lines(self, lines: list[bytes], changed_by: Callable[[bytes], str | None]) -> None:
        self._notify(dict.fromkeys(name for name in map(changed_by, lines) if name is not None))

    def _poll(self, client: BudgetedIMAPClient, mailbox: str, version: int, exists: int | None) -> None:
        items = self._status_items()
        while self._wait(version):
            told, exists = lines.changes_in(client.noop()[1], exists)
            # STATUS too: a mailbox deleted by another client fails it where NOOP says nothing (Courier).
            status = client.folder_status(mailbox, items)
            changed = self.looked(mailbox, lines.known({item: status.get(item) for item in items}))
            if told or changed:
                self._notify([mailbox])

    def _last_look(self, mailbox: str) -> None:
        """Before the connection leaves the one mailbox it watched: its STATUS, so that the fingerprint
        holds what a change reported in IDLE left unknown, and a change since is reported."""
        try:
            client = self.connection.connect()
            items = self._status_items()
            status = client.folder_status(mailbox, items)
        except Exception as exc:
            if self.stopping.is_set() or command_refused(exc) is None:
                raise
            return  # deleted meanwhile: the next look tells
        if self.looked(mailbox, lines.known({item: status.get(item) for item in items})):
            self._notify([mailbox])

    def _status_items(self) -> list[bytes]:
        items = [_MESSAGES, _UIDNEXT, _UIDVALIDITY, _UNSEEN]
        if self.connection.profile.condstore:
            items.append(_HIGHESTMODSEQ)
        return items

    def looked(self, mailbox: str, seen: Fingerprint) -> bool:
        """Keep ``seen`` in the mailbox's fingerprint (an item it lacks keeps its value: EXAMINE tells
        no UNSEEN, Courier's no UIDNEXT); whether it differs from the one before on an item both know
        (False for a first look: the watch starts from it), but for the UIDVALIDITY of a mailbox empty
        then and now: it tells nothing a client could see (Courier renews it at each STATUS)."""
        with self.hub.lock:
            if mailbox not in self.watches:
                return False
            before = self.fingerprints.get(mailbox, _NEVER_SEEN)
            keep = before if isinstance(before, dict) and seen is not None else {}
            self.fingerprints[mailbox] = None if seen is None else {**keep, **seen}
            lost = mailbox in self.uncertain and seen is not None and bool(seen.keys() & _FLAG_ITEMS)
            if lost or seen is None:
                self.uncertain.discard(mailbox)
        if before is _NEVER_SEEN:
            return False
        if before is None or seen is None:
            return before is not seen
        still_empty = before.get(_MESSAGES) == 0 == seen.get(_MESSAGES)
        common = before.keys() & seen.keys() - ({_UIDVALIDITY} if still_empty else set())
        # Nothing to compare (a change reported earlier left every item unknown): report, not miss.
        return lost or not common or any(before[item] != seen[item] for item in common)

    def _check_many(self, client: BudgetedIMAPClient, mailboxes: list[str], version: int) -> None:
        profile = self.connection.profile
        self._enable_condstore(client)  # HIGHESTMODSEQ in STATUS: flag changes too
        if profile.notifies:
            statuses = self._notify_set(client, mailboxes)
            if statuses is not None:
                # One connection hears every change of its mailboxes (RFC 5465): STATUS responses in IDLE,
                # and one of each mailbox at once, compared with what was seen before the switch.
                items = self._status_items()
                changed = [
                    name
                    for name in mailboxes
                    # A mailbox the server did not answer for (Dovecot: an INBOX never opened) is asked.
                    if self.looked(
                        name, statuses[name] if name in statuses else self._status(client, name, items)
                    )
                ]
                self._ready(mailboxes)
                recovered = self.recovering
                self._back(mailboxes)
                if not recovered:
                    self._notify(changed)
                self._idle(client, version, lines.NotifyWatch(self, client, set(mailboxes)))
                return
        items = self._status_items()
        while True:
            changed = [
                mailbox for mailbox in mailboxes if self.looked(mailbox, self._status(client, mailbox, items))
            ]
            self._ready(mailboxes)
            recovered = self.recovering
            self._back(mailboxes)  # after a failure every mailbox is reported anyway
            if not recovered:
                self._notify(changed)
            if not self._wait(version):
                return

    def _notify_set(
        self, client: BudgetedIMAPClient, mailboxes: list[str]
    ) -> dict[str, dict[bytes, int]] | None:
        """NOTIFY SET for ``mailboxes`` and the STATUS of each it answers with; None when the server
        refuses it (a mailbox deleted meanwhile): STATUS checks then, which tell which one is gone."""
        try:
            return client.notify_set(mailboxes, b"MessageNew MessageExpunge FlagChange MailboxName")
        except Exception as exc:
            if command_refused(exc) is None:
                raise
            log.info("account=%s NOTIFY refused (%s); checking with STATUS", self.account_id, exc)
            return None

    def _status(self, client: BudgetedIMAPClient, mailbox: str, items: list[bytes]) -> Fingerprint:
        """The STATUS answer of ``mailbox``; None when refused (deleted meanwhile), so that the others
        are checked still, and the change is reported once."""
        try:
            status = client.folder_status(mailbox, items)
        except Exception as exc:
            if command_refused(exc) is None:
                raise
            return None
        return lines.known({item: status.get(item) for item in items})

    def follow(self, mailbox: str, learn: Callable[[dict[bytes, int]], None]) -> None:
        """Let ``learn`` update the fingerprint of ``mailbox`` (after a change it reports)."""
        with self.hub.lock:
            fingerprint = self.fingerprints.get(mailbox)
            if fingerprint is not None:
                had = fingerprint.keys() & _FLAG_ITEMS
                learn(fingerprint)
                if fingerprint.keys() & _FLAG_ITEMS:
                    self.uncertain.discard(mailbox)  # a MODSEQ just told: exact again
                elif had:
                    self.uncertain.add(mailbox)

    def _ready(self, mailboxes: list[str]) -> None:
        """The connection has seen ``mailboxes``: their watches are ready (see :attr:`Watch.ready`)."""
        with self.hub.lock:
            for mailbox in mailboxes:
                for watch in self.watches.get(mailbox, ()):
                    watch.ready.set()

    def _back(self, mailboxes: list[str]) -> None:
        """The connection works (again): after a failure, report its mailboxes once."""
        self.failures, self.told_missing = 0, False
        if self.recovering:
            self.recovering = False
            self._notify(mailboxes)

    def _wait(self, version: int) -> bool:
        """Sleep ``poll_interval_s``; False as soon as the plan made at ``version`` no longer holds."""
        return self._sleep(self.hub.settings.poll_interval_s, lambda: self._current(version))

    def _sleep(self, seconds: float, holds: Callable[[], bool]) -> bool:
        return sleep_on(self.hub.clock, self.hub.pause, self.stopping, seconds, TICK_S, holds)

    def _notify(self, mailboxes: Iterable[str]) -> None:
        for mailbox in mailboxes:
            with self.hub.lock:
                listeners = [watch.listener for watch in self.watches.get(mailbox, ())]
            for listener in listeners:
                try:
                    listener()
                except Exception:
                    log.warning("account=%s a watch listener failed", self.account_id, exc_info=True)

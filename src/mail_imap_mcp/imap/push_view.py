"""Every mailbox's counts as a NOTIFY connection (RFC 5465) was told them: one ``NOOP`` on it stands in for
a ``STATUS`` of every folder (docs/index.md, "Freshness from push").

A :class:`PushView` holds a connection of its own, which selects nothing. Set up, it asks ``NOTIFY SET
(personal (MessageNew MessageExpunge FlagChange MailboxName))`` with CONDSTORE enabled, lists the
mailboxes and asks the STATUS of each (MESSAGES, UIDNEXT, UIDVALIDITY, HIGHESTMODSEQ), all in one round
trip. Afterwards the server tells it of every change of those mailboxes as untagged STATUS responses,
each carrying the items the change moved; they are merged into the counts in the order they came, so
the counts are always what the last response said (those told between two calls are read before the
next, :meth:`PushView._drain`). :meth:`PushView.listing` sends one ``NOOP``: Dovecot
flushes its pending notifications on NOOP (``cmd_noop`` calls ``imap_notify_flush``: it looks at the
mailbox list index's log and INBOX's at once instead of after its half-second delay), so when NOOP is
answered the counts are the server's for every change it had made before, whichever client made it
(``scripts/push_flush``: thousands of appends, flag changes, expunges and moves, none missed). A message
file written into the server's store behind its back (an MDA writing the Maildir itself) is not told
until the server looks at that folder: that is why the index trusts the view only where its setting
says that all mail reaches the mailboxes through the server.

Silence is never proof: Dovecot 2.3.19 tells a NOTIFY connection nothing at all of mail added, expunged
or flagged in a folder other than INBOX when a folder is created and deleted within its half-second delay
(issue 56). So the view vouches for its counts only :data:`RECHECK_S` seconds after a LIST and a STATUS
of every folder on its connection (:attr:`PushView.clock` times it); the first listing past that time
asks them again (:attr:`PushView.rechecks`) instead of sending NOOP.

A mailbox created, deleted or renamed (a LIST response), a notification overflow, a refused command or a
lost connection ends the view: the next call sets it up again (the listing then comes from that set-up,
as a STATUS of every folder would), and the caller asks the server itself meanwhile.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from mail_imap_mcp.imap import parsing
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.mailboxes import list_mailboxes
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.imap.wire import BudgetedIMAPClient
from mail_imap_mcp.mail.freshness import RECHECK_S
from mail_imap_mcp.mail.mailboxes import MailboxCounts, MailboxInfo

log = logging.getLogger("mail_imap_mcp.imap.push_view")

#: The events the view asks to be told of, for every mailbox of the personal namespace.
EVENTS = b"MessageNew MessageExpunge FlagChange MailboxName"
#: The STATUS items the counts hold (each reported change carries those it moved).
ITEMS = (b"MESSAGES", b"UIDNEXT", b"UIDVALIDITY", b"HIGHESTMODSEQ")
#: Untagged responses that end the view: the server dropped notifications (RFC 5465 section 5.8).
OVERFLOW = "NOTIFICATIONOVERFLOW"


@dataclass(frozen=True)
class PushListing:
    """What :meth:`PushView.listing` answers: every mailbox, with the counts the view vouches for."""

    boxes: list[MailboxInfo]
    #: Seconds since the LIST and STATUS of every folder the counts start from (0: asked by this call);
    #: what the server told since stands in for the rest.
    checked_s_ago: float


@dataclass
class _State:
    """What the view knows: the listing it was set up with and each mailbox's items, as last told."""

    logins: int
    #: The connection's client the view was set up on (read between calls by :meth:`PushView._drain`).
    client: BudgetedIMAPClient
    boxes: list[MailboxInfo]
    #: When the LIST and STATUS of every folder the counts start from were asked (on the view's clock).
    checked: float
    values: dict[str, dict[bytes, int]] = field(default_factory=dict)
    #: Mailboxes outside the personal namespace: NOTIFY does not tell their changes.
    outside: set[str] = field(default_factory=set)


class PushView:
    """One account's NOTIFY connection and the counts it was told. Thread-safe."""

    def __init__(
        self,
        connection: AccountConnection,
        *,
        recheck_s: float = RECHECK_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._connection = connection
        self.recheck_s = recheck_s
        #: What :attr:`recheck_s` is timed by (a test moves its own).
        self.clock = clock
        #: Prefixes of the namespaces NOTIFY's ``personal`` leaves out (other users', shared), once set up.
        self._outside_prefixes: list[str] = []
        self._lock = threading.Lock()
        self._state: _State | None = None
        #: False once the server turned out not to offer NOTIFY with CONDSTORE: the view is never used.
        self.offered = True
        #: Set-ups (the first, and each after the view ended), and NOOPs answered on a live view.
        self.setups = 0
        self.flushes = 0
        #: LISTs and STATUS of every folder asked again on a live view, its time to vouch over.
        self.rechecks = 0

    def listing(self) -> PushListing | None:
        """Every mailbox with the counts of those the view covers (MESSAGES, UIDNEXT, UIDVALIDITY and
        HIGHESTMODSEQ as the server has them now; ``counts`` None where it does not know them all), after
        one NOOP on a live view, or after setting it up; None when it cannot vouch (not offered, its
        connection lost or refused, another search using it)."""
        if not self.offered or not self._lock.acquire(blocking=False):
            return None
        try:
            self._drain()
            listing = self._connection.run(self._look, retry=False)
            if not self.offered:
                self._connection.close()  # after run(), which holds the connection's lock
            return listing
        except Exception as exc:  # refused, lost, timed out: the caller asks the server itself
            log.info(
                "account=%s push view ended (%s: %s)", self._connection.account_id, type(exc).__name__, exc
            )
            self._end()
            return None
        finally:
            self._lock.release()

    def close(self) -> None:
        with self._lock:
            self._state = None
            self._connection.close()

    def _end(self) -> None:
        self._state = None
        self._connection.discard()

    def _look(self, session: ImapSession) -> PushListing | None:
        profile = session.profile
        if not (profile.notifies and profile.condstore and profile.namespaces):
            self.offered = False
            return None
        state = self._state
        if state is None or state.logins != self._connection.logins:
            state = self._state = self._set_up(session)
            self.setups += 1
        elif self.clock() - state.checked >= self.recheck_s:
            state = self._state = self._check(session)
            self.rechecks += 1
        else:
            typ = session.client.keepalive_noop()
            if typ != "OK" or not self._take_told(session, state):
                self._end()
                return None
            self.flushes += 1
        if state is None:  # a mailbox created or deleted meanwhile: the search asks the server
            return None
        boxes = [
            MailboxInfo(
                box.name,
                box.delimiter,
                list(box.attributes),
                box.special_use,
                box.selectable,
                _counts(state, box),
            )
            for box in state.boxes
        ]
        return PushListing(boxes, max(self.clock() - state.checked, 0.0))

    def _set_up(self, session: ImapSession) -> _State | None:
        """ENABLE CONDSTORE, NOTIFY SET, NAMESPACE, then :meth:`_check`."""
        client = session.client
        client.enable("CONDSTORE")
        client.notify_personal(EVENTS)
        for name in ("STATUS", "LIST", OVERFLOW):
            client.untagged.pop(name, None)
        # NOTIFY's ``personal`` covers the personal namespace alone: mailboxes of the others (other users',
        # shared) are left without counts, asked with STATUS by the search.
        namespaces = client.namespace()
        self._outside_prefixes = [
            parsing.as_text(entry[0]) or ""
            for group in (namespaces.other, namespaces.shared)
            for entry in group or ()
        ]
        return self._check(session)

    def _check(self, session: ImapSession) -> _State | None:
        """LIST, then a STATUS of every selectable mailbox (pipelined in one round trip): the counts the view
        vouches for until :attr:`recheck_s` has passed. None when the view must end."""
        client = session.client
        checked = self.clock()
        boxes = list_mailboxes(session)
        state = _State(self._connection.logins, client, boxes, checked)
        prefixes = self._outside_prefixes
        state.outside = {box.name for box in boxes if any(box.name.startswith(prefix) for prefix in prefixes)}
        items = b"(" + b" ".join(ITEMS) + b")"
        tags = [
            client.send("STATUS", client.mailbox_argument(box.name), items) for box in boxes if box.selectable
        ]
        session.note_pipelined(max(len(tags) - 1, 0))
        for tag in tags:
            client.answer_of("STATUS", tag)  # a mailbox refused is left without counts: not vouched for
        return state if self._take_told(session, state) else None

    def _take_told(self, session: ImapSession, state: _State) -> bool:
        """Merge the STATUS responses imaplib received, in the order they came; False when the view must
        end (a mailbox created, deleted or renamed, a notification overflow, a response it cannot read)."""
        untagged = session.client.untagged
        if untagged.pop(OVERFLOW, None) is not None:
            return False
        told = [
            prefix + rest if isinstance(rest, bytes) else b""
            for name, prefix in (("LIST", b"* LIST "), ("STATUS", b"* STATUS "))
            for rest in untagged.pop(name, None) or ()
        ]
        return all(_merge(session.client, state, line) for line in told)

    def _drain(self) -> None:
        """Read what the server told the live view since its last command, before the connection is used:
        over TLS, the connection's idle check would take that data for a closed connection (and the
        view would be set up again). The view ends where a line says so, or cannot be read."""
        state = self._state
        if state is None or state.logins != self._connection.logins:
            return
        client = state.client
        try:
            while client.input_waiting(0):
                line = client.read_response_line()
                if line.upper().startswith((b"* BYE", b"* OK [NOTIFICATIONOVERFLOW")) or line.endswith(b"}"):
                    self._end()
                    return
                if not _merge(client, state, line):
                    self._end()
                    return
        except Exception:  # a dead connection: set up again by the call that follows
            self._end()


def _merge(client: BudgetedIMAPClient, state: _State, line: bytes) -> bool:
    """Merge one ``* STATUS`` line into ``state`` (any other line told says nothing the view keeps);
    False for a ``* LIST`` of a mailbox created, deleted or renamed, or a line it cannot read."""
    upper = line.upper()
    if upper.startswith(b"* LIST "):
        # A listing of a mailbox known and still there says nothing new (Dovecot lists some unasked).
        name = client.listed_name(line)
        return (
            name is not None and name in {box.name for box in state.boxes} and b"\\NONEXISTENT" not in upper
        )
    if not upper.startswith(b"* STATUS "):
        return bool(line)
    mailbox, values = client.notified_mailbox(line), client.status_values(line)
    if mailbox is None or values is None:
        return False
    state.values.setdefault(mailbox, {}).update(values)
    return True


def _counts(state: _State, box: MailboxInfo) -> MailboxCounts | None:
    values = state.values.get(box.name)
    if (
        not box.selectable
        or box.name in state.outside
        or values is None
        or any(item not in values for item in ITEMS)
    ):
        return None
    return MailboxCounts(
        messages=values[b"MESSAGES"],
        unseen=None,
        uidvalidity=values[b"UIDVALIDITY"],
        uidnext=values[b"UIDNEXT"],
        highestmodseq=values[b"HIGHESTMODSEQ"],
    )

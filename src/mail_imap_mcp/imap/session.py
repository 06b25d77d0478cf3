"""One logged-in connection, borrowed by a call from its account's
:class:`~mail_imap_mcp.imap.connection.AccountConnection`: :class:`ImapSession`.

The session holds the selected mailbox's view: EXAMINE and SELECT, the revalidation of a selection
left by an earlier call (NOOP + STATUS, pipelined with the call's next command), an EXAMINE sent ahead
of the command that reads the mailbox, and the reading of those answers after that command's
(``settle``); and a command that changes mail is never retried (``write_command``). The command families
live in modules of their own, which :class:`ImapSession` inherits, so a caller asks the session for
each: searches (:mod:`.session_search`: SEARCH, SORT, THREAD), reads (:mod:`.session_fetch`: FETCH) and
writes (:mod:`.session_writes`). Each is sent only where the server's profile
(:mod:`.personality`) offers its extension. The protocol's bytes and imaplib's internals stay in
:mod:`mail_imap_mcp.imap.wire`.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.imap import parsing, view, wire
from mail_imap_mcp.imap.errors import (
    SelectionStale,
    ServerRefused,
    is_connection_broken,
    rejects_charset,
    says_mailbox_missing,
    server_said,
)
from mail_imap_mcp.imap.personality import Personality, Profile
from mail_imap_mcp.imap.session_fetch import FetchCommands
from mail_imap_mcp.imap.session_search import SearchCommands
from mail_imap_mcp.imap.session_writes import WriteCommands
from mail_imap_mcp.imap.summary_cache import SummaryCache
from mail_imap_mcp.imap.view import MailboxState
from mail_imap_mcp.imap.wire import BudgetedIMAPClient
from mail_imap_mcp.mail.errors import (
    CharsetRejected,
    MailboxGone,
    MailboxMissing,
    OutcomeUnknown,
    UidValidityChanged,
)


@dataclass
class _Revalidation:
    noop_tag: bytes
    status_tag: bytes
    state: MailboxState


@dataclass
class _Examination:
    """An EXAMINE (or a SELECT) sent ahead of the command that reads the mailbox (see
    :meth:`ImapSession.examine_ahead`)."""

    tag: bytes
    mailbox: str
    #: The UIDVALIDITY the caller's command relies on (None: any).
    uidvalidity: int | None
    #: EXAMINE; else SELECT (:meth:`ImapSession.select_ahead`).
    readonly: bool = True


class SessionOwner(Protocol):
    """What a session needs of the connection it runs on (:class:`.connection.AccountConnection`)."""

    account_id: str
    config: AccountConfig
    summaries: SummaryCache
    profile: Profile
    personality: Personality
    selected: MailboxState | None
    pipelined_commands: int
    writes_sent: int

    def connect(self) -> BudgetedIMAPClient: ...

    def discard(self) -> None: ...


class ImapSession(SearchCommands, FetchCommands, WriteCommands):
    """A logged-in connection, borrowed for one call. It keeps the selected mailbox's view: EXAMINE
    (:meth:`examine`, or :meth:`examine_ahead` sent with the next command), SELECT for a write
    (:meth:`select`), a selection left by an earlier call revalidated by UIDVALIDITY and UIDNEXT, the
    counts the server reports unasked (:meth:`refresh_counts`), and a pending revalidation's or
    EXAMINE's answer read after the command sent behind it (:meth:`settle`; :class:`SelectionStale`
    when the view changed under it). It leaves the mailbox (:meth:`deselect`), replaces a connection the
    server closed (:meth:`reopen`), and sends a command that changes mail at most once
    (:meth:`write_command`).

    The commands themselves are inherited: UID SEARCH, SORT and THREAD (:class:`.SearchCommands`), UID
    FETCH (:class:`.FetchCommands`), and the commands that change mail (:class:`.WriteCommands`), each
    sent only where the server's profile offers its extension, with search terms always quoted or sent
    as literals, never as atoms: callers never build protocol syntax themselves.
    """

    def __init__(
        self,
        owner: SessionOwner,
        client: BudgetedIMAPClient,
        *,
        pipeline: bool = True,
        current: str | None = None,
    ) -> None:
        self._owner = owner
        self._client = client
        self._pipeline = pipeline
        # The mailbox this call has EXAMINEd or revalidated; a selection left by an earlier call is stale.
        self._examined: str | None = current
        # A revalidation or EXAMINE sent but not yet answered: it rides along with the call's next command.
        self._pending: _Revalidation | _Examination | None = None

    @property
    def client(self) -> BudgetedIMAPClient:
        """The imapclient connection, with any pending revalidation answered first."""
        self.settle()
        return self._client

    @property
    def capabilities(self) -> frozenset[str]:
        return self._owner.profile.capabilities

    @property
    def account_id(self) -> str:
        return self._owner.account_id

    @property
    def profile(self) -> Profile:
        """What the server offers, as named facts (:class:`~mail_imap_mcp.imap.personality.Profile`)."""
        return self._owner.profile

    @property
    def personality(self) -> Personality:
        """How the server means what it says (:class:`~mail_imap_mcp.imap.personality.Personality`)."""
        return self._owner.personality

    @property
    def qresync(self) -> bool:
        """Whether QRESYNC (RFC 7162) is enabled on this connection (see :class:`.connection.AccountConnection`);
        ask after a command, which brought the answer of the ENABLE sent with it."""
        return self._client.enabled("QRESYNC")

    @property
    def own_addresses(self) -> frozenset[str]:
        """The account's own addresses, lower-cased (``AccountConfig.own_addresses``)."""
        return self._owner.config.own_addresses

    @property
    def summary_cache(self) -> SummaryCache:
        """The account's parsed summaries of messages already seen (see :mod:`.summary_cache`)."""
        return self._owner.summaries

    def examine(self, mailbox: str) -> MailboxState:
        """Select ``mailbox`` read-only (EXAMINE) with a view as fresh as the start of this call.

        Servers differ in when they tell a session about changes: Courier only on NOOP or SELECT,
        Dovecot a command late, Cyrus not at all when the mailbox was deleted and recreated. A new
        EXAMINE is fresh on all of them but costly on a large mailbox (about 100 ms for 100,000
        messages on Dovecot), so a selection left by an earlier call is revalidated instead, once per
        call: ``NOOP`` (every server then reports new and expunged messages to this session) and
        ``STATUS (UIDVALIDITY UIDNEXT)``, which asks the mailbox itself and so reveals one deleted, or
        deleted and recreated, under the session. Both are pipelined with the call's next SEARCH; if
        their answer shows that the mailbox changed, the SEARCH may have run on the old view (Dovecot
        runs pipelined commands in parallel), so :meth:`settle` raises :class:`SelectionStale` and the
        connection runs the read again, this time without pipelining (``pipeline=False``). Within a
        call the selection is reused, with the EXISTS/EXPUNGE updates seen since.
        """
        if isinstance(self._pending, _Examination):
            self.settle()
        state = self._owner.selected
        if state is not None and state.name == mailbox and state.readonly:
            if self._examined == mailbox:
                return self.refresh_counts(state)
            self._send_revalidation(state)
            self._examined = mailbox
            if self._pipeline:
                return state
            with contextlib.suppress(SelectionStale):
                self.settle()
                return self.refresh_counts(state)
        return self._open(mailbox, readonly=True)

    def examine_ahead(self, mailbox: str, *, uidvalidity: int | None = None) -> None:
        """Select ``mailbox`` read-only for the next command, sending EXAMINE with that command.

        Where the mailbox is not this call's selection already (or the earlier call's, which
        :meth:`examine` revalidates, pipelined too), EXAMINE is sent now and answered together with the
        next read on the mailbox (SEARCH, SORT, FETCH; sent without a literal), one round trip for both.
        Its answer is read after that command's: when EXAMINE failed (:class:`MailboxMissing`) or found
        another UIDVALIDITY than ``uidvalidity`` (:class:`UidValidityChanged`), that command's answer is
        discarded and the error raised in its place. One EXAMINE at a time is in flight, so the
        untagged answers (EXISTS, UIDVALIDITY, FETCH) cannot be taken for another command's. Afterwards
        :meth:`examine` gives the mailbox's state without a round trip.
        """
        state = self._owner.selected
        if not self._pipeline or (state is not None and state.name == mailbox and state.readonly):
            state = self.examine(mailbox)
            if uidvalidity is not None and state.uidvalidity != uidvalidity:
                raise UidValidityChanged(uidvalidity, state.uidvalidity)
            return
        client = self.client  # answers anything still pending first: one EXAMINE in flight at most
        self.forget_selection()
        tag = client.send_selection(mailbox)  # the next command is sent before EXAMINE is answered
        self._pending = _Examination(tag, mailbox, uidvalidity)

    def select_ahead(self, mailbox: str, *, uidvalidity: int) -> None:
        """Select ``mailbox`` read-write for a write, sending SELECT with the next read (a UID SEARCH of
        the UIDs to change): one round trip for both, in a write's session too, where nothing else is
        pipelined (nothing here asks for a run again). Its answer is read after that command's, and the
        read's answer discarded where SELECT failed (:class:`MailboxMissing`) or found another
        UIDVALIDITY (:class:`UidValidityChanged`), as :meth:`examine_ahead`'s; nothing that writes is
        sent before it is read (every write takes :attr:`client`, which reads it first)."""
        client = self.client
        self.forget_selection()
        tag = client.send_selection(mailbox, readonly=False)
        self._pending = _Examination(tag, mailbox, uidvalidity, readonly=False)

    def select(self, mailbox: str, *, uidvalidity: int | None = None) -> MailboxState:
        """Select ``mailbox`` read-write for a write: always a new SELECT, so the write acts on the
        mailbox as it is; with ``uidvalidity``, :class:`UidValidityChanged` when it is not that one."""
        state = self._open(mailbox, readonly=False)
        if uidvalidity is not None and state.uidvalidity != uidvalidity:
            raise UidValidityChanged(uidvalidity, state.uidvalidity)
        return state

    def _open(self, mailbox: str, *, readonly: bool) -> MailboxState:
        client = self.client
        try:
            with wire.answers_typed():
                response = client.select_folder(mailbox, readonly=readonly)
        except ServerRefused as exc:
            if is_connection_broken(exc):
                raise
            self.forget_selection()
            raise MailboxMissing(mailbox, "EXAMINE" if readonly else "SELECT", server_said(exc)) from None
        state = self._selected(mailbox, response, readonly=readonly)
        view.consumed_by_selection(client.untagged)
        return state

    def _selected(self, mailbox: str, response: dict[bytes, Any], *, readonly: bool) -> MailboxState:
        """The selection that a SELECT or EXAMINE answer describes, now the session's."""
        state = MailboxState(
            name=mailbox,
            uidvalidity=int(response.get(b"UIDVALIDITY", 0)),
            uidnext=int(response.get(b"UIDNEXT", 0)),
            exists=int(response.get(b"EXISTS", 0)),
            readonly=readonly,
            permanent_flags=parsing.permanent_flags(response.get(b"PERMANENTFLAGS")),
            modseqs=b"NOMODSEQ" not in response,
        )
        self._owner.selected = state
        self._examined = mailbox
        return state

    @contextmanager
    def write_command(self, uids: Sequence[int] = ()) -> Iterator[None]:
        """Send one command that changes mail. It is never retried: when the connection dies after it
        was sent, :class:`OutcomeUnknown` (for ``uids``) says the change may or may not have happened."""
        self._owner.writes_sent += 1
        try:
            yield
        except Exception as exc:
            if not is_connection_broken(exc) and not isinstance(exc, TimeoutError):
                raise
            self._owner.discard()
            raise OutcomeUnknown(list(uids), timed_out=isinstance(exc, TimeoutError)) from exc

    def _send_revalidation(self, state: MailboxState) -> None:
        client = self._client
        noop_tag = client.send("NOOP")
        status_tag = client.send("STATUS", client.mailbox_argument(state.name), b"(UIDVALIDITY UIDNEXT)")
        self._pending = _Revalidation(noop_tag, status_tag, state)

    def settle(self, *, pipelined: bool = False) -> None:
        """Read the answer to a pending revalidation; raise :class:`SelectionStale` if the view is stale.

        ``pipelined``: a command was sent behind the revalidation and has been answered, so reading
        the revalidation's answer costs no round trip of its own; it also raises
        :class:`SelectionStale` when the mailbox changed, as that command may have missed the change.
        """
        pending, self._pending = self._pending, None
        if pending is None:
            return
        if isinstance(pending, _Examination):
            self._settle_examination(pending, pipelined=pipelined)
            return
        self._owner.pipelined_commands += 2 if pipelined else 1
        client = self._client
        noop, _ = client.answer_of("NOOP", pending.noop_tag)
        status, _ = client.answer_of("STATUS", pending.status_tag)
        untagged = client.untagged
        answer = b" ".join(
            part for item in untagged.pop("STATUS", []) for part in parsing.response_bytes(item)
        )
        # Flag changes reported by NOOP: nothing here tracks flags, and a later FETCH must not take them
        # (imapclient would key one without a UID by its sequence number).
        untagged.pop("FETCH", None)
        # Dovecot answers STATUS of the selected mailbox from the session's view, old UIDVALIDITY
        # included, but warns with an untagged NO on NOOP once the mailbox under the view is gone.
        warned = untagged.pop("NO", None) or untagged.pop("BAD", None)
        uidvalidity = re.search(rb"UIDVALIDITY (\d+)", answer)
        if (
            warned
            or (noop, status) != ("OK", "OK")
            or uidvalidity is None
            or int(uidvalidity.group(1)) != pending.state.uidvalidity
        ):
            self.forget_selection()
            raise SelectionStale()
        uidnext = re.search(rb"UIDNEXT (\d+)", answer)
        if uidnext is not None:
            pending.state.uidnext = max(pending.state.uidnext, int(uidnext.group(1)))
        if pipelined:
            expunged = view.removals_queued(untagged)
            before = pending.state.exists
            if expunged or self.refresh_counts(pending.state).exists != before:
                raise SelectionStale()

    def _settle_examination(self, pending: _Examination, *, pipelined: bool) -> None:
        """Read the answer to an EXAMINE sent ahead; the command sent behind it counts only if it is OK."""
        self._owner.pipelined_commands += 1 if pipelined else 0
        client = self._client
        command = "EXAMINE" if pending.readonly else "SELECT"
        typ, _ = client.answer_of(command, pending.tag)
        if typ != "OK":
            client.note_unselected()
            raise MailboxMissing(pending.mailbox, command)
        state = self._selected(pending.mailbox, client.select_answer(), readonly=pending.readonly)
        self.refresh_counts(state)  # with what came after EXAMINE's answer, as for any selection
        if pending.uidvalidity is not None and state.uidvalidity != pending.uidvalidity:
            raise UidValidityChanged(pending.uidvalidity, state.uidvalidity)

    def view_changed(self, noop_tag: bytes) -> bool:
        """Read the answer of a NOOP sent on the selected mailbox with other commands: whether it told
        of a change under the view (messages new or removed, flags, a warning that the mailbox is gone,
        a refusal). The view's count takes the news either way."""
        client = self._client
        typ, _ = client.answer_of("NOOP", noop_tag)
        untagged = client.untagged
        warned = untagged.pop("NO", None) or untagged.pop("BAD", None)
        flags = untagged.pop("FETCH", None)  # as in settle(): a later FETCH must not take them
        state = self._owner.selected
        if state is None or typ != "OK" or warned or flags or view.removals_queued(untagged):
            if state is not None:
                self.refresh_counts(state)
            return True
        before = state.exists
        return self.refresh_counts(state).exists != before

    def adopt_sent_examine(self, mailbox: str, tag: bytes) -> MailboxState | None:
        """Read the answer of an EXAMINE of ``mailbox`` sent with other commands
        (:meth:`~.wire.BudgetedIMAPClient.send_examine`): the session's selection now, or None when the
        server refused it (nothing is selected then)."""
        client = self._client
        typ, _ = client.answer_of("EXAMINE", tag)
        if typ != "OK":
            client.note_unselected()
            self.forget_selection()
            return None
        return self.refresh_counts(self._selected(mailbox, client.select_answer(), readonly=True))

    def forget_selection(self) -> None:
        self._owner.selected = None
        self._examined = None

    def note_pipelined(self, commands: int) -> None:
        """Count ``commands`` sent behind another, without a wait of their own (:mod:`.pipeline`)."""
        self._owner.pipelined_commands += commands

    def adopt_examined(self, mailbox: str, answer: dict[bytes, Any]) -> MailboxState:
        """Make ``mailbox`` the selection a pipelined EXAMINE's parsed ``answer`` describes (:mod:`.pipeline`)."""
        return self._selected(mailbox, answer, readonly=True)

    @property
    def selected_mailbox(self) -> str | None:
        """The mailbox this connection has selected (by this call or an earlier one), if any."""
        return None if self._owner.selected is None else self._owner.selected.name

    @property
    def examined_now(self) -> str | None:
        """The mailbox this call has EXAMINEd (or revalidated) and still has selected: its view is of now."""
        return self._examined if self._examined == self.selected_mailbox else None

    def deselect(self) -> None:
        """Leave the selected mailbox, so STATUS of it is answered from the mailbox, not a stale view:
        UNSELECT where advertised, else CLOSE, which expunges nothing after EXAMINE (RFC 3501 6.4.2), so
        a read-write selection is first EXAMINEd."""
        state = self._owner.selected
        if state is None:
            return
        if self.profile.unselects:
            self.client.unselect_folder()
        else:
            if not state.readonly:  # CLOSE of a read-write selection would expunge
                self.client.select_folder(state.name, readonly=True)
            self.client.close_folder()
        self.forget_selection()

    def reopen(self, mailbox: str) -> MailboxState:
        """Replace a connection the server closed mid-call with a fresh one, and re-select ``mailbox``:
        a multi-item operation skips an item that makes the server drop the connection (Dovecot
        disconnects when it cannot read a stored message) and carries on with the rest."""
        self._owner.discard()
        self._pending = None
        self._client = self._owner.connect()
        return self.examine(mailbox)

    def refresh_counts(self, state: MailboxState) -> MailboxState:
        """Apply the EXISTS, EXPUNGE and VANISHED updates the server sent with earlier responses."""
        return view.apply_updates(self._client.untagged, state)

    @contextmanager
    def _selected_mailbox_errors(self) -> Iterator[None]:
        """Run a command on the selected mailbox (possibly pipelined behind a revalidation).

        Settles the revalidation after it; "mailbox does not exist" from the server is a conflict.
        """
        try:
            with wire.answers_typed():
                yield
        except ServerRefused as exc:
            self.settle(pipelined=True)
            if rejects_charset(exc):
                raise CharsetRejected() from None
            state = self._owner.selected
            if state is None or not says_mailbox_missing(exc):
                raise
            self.forget_selection()
            raise MailboxGone(self._owner.account_id, state.name) from None
        self.settle(pipelined=True)

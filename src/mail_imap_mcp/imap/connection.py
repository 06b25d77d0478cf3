"""Long-lived IMAP connections: one per account, reused, serialised, and re-established on demand.

Reads run through :meth:`AccountConnection.run`, which hands the caller a live
:class:`ImapSession`. When the server has dropped the connection (idle logout, reset,
restart) the read is retried once on a fresh connection, so the caller sees success. Every
failure leaves as a :class:`~mail_imap_mcp.envelope.ToolFailure` with a registry code.

Every call has one time budget, ``connect_timeout_s + command_timeout_s`` (plus the retry's pause):
waiting for the account, connecting, each command and the retry all draw on it, and every blocking
socket operation gets at most what is left (see :class:`CallBudget` and docs/reliability.md).
"""

from __future__ import annotations

import contextlib
import imaplib
import itertools
import logging
import math
import re
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from imapclient import IMAPClient
from imapclient.exceptions import IMAPClientError
from imapclient.imapclient import _literal, join_message_ids, seq_to_parenstr_upper
from imapclient.response_parser import parse_fetch_response, parse_response
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from mail_imap_mcp.config import AccountConfig, Security
from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.imap.auth import Login
from mail_imap_mcp.imap.errors import (
    CharsetRejected,
    ConnectionLost,
    ConnectPhase,
    ConnectProgress,
    OutcomeUnknown,
    SelectionStale,
    UidValidityChanged,
    account_busy,
    connect_failure,
    connection_lost,
    destination_not_found,
    extension_missing,
    is_connection_broken,
    login_disabled,
    mailbox_not_found,
    mailbox_vanished,
    rejects_charset,
    says_mailbox_missing,
    starttls_missing,
    timed_out,
    write_refused,
)
from mail_imap_mcp.imap.summary_cache import SummaryCache
from mail_imap_mcp.imap.uidplus import (
    CopyUid,
    MalformedUidSet,
    format_uid_set,
    parse_copyuids,
    parse_uid_set,
)

log = logging.getLogger("mail_imap_mcp.imap")

T = TypeVar("T")

#: Pause before the one retry of a read whose connection died; added to the call's budget.
RETRY_BACKOFF_S = 0.2
# Large literals are read in pieces of this size, with the call's deadline checked before each.
_READ_CHUNK = 64 * 1024


@dataclass
class MailboxState:
    """What EXAMINE (``readonly``) or SELECT told us about the selected mailbox."""

    name: str
    uidvalidity: int
    uidnext: int
    exists: int
    readonly: bool = True
    #: PERMANENTFLAGS of the SELECT answer (``\\*``: new keywords allowed); None when the server sent none.
    permanent_flags: frozenset[str] | None = None


@dataclass
class _Revalidation:
    noop_tag: bytes
    status_tag: bytes
    state: MailboxState


@dataclass
class _Examination:
    """An EXAMINE sent ahead of the command that reads the mailbox (see :meth:`ImapSession.examine_ahead`)."""

    tag: bytes
    mailbox: str
    #: The UIDVALIDITY the caller's command relies on (None: any).
    uidvalidity: int | None


class ImapSession:
    """A logged-in connection, borrowed for one call. All methods are read-only.

    Wraps imapclient so callers never build protocol syntax themselves: search terms are
    always quoted or sent as literals, never as atoms.
    """

    def __init__(
        self,
        owner: AccountConnection,
        client: IMAPClient,
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
    def client(self) -> IMAPClient:
        """The imapclient connection, with any pending revalidation answered first."""
        self.settle()
        return self._client

    @property
    def capabilities(self) -> frozenset[str]:
        return self._owner.capabilities

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
        Its answer is read after that command's: when EXAMINE failed (``mailbox_not_found``) or found
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
        imap = client._imap
        self._forget_selection()
        imap.untagged_responses = {}  # as imaplib's select(): what is left belongs to the old view
        tag = imap._command("EXAMINE", client._normalise_folder(mailbox))
        # The next command is sent before EXAMINE is answered; imaplib checks the state it is sent in.
        imap.state, imap.is_readonly = "SELECTED", True
        self._pending = _Examination(tag, mailbox, uidvalidity)

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
            response = client.select_folder(mailbox, readonly=readonly)
        except IMAPClientError as exc:
            if is_connection_broken(exc):
                raise
            self._forget_selection()
            raise mailbox_not_found(mailbox) from None
        state = self._selected(mailbox, response, readonly=readonly)
        # SELECT/EXAMINE answered everything the server had queued for the old view.
        client._imap.untagged_responses.pop("EXPUNGE", None)
        return state

    def _selected(self, mailbox: str, response: dict[bytes, Any], *, readonly: bool) -> MailboxState:
        """The selection that a SELECT or EXAMINE answer describes, now the session's."""
        state = MailboxState(
            name=mailbox,
            uidvalidity=int(response.get(b"UIDVALIDITY", 0)),
            uidnext=int(response.get(b"UIDNEXT", 0)),
            exists=int(response.get(b"EXISTS", 0)),
            readonly=readonly,
            permanent_flags=_permanent_flags(response.get(b"PERMANENTFLAGS")),
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
            raise OutcomeUnknown(list(uids)) from exc

    def _send_revalidation(self, state: MailboxState) -> None:
        imap = self._client._imap
        noop_tag = imap._command("NOOP")
        status_tag = imap._command(
            "STATUS", self._client._normalise_folder(state.name), b"(UIDVALIDITY UIDNEXT)"
        )
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
        imap = self._client._imap
        try:
            noop, _ = imap._command_complete("NOOP", pending.noop_tag)
            status, _ = imap._command_complete("STATUS", pending.status_tag)
        except imaplib.IMAP4.error as exc:
            if is_connection_broken(exc) or isinstance(exc, imaplib.IMAP4.abort):
                raise
            noop = status = "BAD"
        answer = b" ".join(
            part for item in imap.untagged_responses.pop("STATUS", []) for part in _flatten(item)
        )
        # Flag changes reported by NOOP: nothing here tracks flags, and a later FETCH must not take them
        # (imapclient would key one without a UID by its sequence number).
        imap.untagged_responses.pop("FETCH", None)
        # Dovecot answers STATUS of the selected mailbox from the session's view, old UIDVALIDITY
        # included, but warns with an untagged NO on NOOP once the mailbox under the view is gone.
        warned = imap.untagged_responses.pop("NO", None) or imap.untagged_responses.pop("BAD", None)
        uidvalidity = re.search(rb"UIDVALIDITY (\d+)", answer)
        if (
            warned
            or (noop, status) != ("OK", "OK")
            or uidvalidity is None
            or int(uidvalidity.group(1)) != pending.state.uidvalidity
        ):
            self._forget_selection()
            raise SelectionStale()
        uidnext = re.search(rb"UIDNEXT (\d+)", answer)
        if uidnext is not None:
            pending.state.uidnext = max(pending.state.uidnext, int(uidnext.group(1)))
        if pipelined:
            expunged = "EXPUNGE" in imap.untagged_responses
            before = pending.state.exists
            if expunged or self.refresh_counts(pending.state).exists != before:
                raise SelectionStale()

    def _settle_examination(self, pending: _Examination, *, pipelined: bool) -> None:
        """Read the answer to an EXAMINE sent ahead; the command sent behind it counts only if it is OK."""
        self._owner.pipelined_commands += 1 if pipelined else 0
        imap = self._client._imap
        try:
            typ, _ = imap._command_complete("EXAMINE", pending.tag)
        except imaplib.IMAP4.error as exc:
            if is_connection_broken(exc) or isinstance(exc, imaplib.IMAP4.abort):
                raise
            typ = "BAD"
        if typ != "OK":
            imap.state = "AUTH"  # a failed EXAMINE leaves no mailbox selected (RFC 3501 6.3.1)
            raise mailbox_not_found(pending.mailbox)
        untagged = imap.untagged_responses
        state = self._selected(
            pending.mailbox, self._client._process_select_response(untagged), readonly=True
        )
        self.refresh_counts(state)  # with what came after EXAMINE's answer, as for any selection
        if pending.uidvalidity is not None and state.uidvalidity != pending.uidvalidity:
            raise UidValidityChanged(pending.uidvalidity, state.uidvalidity)

    def _forget_selection(self) -> None:
        self._owner.selected = None
        self._examined = None

    @property
    def selected_mailbox(self) -> str | None:
        """The mailbox this connection has selected (by this call or an earlier one), if any."""
        return None if self._owner.selected is None else self._owner.selected.name

    def deselect(self) -> None:
        """Leave the selected mailbox, so STATUS of it is answered from the mailbox, not a stale view.

        UNSELECT where advertised, else CLOSE, which expunges nothing after EXAMINE (RFC 3501 6.4.2), so
        a read-write selection is first EXAMINEd.
        """
        state = self._owner.selected
        if state is None:
            return
        if "UNSELECT" in self.capabilities:
            self.client.unselect_folder()
        else:
            if not state.readonly:  # CLOSE of a read-write selection would expunge
                self.client.select_folder(state.name, readonly=True)
            self.client.close_folder()
        self._forget_selection()

    def reopen(self, mailbox: str) -> MailboxState:
        """Replace a connection the server closed mid-call with a fresh one, and re-select ``mailbox``.

        Lets a multi-item operation skip an item that makes the server drop the connection
        (Dovecot disconnects when it cannot read a stored message) and carry on with the rest.
        """
        self._owner.discard()
        self._pending = None
        self._client = self._owner.connect()
        return self.examine(mailbox)

    def refresh_counts(self, state: MailboxState) -> MailboxState:
        """Apply EXISTS/EXPUNGE updates the server sent with earlier responses."""
        untagged = self._client._imap.untagged_responses
        expunged = untagged.pop("EXPUNGE", [])
        exists = untagged.pop("EXISTS", [])
        if exists:
            state.exists = int(exists[-1])
        elif expunged:
            state.exists = max(0, state.exists - len(expunged))
        return state

    def uid_search(self, criteria: list[bytes | str | int], *, charset: str | None = None) -> list[int]:
        """``UID SEARCH`` with criteria already tokenised; strings are quoted or sent as literals."""
        with self._selected_mailbox_errors():
            data = self._client._raw_command_untagged(b"SEARCH", _search_args(criteria, charset))
        return _search_uids(data)

    def uid_search_count(self, criteria: list[bytes | str | int], *, charset: str | None = None) -> int:
        """``UID SEARCH RETURN (COUNT)`` (RFC 4731) when supported, else the length of a full search."""
        if "ESEARCH" not in self.capabilities:
            return len(self.uid_search(criteria, charset=charset))
        args = [b"RETURN", b"(COUNT)", *_search_args(criteria, charset)]
        with self._selected_mailbox_errors():
            data = self._client._raw_command_untagged(b"SEARCH", args, response_name="ESEARCH")
        return _search_count(data)

    def uid_search_count_and(
        self, criteria: list[bytes | str | int], window: list[bytes | str | int]
    ) -> tuple[int, list[int]]:
        """The total of ``criteria`` (``RETURN (COUNT)``) and the UIDs matching ``window`` + ``criteria``,
        both commands sent at once (with a pending revalidation: one round trip for all four).

        Only for criteria without literals and without CHARSET (a literal waits for the server's
        continuation) and where ESEARCH is advertised; otherwise the two searches run one after the
        other."""
        tokens = _search_args(criteria, None)
        if "ESEARCH" not in self.capabilities or any(isinstance(t, _literal) for t in tokens):
            return self.uid_search_count(criteria), self.uid_search([*window, *criteria])
        client = self._client
        imap = client._imap
        with self._selected_mailbox_errors():
            tags = [
                imap._command("UID", "SEARCH", b"RETURN", b"(COUNT)", *tokens),
                imap._command("UID", "SEARCH", *_search_args(window, None), *tokens),
            ]
            answers: list[tuple[str, list[Any]] | imaplib.IMAP4.error] = []
            for tag in tags:  # both answers are read before either counts, so the stream stays in step
                try:
                    answers.append(imap._command_complete("SEARCH", tag))
                except imaplib.IMAP4.abort:
                    raise
                except imaplib.IMAP4.error as exc:
                    answers.append(exc)
            counted = imap.untagged_responses.pop("ESEARCH", [])
            found = imap.untagged_responses.pop("SEARCH", [])
            for answer in answers:
                if isinstance(answer, Exception):
                    raise answer
                client._checkok("search", *answer)
        return _search_count(counted), _search_uids(found)

    def uid_sort_by_date(self, criteria: list[bytes | str | int], *, charset: str | None = None) -> list[int]:
        """``UID SORT (REVERSE DATE)`` (RFC 5256): matching UIDs, newest sent date first.

        The server's sort key is the Date header in UTC, else INTERNALDATE; ties keep mailbox order.
        Only where the server advertises SORT (raises ``ValueError`` otherwise)."""
        data = self._rfc5256("SORT", "SORT", b"(REVERSE DATE)", criteria, charset)
        return [int(tok) for line in data if line for tok in line.split() if tok.isdigit()]

    def uid_thread_references(
        self, criteria: list[bytes | str | int], *, charset: str | None = None
    ) -> list[list[int]]:
        """``UID THREAD REFERENCES`` (RFC 5256) of the matching messages: one UID list per thread.

        Only where the server advertises THREAD=REFERENCES (raises ``ValueError`` otherwise)."""
        data = self._rfc5256("THREAD", "THREAD=REFERENCES", b"REFERENCES", criteria, charset)
        return [sorted(set(_leaves(tree, int))) for tree in parse_response([d for d in data if d])]

    def _rfc5256(
        self,
        command: str,
        capability: str,
        head: bytes,
        criteria: list[bytes | str | int],
        charset: str | None,
    ) -> list[Any]:
        """``UID SORT``/``UID THREAD`` with ``head`` (criteria or algorithm), the charset and the search keys."""
        if capability not in self.capabilities:
            raise ValueError(f"{capability} is not advertised by the server")
        args: list[bytes] = [head, (charset or "US-ASCII").encode("ascii")]
        args += [_encode_search_token(item, charset) for item in criteria or [b"ALL"]]
        with self._selected_mailbox_errors():
            data: list[Any] = self._client._raw_command_untagged(command.encode("ascii"), args)
        return data

    def fetch(self, uids: list[int], items: list[str]) -> dict[int, dict[bytes, Any]]:
        """``UID FETCH`` of ``items`` for ``uids`` (items must be PEEK/metadata: never sets \\Seen)."""
        return self.fetch_each([(uids, items)])

    def fetch_each(self, requests: Sequence[tuple[list[int], list[str]]]) -> dict[int, dict[bytes, Any]]:
        """One ``UID FETCH`` per ``(uids, items)`` request (PEEK/metadata items only), all sent before the
        first answer is read: one round trip for all. The UIDs of two requests must not overlap.

        Pipelined behind a pending revalidation: an unsolicited FETCH that the revalidation's NOOP
        brings (a flag change elsewhere) would mix with the answer, so the answer counts only when it
        holds exactly one response per message returned; otherwise :class:`SelectionStale` makes the
        call run again on the updated view, unpipelined.
        """
        requests = [(uids, items) for uids, items in requests if uids]
        if not requests:
            return {}
        behind_revalidation = self._pending is not None and self._pipeline
        commands = [(join_message_ids(uids), items) for uids, items in requests]
        wanted = [uid for uids, _ in requests for uid in uids]
        client = self._client if behind_revalidation else self.client
        return self._uid_fetch(client, commands, wanted, one_answer_each=behind_revalidation)

    def fetch_range(self, uids: Sequence[int], items: list[str]) -> dict[int, dict[bytes, Any]]:
        """``UID FETCH`` of ``items`` for ``uids`` sent as one compact UID set (``1:500,502``), for long
        lists (metadata or PEEK items only); answers for other UIDs are dropped."""
        wanted = sorted(set(uids))
        if not wanted:
            return {}
        return self._uid_fetch(self.client, [(format_uid_set(wanted), items)], wanted, one_answer_each=False)

    def _uid_fetch(
        self,
        client: IMAPClient,
        commands: list[tuple[str, list[str]]],
        wanted: list[int],
        *,
        one_answer_each: bool,
    ) -> dict[int, dict[bytes, Any]]:
        """Send every ``(uid set, items)`` UID FETCH, then read the answers: the responses for ``wanted``.

        ``one_answer_each`` (pipelined behind a revalidation): :class:`SelectionStale` unless the answer
        holds exactly one response per message returned (an unsolicited FETCH came with it otherwise).
        """
        imap = client._imap
        imap.untagged_responses.pop("FETCH", None)
        with self._selected_mailbox_errors():
            tags = [
                imap._command("UID", "FETCH", uid_set, seq_to_parenstr_upper(items))
                for uid_set, items in commands
            ]
            answers = [imap._command_complete("FETCH", tag) for tag in tags]
            for typ, data in answers:
                client._checkok("fetch", typ, data)
            _, data = imap._untagged_response(*answers[-1], "FETCH")
        parsed = parse_fetch_response(data, client.normalise_times, True)
        answer = {uid: parsed[uid] for uid in wanted if uid in parsed}
        if one_answer_each and sum(1 for item in data if _starts_fetch_response(item)) != len(answer):
            raise SelectionStale()
        return answer

    @contextmanager
    def _selected_mailbox_errors(self) -> Iterator[None]:
        """Run a command on the selected mailbox (possibly pipelined behind a revalidation).

        Settles the revalidation after it; "mailbox does not exist" from the server is a conflict.
        """
        try:
            yield
        except IMAPClientError as exc:
            if is_connection_broken(exc):
                raise
            self.settle(pipelined=True)
            if rejects_charset(exc):
                raise CharsetRejected() from None
            state = self._owner.selected
            if state is None or not says_mailbox_missing(exc):
                raise
            self._forget_selection()
            raise mailbox_vanished(self._owner.account_id, state.name) from None
        self.settle(pipelined=True)

    # -- imap_manage_mailbox and imap_save_draft: NAMESPACE, CREATE, RENAME, DELETE, APPEND ----------
    # The tools send CREATE, RENAME, DELETE and APPEND inside write_command(): never retried.

    def personal_namespace(self) -> tuple[str, str | None]:
        """Prefix and separator of the personal namespace (RFC 2342): ``("INBOX.", ".")`` on Cyrus and
        Courier, ``("", "/")`` on Dovecot; ``("", None)`` where the server does not offer NAMESPACE."""
        if "NAMESPACE" not in self.capabilities:
            return "", None
        personal = self.client.namespace().personal or ()
        if not personal:
            return "", None
        prefix, separator = (_as_text(part) for part in personal[0])
        return prefix or "", separator

    def create_mailbox(self, mailbox: str) -> None:
        self.client.create_folder(mailbox)

    def rename_mailbox(self, mailbox: str, new_name: str) -> None:
        """RENAME (leave the mailbox first if this connection has it selected: :meth:`deselect`)."""
        self.client.rename_folder(mailbox, new_name)

    def delete_mailbox(self, mailbox: str) -> None:
        """DELETE (leave the mailbox first if this connection has it selected: :meth:`deselect`)."""
        self.client.delete_folder(mailbox)

    def append(self, mailbox: str, message: bytes, flags: Sequence[str]) -> tuple[int, int] | None:
        """APPEND ``message`` with ``flags``; ``(uidvalidity, uid)`` of the new message from APPENDUID
        where the server advertises UIDPLUS (RFC 4315), else None."""
        answer = self.client.append(mailbox, message, flags)
        if "UIDPLUS" not in self.capabilities:
            return None
        found = re.search(rb"\[APPENDUID (\d+) (\d+)\]", answer if isinstance(answer, bytes) else b"")
        return (int(found.group(1)), int(found.group(2))) if found else None

    # -- imap_apply_to_messages: UID COPY, UID MOVE, UID EXPUNGE of exactly the given UIDs ------------
    # The source is selected read-write (select) and the UIDs checked to exist in it; never retried.

    def uid_copy(self, uids: Sequence[int], destination: str) -> CopyUid | None:
        """``UID COPY`` to ``destination``; the COPYUID answer (UIDPLUS), ``None`` when there is none."""
        with self.write_command(uids):
            return self._copy_or_move("COPY", uids, destination)

    def uid_move(self, uids: Sequence[int], destination: str) -> CopyUid | None:
        """Move to ``destination``: ``UID MOVE`` (MOVE), else ``UID COPY``, ``\\Deleted`` and ``UID EXPUNGE``
        of exactly the copied UIDs (UIDPLUS), else refused: never a mailbox-wide EXPUNGE."""
        if "MOVE" not in self.capabilities and "UIDPLUS" not in self.capabilities:
            raise extension_missing("MOVE or UIDPLUS", "move messages")
        with self.write_command(uids):
            if "MOVE" in self.capabilities:
                return self._copy_or_move("MOVE", uids, destination)
            copied = self._copy_or_move("COPY", uids, destination)
            try:
                self._expunge_uids([uid for uid in uids if copied is None or uid in copied.new_uids])
            except ToolFailure as failure:
                raise ToolFailure(
                    failure.code,
                    f"{failure.message} The messages were copied to {destination!r} but are still in "
                    f"{self.selected_mailbox!r} as well.",
                    details=failure.details,
                    retryable=False,
                ) from None
            return copied

    def uid_expunge(self, uids: Sequence[int]) -> None:
        """Remove exactly ``uids`` for good: ``UID STORE +FLAGS.SILENT (\\Deleted)``, ``UID EXPUNGE``
        (UIDPLUS). Other messages marked ``\\Deleted`` stay."""
        if "UIDPLUS" not in self.capabilities:
            raise extension_missing("UIDPLUS", "remove exactly these messages (UID EXPUNGE)")
        with self.write_command(uids):
            self._expunge_uids(uids)

    def _copy_or_move(self, command: str, uids: Sequence[int], destination: str) -> CopyUid | None:
        client = self.client
        untagged = client._imap.untagged_responses
        untagged.pop("COPYUID", None)
        try:
            if command == "MOVE":
                client.move(format_uid_set(uids), destination)
            else:
                client.copy(format_uid_set(uids), destination)
        except IMAPClientError as exc:
            if is_connection_broken(exc):
                raise
            if says_mailbox_missing(exc):
                raise destination_not_found(destination) from None
            raise write_refused(exc, f"UID {command}", self.selected_mailbox or "") from None
        answers = untagged.pop("COPYUID", [])
        if "UIDPLUS" not in self.capabilities:
            return None  # Dovecot sends COPYUID even when told not to advertise UIDPLUS: not relied on
        try:
            copied = parse_copyuids(answers)
        except MalformedUidSet:
            log.warning("account=%s ignoring a malformed COPYUID answer", self._owner.account_id)
            return None
        if copied is None:
            return None
        wanted = set(uids)  # a server naming UIDs we did not send is ignored
        return CopyUid(copied.uidvalidity, {o: n for o, n in copied.new_uids.items() if o in wanted})

    def _expunge_uids(self, uids: Sequence[int]) -> None:
        if not uids:  # never an EXPUNGE without a UID set: that one would be mailbox-wide
            return
        client, uid_set = self.client, format_uid_set(uids)
        try:
            client.add_flags(uid_set, [b"\\Deleted"], silent=True)
            client.uid_expunge(uid_set)
        except IMAPClientError as exc:
            if is_connection_broken(exc):
                raise
            with contextlib.suppress(IMAPClientError):  # leave nothing marked for another's EXPUNGE
                client.remove_flags(uid_set, [b"\\Deleted"], silent=True)
            raise write_refused(exc, "UID EXPUNGE", self.selected_mailbox or "") from None

    # -- imap_update_message_flags: FETCH FLAGS (and MODSEQ), UID STORE (CONDSTORE UNCHANGEDSINCE) ------
    # The mailbox is selected read-write (select); store_flags is never retried.

    def fetch_flags(self, uids: Sequence[int], *, modseq: bool = False) -> dict[int, FlagState]:
        """Flags of those of ``uids`` that exist (without the session flag ``\\Recent``); with ``modseq``
        (CONDSTORE, RFC 7162) each message's MODSEQ too."""
        if modseq and "CONDSTORE" not in self.capabilities:
            raise ValueError("MODSEQ needs CONDSTORE, which the server does not advertise")
        wanted = set(uids)
        answer = self.fetch(sorted(wanted), ["FLAGS", "MODSEQ"] if modseq else ["FLAGS"])
        found: dict[int, FlagState] = {}
        for uid, data in answer.items():
            if uid not in wanted or b"FLAGS" not in data:
                continue
            flags = tuple(
                text for text in (_as_text(f) for f in data[b"FLAGS"]) if text and text.lower() != "\\recent"
            )
            value = data.get(b"MODSEQ")
            found[uid] = FlagState(flags, int(value[0]) if isinstance(value, tuple) and value else None)
        return found

    def store_flags(
        self, uids: Sequence[int], mode: str, flags: Sequence[str], *, unchanged_since: int | None = None
    ) -> set[int]:
        """``UID STORE`` of ``flags`` (``mode``: ``+`` add, ``-`` remove, ``""`` replace; ``.SILENT``), sent
        inside :meth:`write_command`. With ``unchanged_since`` (CONDSTORE) the server leaves alone every
        message changed since that MODSEQ and names it in ``[MODIFIED]``: those UIDs are returned."""
        if mode not in ("+", "-", "") or not uids or any(not _FLAG_ATOM.match(f) for f in flags):
            raise ValueError(f"not a flag STORE: {mode!r} {list(flags)!r}")
        if unchanged_since is not None and "CONDSTORE" not in self.capabilities:
            raise ValueError("UNCHANGEDSINCE needs CONDSTORE, which the server does not advertise")
        client = self.client
        args = [format_uid_set(uids).encode("ascii")]
        if unchanged_since is not None:
            args.append(b"(UNCHANGEDSINCE %d)" % unchanged_since)
        args += [f"{mode}FLAGS.SILENT".encode("ascii"), ("(" + " ".join(flags) + ")").encode("ascii")]
        untagged = client._imap.untagged_responses
        untagged.pop("MODIFIED", None)
        with self.write_command(uids):
            try:
                typ, data = client._raw_command(b"STORE", args)
                client._checkok("store", typ, data)  # NO; imaplib raises BAD itself
            except IMAPClientError as exc:
                if is_connection_broken(exc):
                    raise
                raise write_refused(exc, "UID STORE", self.selected_mailbox or "") from None
        changed: set[int] = set()
        for part in untagged.pop("MODIFIED", []):
            try:
                changed.update(parse_uid_set(_as_text(part) or ""))
            except MalformedUidSet:
                log.warning(
                    "account=%s malformed [MODIFIED]: every UID counts as changed", self._owner.account_id
                )
                changed.update(uids)
        return changed & set(uids)


def _as_text(value: bytes | str | None) -> str | None:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


# imap_update_message_flags: a flag as it may be sent, a system flag or an atom (RFC 3501 ATOM-CHAR, ASCII).
_FLAG_ATOM = re.compile(r"^\\?[!#$&'+,\-./0-9:;<=>?@A-Z\[^_`a-z|~]+$")


def _permanent_flags(value: Any) -> frozenset[str] | None:
    if not isinstance(value, tuple):
        return None
    return frozenset(text for text in (_as_text(v) for v in value if isinstance(v, bytes | str)) if text)


@dataclass(frozen=True)
class FlagState:
    """A message's flags (``\\Recent`` left out) and, where CONDSTORE is on, its MODSEQ."""

    flags: tuple[str, ...]
    modseq: int | None = None


def _starts_fetch_response(item: Any) -> bool:
    """Whether an element of imaplib's FETCH data opens a response (``<seq> (``), not a literal's tail."""
    head = item[0] if isinstance(item, tuple) else item
    return isinstance(head, bytes) and _FETCH_START.match(head) is not None


_FETCH_START = re.compile(rb"\d+ \(")


def _flatten(item: Any) -> Iterator[bytes]:
    """The bytes of an untagged response, whose literals imaplib keeps as tuples."""
    return _leaves(item, bytes)


def _leaves(item: Any, kind: type[T]) -> Iterator[T]:
    """The values of type ``kind`` in nested tuples and lists (a parsed response), in order."""
    if isinstance(item, kind):
        yield item
    elif isinstance(item, tuple | list):
        for part in item:
            yield from _leaves(part, kind)


def _search_args(criteria: list[bytes | str | int], charset: str | None) -> list[bytes]:
    args: list[bytes] = [b"CHARSET", charset.encode("ascii")] if charset else []
    return args + [_encode_search_token(item, charset) for item in criteria]


def _search_uids(data: list[Any]) -> list[int]:
    return [int(tok) for line in data if line for tok in line.split() if tok.isdigit()]


def _search_count(data: list[Any]) -> int:
    """``COUNT n`` of an ESEARCH answer (0 when absent)."""
    for line in data:
        tokens = (line or b"").split()
        for key, value in itertools.pairwise(tokens):
            if key.upper() == b"COUNT":
                return int(value)
    return 0


def _encode_search_token(item: bytes | str | int, charset: str | None) -> bytes:
    """Keywords/ranges pass as given (bytes or int); every user string is quoted or a literal."""
    if isinstance(item, int):
        return str(item).encode("ascii")
    if isinstance(item, bytes):
        return item
    raw = item.encode(charset or "ascii")
    if any(b > 126 or b < 32 for b in raw):
        literal: bytes = _literal(raw)
        return literal
    return b'"' + raw.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'


class CallBudget:
    """How long the current call may still wait on the network; read before every blocking socket operation.

    A call runs until its ``deadline`` (``math.inf`` between calls). Inside it, the connect phase (TCP
    connect, TLS handshake, greeting, STARTTLS) gets ``connect_timeout_s`` in total, and every later
    wait for the server (login, each command's reads and sends) at most ``command_timeout_s``, never
    past the deadline. Used only by the thread holding the account's lock.
    """

    def __init__(self, command_timeout_s: float) -> None:
        self.command_timeout_s = command_timeout_s
        self.deadline = math.inf
        self._connect_deadline: float | None = None

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    @contextmanager
    def connecting(self, until: float) -> Iterator[None]:
        """Bound everything inside (a part of the connect phase) by the monotonic time ``until``."""
        self._connect_deadline = until
        try:
            yield
        finally:
            self._connect_deadline = None

    def timeout(self, *, strict: bool = True) -> float:
        """Socket timeout for the next operation; with ``strict`` raise ``TimeoutError`` once spent."""
        now = time.monotonic()
        if self._connect_deadline is not None:
            left = min(self.deadline, self._connect_deadline) - now
        else:
            left = min(self.deadline - now, self.command_timeout_s)
        if left <= 0:
            if strict:
                raise TimeoutError("the call's time budget is used up")
            return 0.001
        return left


class _BudgetedIMAP4(imaplib.IMAP4):
    """imaplib's client, optionally over implicit TLS, taking every socket timeout from a :class:`CallBudget`.

    Overrides imaplib's documented hooks (``read``, ``readline``, ``send``) and its socket factory,
    so a slow or silent server cannot hold a call past its budget however many reads a response needs.
    ``unusable`` records that the socket failed (error, timeout or EOF), even if a caller swallowed
    the resulting exception.
    """

    def __init__(
        self,
        host: str,
        port: int,
        ssl_context: ssl.SSLContext | None,
        budget: CallBudget,
        progress: ConnectProgress,
    ) -> None:
        self._budget = budget
        self._ssl_context = ssl_context
        self._progress = progress
        self.unusable = False
        #: Times this connection waited for the server: TCP connect, TLS handshake round trips, and
        #: every read that follows a send (pipelined commands share one). Counted on the socket, so it
        #: is what a network's latency multiplies.
        self.round_trips = 0
        self._sent_since_read = True  # the greeting is awaited after the connect
        self._greeted = False
        super().__init__(host, port)

    def _get_capabilities(self) -> None:
        """Capabilities at connect time: from the greeting's ``[CAPABILITY ...]`` code when it has one
        (Dovecot, Cyrus and Courier send it), saving the CAPABILITY command's round trip; after STARTTLS
        always asked anew (what was said before TLS is not trusted)."""
        announced = None if self._greeted else self.untagged_responses.pop("CAPABILITY", None)
        self._greeted = True
        if announced and isinstance(announced[-1], bytes) and announced[-1].strip():
            self.capabilities = tuple(announced[-1].decode("ascii", "replace").upper().split())
            return
        super()._get_capabilities()  # type: ignore[misc]  # private in typeshed, present in imaplib

    def starttls(self, ssl_context: Any = None) -> Any:
        answer = super().starttls(ssl_context)
        self.round_trips += _handshake_round_trips(self.sock)
        return answer

    def _create_socket(self, timeout: float | None = None) -> socket.socket:
        sock = self._connect_tcp()
        # Nagle would hold back the second write of a command (imapclient sends some in two).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._ssl_context is None:
            self._progress.phase = ConnectPhase.GREETING
            return sock
        self._progress.phase = ConnectPhase.TLS
        try:
            sock.settimeout(self._budget.timeout())  # the handshake draws on the same connect budget
            wrapped = self._ssl_context.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise
        self.round_trips += _handshake_round_trips(wrapped)
        self._progress.phase = ConnectPhase.GREETING
        return wrapped

    def _connect_tcp(self) -> socket.socket:
        """``socket.create_connection``, except that each address tried gets only what is left."""
        last_error: OSError = OSError(f"{self.host!r} resolved to no address")
        for family, kind, proto, _, address in socket.getaddrinfo(
            self.host, self.port, type=socket.SOCK_STREAM
        ):
            sock = socket.socket(family, kind, proto)
            self.round_trips += 1
            try:
                sock.settimeout(self._budget.timeout())
                sock.connect(address)
            except OSError as exc:
                sock.close()
                last_error = exc
                continue
            return sock
        raise last_error

    def read(self, size: int) -> bytes:
        self._count_wait()
        chunks = []
        with self._watch():
            while size > 0:
                self.sock.settimeout(self._budget.timeout())
                chunk = super().read(min(size, _READ_CHUNK))
                if not chunk:
                    self.unusable = True  # EOF inside a literal
                    break
                chunks.append(chunk)
                size -= len(chunk)
        return b"".join(chunks)

    def readline(self) -> bytes:
        self._count_wait()
        with self._watch():
            self.sock.settimeout(self._budget.timeout())
            line = super().readline()
        if not line:
            self.unusable = True  # EOF
        return line

    def _count_wait(self) -> None:
        if self._sent_since_read:
            self.round_trips += 1
            self._sent_since_read = False

    def send(self, data: Any) -> None:
        self._sent_since_read = True
        with self._watch():
            # Not strict: imaplib reports any error from send as a dead connection, while a spent
            # budget is a timeout; the read of the answer right after raises it.
            self.sock.settimeout(self._budget.timeout(strict=False))
            super().send(data)

    @contextmanager
    def _watch(self) -> Iterator[None]:
        try:
            yield
        except OSError:  # includes timeouts: the stream is out of step either way
            self.unusable = True
            raise


def _handshake_round_trips(sock: socket.socket) -> int:
    """Round trips of the TLS handshake just completed on ``sock``: one for TLS 1.3, two before."""
    version = sock.version() if isinstance(sock, ssl.SSLSocket) else None
    return 1 if version == "TLSv1.3" else 2


class _BudgetedIMAPClient(IMAPClient):  # type: ignore[misc]  # imapclient has no type hints
    """IMAPClient over a :class:`_BudgetedIMAP4` (imapclient builds its connection in ``_create_IMAP4``)."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        tls: bool,
        ssl_context: ssl.SSLContext,
        budget: CallBudget,
        progress: ConnectProgress,
    ) -> None:
        self._budget = budget
        self._progress = progress
        super().__init__(host, port=port, ssl=tls, ssl_context=ssl_context if tls else None)

    def _create_IMAP4(self) -> imaplib.IMAP4:
        return _BudgetedIMAP4(
            self.host, self.port, self.ssl_context if self.ssl else None, self._budget, self._progress
        )


class AccountConnection:
    """The single reusable connection of one account. Thread-safe: calls are serialised."""

    def __init__(self, account_id: str, config: AccountConfig, *, summary_cache_entries: int = 0) -> None:
        self.account_id = account_id
        self.config = config
        self.summaries = SummaryCache(summary_cache_entries)
        self._lock = threading.Lock()
        self._client: IMAPClient | None = None
        self.selected: MailboxState | None = None
        self.capabilities: frozenset[str] = frozenset()
        self.logins = 0
        #: Commands whose answer came with another command's (no round trip of their own).
        self.pipelined_commands = 0
        #: Commands sent that change mail (see :meth:`ImapSession.write_command`).
        self.writes_sent = 0
        self._commands_before = 0
        self._round_trips_before = 0
        self._budget = CallBudget(config.command_timeout_s)
        self._ssl_context: ssl.SSLContext | None = None
        self._context_lock = threading.Lock()
        #: When the connection last carried a call or a keepalive (monotonic seconds).
        self.last_used = time.monotonic()
        #: NOOPs sent by the keepalive; connections found closed by the server before a call.
        self.keepalives = 0
        self.found_closed = 0

    @property
    def commands_sent(self) -> int:
        """IMAP commands sent over this account's lifetime (all connections)."""
        current = int(self._client._imap.tagnum) if self._client is not None else 0
        return self._commands_before + current

    @property
    def round_trips(self) -> int:
        """Waits for the server over this account's lifetime (all connections), as the socket saw them."""
        current = self._client._imap.round_trips if self._client is not None else 0
        return self._round_trips_before + int(current)

    @property
    def budget_s(self) -> float:
        """What one call may take: ``connect_timeout_s + command_timeout_s`` (plus the retry's pause)."""
        return self.config.connect_timeout_s + self.config.command_timeout_s

    def run_write(self, operation: Callable[[ImapSession], T]) -> T:
        """Run an ``operation`` that changes mail: never replayed, nothing pipelined.

        The operation selects its mailbox read-write with :meth:`ImapSession.select` and sends each
        change inside :meth:`ImapSession.write_command`. A connection found dead before any change was
        sent (the server dropped it while idle) is replaced and the operation runs once more; after a
        change was sent, :class:`OutcomeUnknown` reaches the caller and nothing runs again.
        """
        return self.run(operation, write=True)

    def run(self, operation: Callable[[ImapSession], T], *, retry: bool = True, write: bool = False) -> T:
        """Run ``operation`` on a live session within the call's budget.

        If the connection turns out dead (idle logout, reset, restart) and ``retry`` is set, reconnect
        and run it once more after :data:`RETRY_BACKOFF_S`; with ``write`` (see :meth:`run_write`) only
        while no mail-changing command was sent. The wait for the account's lock, the connect, every
        command and the retry share one deadline, so a call returns within :attr:`budget_s` plus the
        backoff.
        """
        deadline = time.monotonic() + self.budget_s
        if not self._lock.acquire(timeout=self.budget_s):
            raise account_busy(self.account_id)
        self._budget.deadline = deadline
        commands_before = self.commands_sent
        round_trips_before = self.round_trips
        writes_before = self.writes_sent
        try:
            for attempt in Retrying(
                stop=stop_after_attempt(2 if retry else 1),
                wait=self._backoff,
                # Retry only while time is left: a retry never gets a budget of its own. A write is
                # retried only when no mail-changing command was sent (e.g. the connection had died
                # while idle): what was never sent cannot be replayed.
                retry=retry_if_exception(
                    lambda exc: (
                        isinstance(exc, ConnectionLost)
                        and self._budget.remaining() > 0
                        and self.writes_sent == writes_before
                    )
                ),
                reraise=True,
            ):
                with attempt:
                    return self._run_once(operation, retry=retry and not write, pipeline=not write)
            raise AssertionError("unreachable")  # pragma: no cover
        except ConnectionLost:
            if self._budget.remaining() <= 0:
                raise timed_out(self.account_id, self.config, self.budget_s) from None
            raise connection_lost(self.account_id, self.config) from None
        finally:
            self._budget.deadline = math.inf
            self.last_used = time.monotonic()
            # Benchmarks read this line (MAIL_IMAP_MCP_LOG_LEVEL=DEBUG) to count round trips per call.
            log.debug(
                "account=%s imap_commands=%d round_trips=%d",
                self.account_id,
                self.commands_sent - commands_before,
                self.round_trips - round_trips_before,
            )
            self._lock.release()

    def _backoff(self, retry_state: RetryCallState) -> float:
        """Tenacity wait before the retry; the pause is added to the call's deadline."""
        self._budget.deadline += RETRY_BACKOFF_S
        return RETRY_BACKOFF_S

    def _run_once(self, operation: Callable[[ImapSession], T], *, retry: bool, pipeline: bool) -> T:
        client = self.connect()
        try:
            try:
                result = self._on_fresh_view(operation, client, pipeline=pipeline)
            except SelectionStale:
                # The selection reused from an earlier call was stale: it was dropped, and this run
                # examines the mailbox anew. Or the mailbox changed under a pipelined command: the
                # revalidation brought the selection up to date, and this run reads it as it is now.
                current = None if self.selected is None else self.selected.name
                result = self._on_fresh_view(operation, client, pipeline=False, current=current)
        except ToolFailure:
            raise
        except TimeoutError:
            self.discard()
            raise timed_out(self.account_id, self.config, self.budget_s) from None
        except Exception as exc:
            if is_connection_broken(exc):
                log.info("account=%s connection lost (%s); reconnecting", self.account_id, type(exc).__name__)
                self.discard()
                raise ConnectionLost() from exc
            raise
        current = self._client
        if current is not None and isinstance(current._imap, _BudgetedIMAP4) and current._imap.unusable:
            # The connection died under the operation, which absorbed the error (per-item error
            # handling, e.g. a STATUS that "failed"): the answer may be incomplete, so a read runs again.
            log.info("account=%s connection lost during the call; dropping it", self.account_id)
            self.discard()
            if retry:
                raise ConnectionLost()
        return result

    def _on_fresh_view(
        self,
        operation: Callable[[ImapSession], T],
        client: IMAPClient,
        *,
        pipeline: bool,
        current: str | None = None,
    ) -> T:
        """Run ``operation``; :class:`SelectionStale` when it ran on a view found stale afterwards."""
        session = ImapSession(self, client, pipeline=pipeline, current=current)
        try:
            result = operation(session)
        except ToolFailure:
            session.settle()  # a failure judged on a stale view is no answer either
            raise
        session.settle()
        return result

    @contextmanager
    def _connect_errors(self, progress: ConnectProgress) -> Iterator[None]:
        try:
            yield
        except ToolFailure:
            raise
        except Exception as exc:
            raise connect_failure(exc, self.account_id, self.config, progress.phase) from None

    def ssl_context(self) -> ssl.SSLContext:
        """The account's TLS context, built on first use and reused by every (re)connect: loading the
        system's trust store takes about 0.1 s of CPU (see :meth:`ConnectionPool.prepare`)."""
        with self._context_lock:
            if self._ssl_context is None:
                context = ssl.create_default_context()
                if self.config.ca_file is not None:
                    context.load_verify_locations(cafile=str(self.config.ca_file.expanduser()))
                self._ssl_context = context
            return self._ssl_context

    def keep_alive(self, interval_s: float) -> None:
        """Send NOOP if the connection sat idle for ``interval_s``, unless a call holds it.

        NOOP changes nothing in the mailbox. What it reports (new or expunged messages, flag changes)
        stays queued in imaplib's untagged responses, where the next call's revalidation finds it and
        reads on an updated view (Courier updates a session's view only on NOOP or SELECT). A connection
        that fails the NOOP is dropped, so the next call connects at once instead of failing first.
        """
        if self._client is None or time.monotonic() - self.last_used < interval_s:
            return
        if not self._lock.acquire(blocking=False):
            return  # a call is using it: it is not idle
        try:
            client = self._client
            if client is None or time.monotonic() - self.last_used < interval_s:
                return
            if self._closed_by_server(client):
                return
            self._budget.deadline = time.monotonic() + min(self.config.command_timeout_s, 10.0)
            try:
                self.keepalives += 1
                typ, _ = client._imap.noop()
                if typ != "OK":
                    raise imaplib.IMAP4.abort(f"NOOP answered {typ}")
            except Exception as exc:
                log.info(
                    "account=%s keepalive NOOP failed (%s); dropping the connection", self.account_id, exc
                )
                self.discard()
            finally:
                self._budget.deadline = math.inf
                self.last_used = time.monotonic()
        finally:
            self._lock.release()

    def _closed_by_server(self, client: IMAPClient) -> bool:
        """Whether the idle connection was closed or reset by the server (or a router on the way); such
        a connection is dropped, so the next command does not fail on it. Costs no round trip: with
        nothing asked, the socket is readable only for an EOF, a reset, a BYE (or a TLS record)."""
        sock = client.socket()
        try:
            if not select.select([sock], [], [], 0)[0]:
                return False
            if isinstance(sock, ssl.SSLSocket):
                # Decrypted data read here is lost to imaplib's reader: any makes the connection unusable.
                sock.setblocking(False)
                try:
                    sock.recv(4096)
                finally:
                    sock.settimeout(self._budget.command_timeout_s)
            else:
                data = sock.recv(4096, socket.MSG_PEEK | socket.MSG_DONTWAIT)
                if data and not data.startswith(b"* BYE"):
                    return False  # an unsolicited response: imaplib reads it with the next command
        except (ssl.SSLWantReadError, BlockingIOError, InterruptedError):
            return False  # a TLS record that carried no data (a session ticket), or nothing after all
        except (OSError, ValueError):
            pass  # reset, or the socket is already closed
        log.info("account=%s connection closed by the server while idle; reconnecting", self.account_id)
        self.found_closed += 1
        self.discard()
        return True

    def connect(self) -> IMAPClient:
        """The live client, connecting and logging in first when there is none (or the idle one was
        closed by the server)."""
        if self._client is not None and not self._closed_by_server(self._client):
            return self._client
        config = self.config
        started = time.perf_counter()
        progress = ConnectProgress()
        with self._connect_errors(progress):
            # The password, or a token from oauth2_token_command: before connecting, as that may take a while.
            login = Login(self.account_id, config, self._budget.remaining)
            context = self.ssl_context()
            # TCP connect, TLS handshake, greeting and STARTTLS share connect_timeout_s; login is a command.
            connect_until = time.monotonic() + config.connect_timeout_s
            with self._budget.connecting(connect_until):
                client = _BudgetedIMAPClient(
                    config.host,
                    config.effective_port,
                    tls=config.security is Security.TLS,
                    ssl_context=context,
                    budget=self._budget,
                    progress=progress,
                )
            try:
                if config.security is Security.STARTTLS:
                    if not client.has_capability("STARTTLS"):
                        raise starttls_missing(self.account_id, config)
                    progress.phase = ConnectPhase.STARTTLS
                    with self._budget.connecting(connect_until):
                        client.starttls(context)
                progress.phase = ConnectPhase.LOGIN
                # imaplib's capabilities: after STARTTLS those asked anew over TLS (imapclient's
                # has_capability would send one more CAPABILITY there).
                if "LOGINDISABLED" in client._imap.capabilities:
                    raise login_disabled(self.account_id, config)
                _take_login_capabilities(client, login.perform(client))
            except BaseException:
                _close_quietly(client)
                raise
            self.capabilities = frozenset(
                c.decode("ascii", "replace").upper() if isinstance(c, bytes) else str(c).upper()
                for c in client.capabilities()
            )
        self.logins += 1
        self.selected = None
        self._client = client
        log.info(
            "account=%s connected in %d ms", self.account_id, int((time.perf_counter() - started) * 1000)
        )
        return client

    def discard(self) -> None:
        """Drop the current connection without logging out (it is dead or unusable)."""
        if self._client is not None:
            self._commands_before += int(self._client._imap.tagnum)
            self._round_trips_before += int(self._client._imap.round_trips)
            _close_quietly(self._client)
        self._client = None
        self.selected = None

    def close(self) -> None:
        """Log out (best effort) and forget the connection."""
        with self._lock:
            if self._client is not None:
                # A dead or stalled server must not hold up shutdown.
                self._budget.deadline = time.monotonic() + 1.0
                try:
                    self._client.logout()
                except Exception:
                    log.debug("account=%s logout failed", self.account_id, exc_info=True)
                finally:
                    self._budget.deadline = math.inf
            self.discard()


_CAPABILITY_CODE = re.compile(rb"^\[CAPABILITY ([^\]]*)\]")


def _take_login_capabilities(client: IMAPClient, answer: Any) -> None:
    """Use the ``[CAPABILITY ...]`` code of LOGIN's tagged OK (RFC 3501 7.1, sent by Dovecot and Cyrus)
    as the session's capabilities, so no CAPABILITY command (and round trip) follows the login."""
    found = _CAPABILITY_CODE.match(answer) if isinstance(answer, bytes) else None
    if found is not None and found.group(1).strip():
        client._cached_capabilities = tuple(found.group(1).upper().split())


def _close_quietly(client: IMAPClient) -> None:
    try:
        client.shutdown()
    except Exception:
        log.debug("socket shutdown failed", exc_info=True)


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
    0: off)."""

    def __init__(
        self,
        accounts: dict[str, AccountConfig],
        *,
        keepalive_interval_s: float = 0.0,
        summary_cache_entries: int = 0,
    ) -> None:
        self._connections = {
            aid: AccountConnection(aid, cfg, summary_cache_entries=summary_cache_entries)
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
            known = ", ".join(sorted(self._connections)) or "none"
            raise ToolFailure(
                ErrorCode.NOT_FOUND,
                f"Account {account_id!r} is not configured (configured: {known}); call "
                "imap_list_accounts to see them.",
                details={
                    "parameter": "account_id",
                    "account_id": account_id,
                    "configured": sorted(self._connections),
                },
            ) from None

    def close_all(self) -> None:
        self.keepalive.stop()
        if self._preparing is not None:
            self._preparing.join()
        for connection in self._connections.values():
            connection.close()

"""Sending a saved draft, at most once, only as the user approved it.

The order is the guarantee: the draft is read from the Drafts folder into a file of its own and checked
(``services/send_prepare.py``: its size, its From one of the account's addresses, every To, Cc and Bcc in
``allowed_recipients``, at most 100 recipients), an earlier
send of its Message-ID looked for (the state store's record, then the Sent folder) and the hourly rate
checked, all before the user is asked; the user approves exactly what they were shown (the approval is
bound to its text, which carries the draft's fingerprint: a draft changed since is asked about again, never
sent as approved); then the record of the send is taken in the lasting store (``AppContext.lasting_store``:
Redis in a team, else a file every process of the machine shares, kept across restarts; one caller wins),
the draft claimed on the IMAP server where it can be (``services/send_claim.py``: one machine wins), Sent
searched once more, the message submitted on a connection of its own, and the record says ``sent`` or
``unknown``. A connection lost after the message's bytes went out is an unknown outcome, never retried; the
record (and the claim) then refuse a second send of the draft, after a restart too. Only once the server accepted it do the follow-ups run (a copy in Sent unless
the provider files one, ``\\Answered`` on the message replied to and ``$Forwarded`` on the message forwarded
wherever it is kept (``services/send_marks.py``), the draft moved to
Trash), each failure an issue of a successful answer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Literal

from mail_imap_mcp.asking.page_server import DEFAULT_TTL_S
from mail_imap_mcp.call import Call
from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.content.forwards import FORWARDED_KEYWORD
from mail_imap_mcp.credentials.secret_now import SecretUnavailable, secret_now
from mail_imap_mcp.envelope import Issue
from mail_imap_mcp.imap.budget import StreamedLiteral
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.mail.backend import MailWriting
from mail_imap_mcp.mail.errors import MailError, OutcomeUnknown
from mail_imap_mcp.mail.step_failure import StepFailed
from mail_imap_mcp.mime.message_file import crlf_chunks
from mail_imap_mcp.net.tokens import Credentials
from mail_imap_mcp.operations.audit import audit
from mail_imap_mcp.services.send_claim import Claim, claim_draft, release_draft
from mail_imap_mcp.services.send_prepare import Prepared, copy_of
from mail_imap_mcp.services.submission_server import submission_server
from mail_imap_mcp.smtp.client import Login, Submitted, submit
from mail_imap_mcp.smtp.errors import Stage, SubmissionError, SubmissionLoginRefused, SubmissionOutcomeUnknown
from mail_imap_mcp.smtp.outgoing import now_date
from mail_imap_mcp.smtp.refusals import (
    AlreadySent,
    ApprovalPageOpen,
    SendRateReached,
)
from mail_imap_mcp.state import StateUnavailable
from mail_imap_mcp.state.hourly_rate import HourlyRate
from mail_imap_mcp.state.process_marks import hold

#: How long the record of a send keeps a second send of the same draft away.
RECORD_TTL_S = 30 * 24 * 3600.0
SENDING, SENT_STATE, UNKNOWN = b"sending", b"sent", b"unknown"
#: How long the mark of a draft waiting for the user on an approval page lasts at most (the page's life and
#: a margin), should the process end without taking it back.
APPROVING_TTL_S = DEFAULT_TTL_S + 60.0


@dataclass
class SendResult:
    """What a send did: ``outcome`` ``sent`` (the server accepted it for ``accepted``) or
    ``outcome_unknown``; ``refused``: each recipient the server refused, with its reply."""

    header_id: str
    outcome: Literal["sent", "outcome_unknown"]
    accepted: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    reply: str = ""
    sent_copy: Literal["appended", "filed_by_provider"] | None = None
    answered: bool = False
    forwarded: bool = False
    draft_moved: bool = False
    #: What the answer must say: a step that failed is worded by presentation (``presentation/issues.py``).
    issues: list[Issue | StepFailed] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


# A send's record, its rate and its approval mark belong to the mailbox: two users of one shared account
# must not each send the same draft, nor each get the account's hourly allowance. The machine's file is
# shared by every configuration: the server, port and user name keep two accounts of one id apart.
def _mailbox_key(app: Call, kind: str, prepared: Prepared, *parts: str) -> str:
    account = prepared.account
    who = "\0".join((account.host.lower(), str(account.effective_port), account.username))
    mailbox = hashlib.sha256(who.encode()).hexdigest()[:24]
    return app.caller.mailbox_key(kind, prepared.account_id, mailbox, *parts)


def _record_key(app: Call, prepared: Prepared) -> str:
    return _mailbox_key(app, "send", prepared, prepared.outgoing.header_id.lower())


def _rate_key(app: Call, prepared: Prepared) -> str:
    return _mailbox_key(app, "send-rate", prepared)


def _rate(app: Call, prepared: Prepared) -> HourlyRate:
    """The account's sends in the last hour (a sliding hour: ``state/hourly_rate.py``)."""
    return HourlyRate(app.lasting_store, _rate_key(app, prepared), prepared.account.send_rate_per_hour)


@contextmanager
def waiting_for_approval(app: Call, prepared: Prepared) -> Iterator[None]:
    """Mark the draft, and its account, as waiting for the user on an approval page for the duration:
    another send of it meanwhile is refused (:class:`AlreadySent`, state ``approving``), and a send of any
    other draft of the account too (:class:`ApprovalPageOpen`): at most one page per account is open. The
    marks name their process: one left by a process that ended while its page waited is cleared
    (:func:`~mail_imap_mcp.state.process_marks.hold`)."""
    key = _mailbox_key(app, "send-approving", prepared, prepared.outgoing.header_id.lower())
    page = _mailbox_key(app, "send-page-open", prepared)
    approving = hold(app.lasting_store, key, APPROVING_TTL_S)
    if approving is None:
        raise AlreadySent(prepared.outgoing.header_id, "approving", prepared.sent_mailbox)
    try:
        open_page = hold(app.lasting_store, page, APPROVING_TTL_S)
        if open_page is None:
            raise ApprovalPageOpen(prepared.account_id)
        try:
            yield
        finally:
            app.lasting_store.release(page, open_page)
    finally:
        app.lasting_store.release(key, approving)


def check_not_sent(app: Call, connection: AccountConnection, prepared: Prepared) -> None:
    """:class:`AlreadySent` when the record of the lasting store, the draft's claim or the Sent folder
    knows the draft's Message-ID; :class:`SendRateReached` when the hour's sends are used up."""
    header_id = prepared.outgoing.header_id
    state = app.lasting_store.get(_record_key(app, prepared))
    if state is not None:
        raise AlreadySent(header_id, state.decode("ascii", "replace"), prepared.sent_mailbox)
    if prepared.claimed:
        raise AlreadySent(header_id, "claimed", prepared.sent_mailbox)
    if _in_sent(connection, prepared):
        raise AlreadySent(header_id, "sent", prepared.sent_mailbox)
    # Before the user is asked (one read of the store); the send takes its use once approved (``send``),
    # reading again after counting it: that read, not this one, keeps two sends from both taking the last.
    wait_s = _rate(app, prepared).wait_s()
    if wait_s is not None:
        raise _rate_reached(prepared, wait_s)


def _in_sent(connection: AccountConnection, prepared: Prepared) -> bool:
    """Whether the Sent folder holds a message of the draft's Message-ID."""
    sent = prepared.sent_mailbox
    if sent is None:
        return False

    def search(session: ImapSession) -> list[int]:
        session.examine(sent)
        return session.uid_search([b"HEADER", b"MESSAGE-ID", prepared.outgoing.header_id])

    return bool(connection.run(search))


def _rate_reached(prepared: Prepared, wait_s: int) -> SendRateReached:
    return SendRateReached(
        prepared.account_id,
        prepared.account.setting("send_rate_per_hour"),
        prepared.account.send_rate_per_hour,
        wait_s,
    )


def _login(account: AccountConfig, credentials: Credentials) -> Login:
    """The account's login, its secret obtained now, before any record is taken: a password or token that
    cannot be had is a refused login, with nothing sent. ``credentials``: those the application root gave
    the account's IMAP connections, so an OAuth2 account logs in with the token they use (one refresh for
    both protocols)."""
    try:
        got = secret_now(account, credentials)
    except SecretUnavailable as exc:
        raise SubmissionLoginRefused(Stage.LOGIN, exc.reason) from None
    return Login(got.username, got.mechanism, lambda _: got.secret, got.refused)


def _record(app: Call, key: str, state: bytes, result: SendResult) -> None:
    """Record the outcome of a send whose message went out; a store that fails here is an issue (the answer
    must still say what happened to the message)."""
    try:
        app.lasting_store.set(key, state, RECORD_TTL_S)
    except StateUnavailable as exc:
        result.issues.append(
            Issue(
                code="record_failed",
                stage="after_send",
                message=f"The outcome could not be recorded in the state store ({exc.detail}): do not send this "
                "draft again; it is in Sent once the follow-ups ran.",
                retryable=False,
            )
        )


def send(app: Call, connection: AccountConnection, prepared: Prepared, tool: str) -> SendResult:
    """Take the record of the send, submit the message, record the outcome, then the follow-ups (see the
    module). Call only once the user approved ``prepared`` in this call."""
    account_id, message = prepared.account_id, prepared.outgoing
    header_id = message.header_id
    key, records = _record_key(app, prepared), app.lasting_store
    login = _login(prepared.account, connection.credentials)
    if not records.add(key, SENDING, RECORD_TTL_S):
        state = records.get(key) or SENDING
        raise AlreadySent(header_id, state.decode("ascii", "replace"), prepared.sent_mailbox)
    try:
        wait_s = _rate(app, prepared).take()
        if wait_s is not None:
            raise _rate_reached(prepared, wait_s)
        claim = _claim(app.mail(account_id), connection, prepared)
    except BaseException:
        records.delete(key)  # nothing was sent: the draft may be sent again
        raise
    date = now_date()
    added = header_id if message.id_added else None
    transmitted = copy_of(prepared, date=date, header_id=added, keep_bcc=False)
    server = submission_server(prepared.account)
    assert server is not None  # send_enabled needs one (the configuration says so)
    recipients = list(message.recipients)

    def done(outcome: str, **more: str) -> None:
        audit(
            app.caller, tool, account_id, "send", len(recipients), outcome,
            message_id=header_id, recipients=",".join(recipients), **more,
        )  # fmt: skip

    try:
        submitted: Submitted = submit(server, login, message.sender, recipients, transmitted)
    except SubmissionOutcomeUnknown:
        done("outcome_unknown")
        unknown = SendResult(header_id, "outcome_unknown", issues=[_unknown_issue(prepared)])
        _record(app, key, UNKNOWN, unknown)
        return unknown
    except SubmissionError as exc:
        if claim is Claim.CLAIMED:
            release_draft(app.mail(account_id), prepared.ref)
        records.delete(key)  # nothing was sent: the draft may be sent again
        done(f"refused:{type(exc).__name__}")
        raise
    except BaseException:
        records.set(key, UNKNOWN, RECORD_TTL_S)  # a bug mid-send: assume the worst, never send twice
        done("outcome_unknown")
        raise
    refused = ",".join(submitted.refused)
    done("partial" if submitted.refused else "sent", **({"refused": refused} if refused else {}))
    result = SendResult(header_id, "sent", submitted.accepted, submitted.refused, submitted.reply)
    _record(app, key, SENT_STATE, result)
    result.issues += [
        Issue(
            code="recipient_refused",
            stage="submit",
            message=f"The server refused {address}: {reply}. The others were sent the message.",
            retryable=False,
        )
        for address, reply in submitted.refused.items()
    ]
    _follow_up(
        app, connection, prepared, copy_of(prepared, date=date, header_id=added, keep_bcc=True), result
    )
    return result


def _claim(mail: MailWriting, connection: AccountConnection, prepared: Prepared) -> Claim:
    """Claim the draft on the IMAP server, then look in Sent once more (another machine may have sent it
    since it was checked): :class:`AlreadySent` when either says it is not this call's to send."""
    claim = claim_draft(mail, prepared.ref)
    header_id = prepared.outgoing.header_id
    if claim is Claim.TAKEN:
        raise AlreadySent(header_id, "claimed", prepared.sent_mailbox)
    try:
        in_sent = _in_sent(connection, prepared)
    except BaseException:
        if claim is Claim.CLAIMED:  # nothing was sent: the claim is not left behind
            release_draft(mail, prepared.ref)
        raise
    if in_sent:
        raise AlreadySent(header_id, "sent", prepared.sent_mailbox)
    return claim


def _unknown_issue(prepared: Prepared) -> Issue:
    where = (
        f"the Sent folder {prepared.sent_mailbox!r}" if prepared.sent_mailbox else "the recipients' mailboxes"
    )
    return Issue(
        code="outcome_unknown",
        stage="submit",
        message="The connection was lost after the message was handed to the server: it may or may not have "
        f"been sent. It was not sent again, and this draft will not be sent again (nor after a restart); look in {where} "
        f"for Message-ID {prepared.outgoing.header_id}.",
        retryable=False,
    )


def _follow_up(
    app: Call,
    connection: AccountConnection,
    prepared: Prepared,
    copy: Callable[[], Iterable[bytes]],
    result: SendResult,
) -> None:
    """After acceptance: the Sent copy, ``\\Answered`` on the original, the draft to Trash; each failure an
    issue (the message is sent whatever happens here)."""
    provider = prepared.account.provider
    if provider is not None and provider.files_sent_copy:
        result.sent_copy = "filed_by_provider"
    elif prepared.sent_mailbox is None:
        result.issues.append(_issue("sent_copy_failed", "no Sent folder is known (set sent_mailbox)"))
    else:
        sent = prepared.sent_mailbox
        pieces: Callable[[], Iterable[bytes]] = lambda: crlf_chunks(copy())  # noqa: E731
        literal = StreamedLiteral(sum(len(piece) for piece in pieces()), pieces)

        def append(session: ImapSession) -> bool:
            if session.selected_mailbox is not None:
                session.deselect()
            with session.write_command():
                session.append(sent, literal, ("\\Seen",))
            return True

        filed = _step(lambda: connection.run_write(append), result, "sent_copy_failed", "the copy in Sent")
        if filed is True:
            result.sent_copy = "appended"
    replied, forwarded, where = (
        prepared.outgoing.in_reply_to,
        prepared.outgoing.forwarded,
        prepared.reply_mailboxes,
    )
    mail = app.mail(prepared.account_id)
    if replied is not None:
        mark = partial(mail.mark_original, where, replied, "\\Answered")
        answered = _step(mark, result, "answered_failed", "\\Answered on the original")
        result.answered = answered == "marked"
    if forwarded is not None:
        mark = partial(mail.mark_original, where, forwarded, FORWARDED_KEYWORD)
        marked = _step(mark, result, "forwarded_failed", f"{FORWARDED_KEYWORD} on the original")
        result.forwarded = marked == "marked"
        if marked in ("not_kept", "not_found"):
            result.warnings.append(f"The forwarded message was not marked {FORWARDED_KEYWORD}: " + (
                "its folder keeps no keywords (PERMANENTFLAGS)." if marked == "not_kept" else "it was not found."
            ))  # fmt: skip
    trash, ref = prepared.trash_mailbox, prepared.ref
    if trash is None:
        result.issues.append(
            _issue("draft_kept", "no Trash folder is known (set trash_mailbox); the draft stays")
        )
        return

    def retire(session: ImapSession) -> bool:
        session.select(ref.mailbox, uidvalidity=ref.uidvalidity)
        if ref.uid not in session.fetch_flags([ref.uid]):
            return False
        session.uid_move([ref.uid], trash)
        return True

    moved = _step(lambda: connection.run_write(retire), result, "draft_kept", "moving the draft to Trash")
    result.draft_moved = moved is True


def _step(write: Callable[[], object], result: SendResult, code: str, what: str) -> object:
    """What ``write`` answered; None, with an issue of ``code`` in ``result``, when it failed."""
    try:
        return write()
    except OutcomeUnknown:
        result.issues.append(
            _issue(code, f"{what}: the connection was lost; it may or may not have been done")
        )
    except MailError as exc:
        if exc.for_caller:
            raise
        said = f"The message was sent, but {what} failed: "
        result.issues.append(StepFailed("after_send", exc, said, ".", code=code, retryable=False))
    return None


def _issue(code: str, problem: str) -> Issue:
    return Issue(
        code=code, stage="after_send", message=f"The message was sent, but {problem}.", retryable=False
    )

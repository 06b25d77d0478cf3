"""The words of a send that did not happen (:mod:`mail_imap_mcp.smtp.refusals` before any connection,
:mod:`mail_imap_mcp.smtp.errors` from the submission server). Each says that nothing was sent, and whether
trying again can help; the failure registry (:mod:`.failures`) says each with these."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mail_imap_mcp.envelope import ErrorCode, NextAction, ToolFailure
from mail_imap_mcp.presentation.call import Call
from mail_imap_mcp.smtp.errors import (
    MessageTooLarge,
    RecipientsRefused,
    SubmissionError,
    SubmissionLoginRefused,
    SubmissionRefused,
    SubmissionTimedOut,
    SubmissionTlsFailed,
    SubmissionUnavailable,
)
from mail_imap_mcp.smtp.refusals import (
    AlreadySent,
    ApprovalPageOpen,
    DraftRefused,
    DraftUnsendable,
    RecipientsNotAllowed,
    SendRateReached,
)

_NOTHING = "Nothing was sent."


def _draft_refused(exc: DraftRefused, call: Call | None) -> ToolFailure:
    if exc.reason is DraftUnsendable.TOO_LARGE:
        return ToolFailure(ErrorCode.LIMIT_EXCEEDED, f"The draft cannot be sent: {exc.detail}. {_NOTHING}",
                           details={"parameter": "message_id", "reason": exc.reason.value}, retryable=False)  # fmt: skip
    return ToolFailure.invalid_input(
        "message_id",
        f"this draft cannot be sent: {exc.detail}. {_NOTHING} The user can correct it in their mail client "
        "(or save a new one with imap_save_draft).",
        reason=exc.reason.value,
    )


def _not_allowed(exc: RecipientsNotAllowed, call: Call | None) -> ToolFailure:
    shown = ", ".join(exc.addresses[:10]) + (
        f" and {len(exc.addresses) - 10} more" if len(exc.addresses) > 10 else ""
    )
    return ToolFailure(
        ErrorCode.PERMISSION_DENIED,
        f"Account {exc.account_id!r} may not send to {shown}: not in its allowed recipients. {_NOTHING} Only the "
        f"user can allow them, in {exc.setting}.",
        details={
            "account_id": exc.account_id,
            "setting": "allowed_recipients",
            "recipients": exc.addresses[:100],
        },
        retryable=False,
    )


def _rate_reached(exc: SendRateReached, call: Call | None) -> ToolFailure:
    return ToolFailure(
        ErrorCode.LIMIT_EXCEEDED,
        f"Account {exc.account_id!r} sent {exc.limit} messages in the last hour, its limit ({exc.setting}). {_NOTHING} "
        f"Try again in {exc.retry_after_s} s.",
        details={
            "account_id": exc.account_id,
            "setting": "send_rate_per_hour",
            "retry_after_s": exc.retry_after_s,
        },
        retryable=True,
    )


def _already_sent(exc: AlreadySent, call: Call | None) -> ToolFailure:
    state = {
        "sent": "was already sent",
        "sending": "is being sent right now",
        "approving": "is waiting for the user's approval on an approval page (an earlier call)",
        "unknown": "was sent once with an unknown outcome (the connection was lost after the message went out)",
        "claimed": "is claimed by another send (the keyword MailImapMcpSending: being sent elsewhere, or cut short "
        "with an unknown outcome)",
    }.get(exc.state, "was already sent")
    look = (
        NextAction(
            instruction="Look for it in Sent",
            tool="imap_search_messages",
            arguments={"mailbox": exc.sent_mailbox, "query": exc.header_id.strip("<>")},
        )
        if exc.sent_mailbox
        else None
    )
    return ToolFailure(
        ErrorCode.CONFLICT,
        f"This draft (Message-ID {exc.header_id}) {state}: it is not sent twice. {_NOTHING} Look for it in "
        f"{exc.sent_mailbox or 'the Sent folder'}.",
        details={"parameter": "message_id", "state": exc.state, "header_message_id": exc.header_id},
        retryable=False,
        next_action=look,
    )


def _page_open(exc: ApprovalPageOpen, call: Call | None) -> ToolFailure:
    return ToolFailure(
        ErrorCode.CONFLICT,
        f"An approval page of account {exc.account_id!r} is already open in the user's browser, waiting for "
        f"them to decide on another message: one page at a time. {_NOTHING} Wait for that send to end "
        "(imap_get_operation, or imap_cancel_operation to close its page), then send this draft again.",
        details={"parameter": "message_id", "state": "page_open", "account_id": exc.account_id},
        retryable=True,
    )


def _submission(exc: SubmissionError, call: Call | None) -> ToolFailure:
    details: dict[str, Any] = {"stage": exc.stage.value}
    if isinstance(exc, RecipientsRefused):
        details["refused"] = exc.refused
        named = "; ".join(f"{address}: {reply}" for address, reply in list(exc.refused.items())[:10])
        return ToolFailure(ErrorCode.PERMISSION_DENIED, f"The server refused every recipient ({named}). {_NOTHING}",
                           details=details, retryable=False)  # fmt: skip
    if isinstance(exc, MessageTooLarge):
        return ToolFailure(ErrorCode.LIMIT_EXCEEDED, f"The message is too large for the server ({exc.detail}). "
                           f"{_NOTHING}", details=details, retryable=False)  # fmt: skip
    if isinstance(exc, SubmissionLoginRefused):
        return ToolFailure(ErrorCode.AUTH_FAILED, f"The submission server refused the login ({exc.detail}). "
                           f"{_NOTHING}", details=details, retryable=False)  # fmt: skip
    if isinstance(exc, SubmissionTlsFailed):
        what = "its certificate failed verification" if exc.certificate else "TLS could not be set up"
        return ToolFailure(ErrorCode.UNAVAILABLE, f"The submission server was not reached safely: {what} "
                           f"({exc.detail}). {_NOTHING}", details={**details, "setting": "smtp"}, retryable=False)  # fmt: skip
    if isinstance(exc, SubmissionRefused):
        return ToolFailure(ErrorCode.PERMISSION_DENIED, f"The submission server refused the message "
                           f"({exc.detail}). {_NOTHING}", details=details, retryable=exc.temporary)  # fmt: skip
    if isinstance(exc, SubmissionTimedOut):
        return ToolFailure(ErrorCode.TIMEOUT, f"The submission server did not answer in time. {_NOTHING}",
                           details=details, retryable=True)  # fmt: skip
    assert isinstance(exc, SubmissionUnavailable)
    return ToolFailure(ErrorCode.UNAVAILABLE, f"The submission server could not be reached ({exc.detail}). "
                       f"{_NOTHING}", details=details, retryable=True)  # fmt: skip


#: The registry's lines of the refusals and failures of sending.
SEND_FAILURES: Mapping[type[BaseException], Callable[[Any, Call | None], ToolFailure]] = {
    DraftRefused: _draft_refused,
    RecipientsNotAllowed: _not_allowed,
    SendRateReached: _rate_reached,
    AlreadySent: _already_sent,
    ApprovalPageOpen: _page_open,
    SubmissionError: _submission,
}

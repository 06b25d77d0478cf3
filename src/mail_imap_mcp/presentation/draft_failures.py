"""The words of the refusals of saving a draft (:mod:`mail_imap_mcp.mail.draft_errors`), each naming
the argument that asked for it. The failure registry (:mod:`.failures`) says each with these."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mail_imap_mcp.content.invitations import InvitationProblem, InvitationRefused
from mail_imap_mcp.envelope import ErrorCode, NextAction, ToolFailure
from mail_imap_mcp.mail.draft_errors import (
    AttachmentRefused,
    DraftNotReplaceable,
    DraftTooLarge,
    ForeignMessage,
    NotReplaceable,
    SenderNotOwn,
    TooManyRecipients,
)
from mail_imap_mcp.presentation.call import Call


def _foreign_message(exc: ForeignMessage, call: Call | None) -> ToolFailure:
    return ToolFailure.invalid_input(
        exc.parameter, f"the message belongs to account {exc.owner!r}, not {exc.account_id!r}."
    )


def _sender_not_own(exc: SenderNotOwn, call: Call | None) -> ToolFailure:
    known = ", ".join(exc.identities) if exc.identities else "none configured"
    return ToolFailure.invalid_input(
        "from_address",
        f"it must be one of the account's addresses ({known}); the user adds send-as "
        f"identities with {exc.account.setting('addresses')}.",
    )


def _too_many_recipients(exc: TooManyRecipients, call: Call | None) -> ToolFailure:
    return ToolFailure.invalid_input("cc", exc.said)


def _not_replaceable(exc: DraftNotReplaceable, call: Call | None) -> ToolFailure:
    if exc.reason == NotReplaceable.ELSEWHERE:
        problem = (
            f"only a draft in the Drafts folder {exc.drafts!r} can be replaced; this message is in "
            f"{exc.mailbox!r}. Nothing was changed."
        )
    elif exc.reason == NotReplaceable.DRAFTS_IS_TRASH:
        problem = (
            f"the Drafts folder is also the Trash ({exc.trash!r}), so a replaced draft could not be kept "
            "for the undo; set trash_mailbox or drafts_mailbox to distinct folders. Nothing was changed."
        )
    elif exc.reason == NotReplaceable.NOT_A_DRAFT:
        problem = (
            "the message is not a draft (it has no \\Draft flag); only a draft can be replaced. "
            "Nothing was changed."
        )
    else:
        problem = "it lost its \\Draft flag meanwhile."
    return ToolFailure.invalid_input("replace_message_id", problem)


def attachment_refused(exc: AttachmentRefused, cause: ToolFailure) -> ToolFailure:
    """``cause`` (the registry's words of what refused the attachment) said of the argument that asked
    for it (an item of ``attachments``, ``forward_of``), naming it as ``parameter``."""
    said = "" if "nothing was saved" in cause.message.lower() else " Nothing was saved."
    return ToolFailure(
        cause.code,
        f"{exc.parameter}: {cause.message}{said}",
        details={**cause.details, "parameter": exc.parameter},
        retryable=cause.retryable,
        next_action=cause.next_action,
    )


def _draft_too_large(exc: DraftTooLarge, call: Call | None) -> ToolFailure:
    return ToolFailure(
        ErrorCode.LIMIT_EXCEEDED,
        f"With its attachments the draft would be at least {exc.size:,} bytes (encoded), more than "
        f"{exc.limited_by} takes ({exc.limit:,} bytes); nothing was saved. Attach fewer or smaller files.",
        details={"parameter": "attachments", "size_bytes": exc.size, "limit": exc.limit},
    )


_INVITATION_WORDS = {
    InvitationProblem.NO_CALENDAR: "the message holds no calendar invitation (no text/calendar part).",
    InvitationProblem.MALFORMED: "its calendar cannot be read ({detail}).",
    InvitationProblem.NOT_A_REQUEST: "its calendar is no invitation (METHOD {method}, not REQUEST); only an "
    "invitation is answered.",
    InvitationProblem.NOT_AN_ATTENDEE: "the account is no attendee: it invites {attendees}, none of them an "
    "address of the account (or from_address); the user adds send-as identities with addresses.",
}


def _invitation_refused(exc: InvitationRefused, call: Call | None) -> ToolFailure:
    reason = exc.problem.value
    if exc.later is None:
        attendees = ", ".join(exc.attendees) or "nobody"
        problem = _INVITATION_WORDS[exc.problem].format(
            detail=exc.detail, method=exc.method, attendees=attendees
        )
        extra = {"attendees": exc.attendees} if exc.attendees else {}
        return ToolFailure.invalid_input(
            "reply_to_invitation", problem + " Nothing was saved.", reason=reason, **extra
        )
    what = "cancels" if exc.problem is InvitationProblem.CANCELLED else "updates (a later SEQUENCE)"
    return ToolFailure(
        ErrorCode.CONFLICT,
        f"Invalid 'reply_to_invitation': a later message ({exc.later}) {what} this invitation; nothing was "
        "saved. Read it, and answer it instead if it still invites the user.",
        details={"parameter": "reply_to_invitation", "reason": reason, "later_message_id": exc.later},
        retryable=False,
        next_action=NextAction(
            instruction="Read the later message", tool="imap_get_message", arguments={"message_id": exc.later}
        ),
    )


#: The registry's lines of the refusals of saving a draft.
DRAFT_FAILURES: Mapping[type[BaseException], Callable[[Any, Call | None], ToolFailure]] = {
    ForeignMessage: _foreign_message,
    SenderNotOwn: _sender_not_own,
    TooManyRecipients: _too_many_recipients,
    DraftNotReplaceable: _not_replaceable,
    DraftTooLarge: _draft_too_large,
    InvitationRefused: _invitation_refused,
}

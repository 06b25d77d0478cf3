"""imap_send_draft: send a saved draft over SMTP submission, once, only after the user approved exactly the
message shown to them (MCP elicitation; an approval page where the client cannot ask, when one is plugged
in; refused otherwise). Governed by the account's ``send_enabled`` alone; the rules are in
``services/send_draft.py``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from mail_imap_mcp.asking.records import Ask
from mail_imap_mcp.call import Call
from mail_imap_mcp.envelope import ErrorCode, NextAction, ToolFailure, ToolResult
from mail_imap_mcp.envelope.model import status_for
from mail_imap_mcp.mail.errors import MessageGone
from mail_imap_mcp.operations.audit import audit
from mail_imap_mcp.presentation.issues import worded
from mail_imap_mcp.presentation.writes import audited
from mail_imap_mcp.services.message_lookup import resolve_message
from mail_imap_mcp.tools.send_draft_models import RefusedRecipient, SendDraftData, SendDraftInput
from mail_imap_mcp.tools.spec import SENDING, ToolSpec

if TYPE_CHECKING:
    from mail_imap_mcp.imap.connection import AccountConnection
    from mail_imap_mcp.operations import Operation
    from mail_imap_mcp.services.send_prepare import Prepared

NAME = "imap_send_draft"
TITLE = "Send a saved draft (the user approves it)"
DESCRIPTION = (
    "Send a draft from Drafts (save it first with imap_save_draft). The user is shown it and must approve; "
    "you cannot approve it. Sent once: never retry an outcome_unknown. Waiting for the user, it may answer "
    "data.background: poll imap_get_operation."
)
DETAILS = (
    "Send a saved draft by its message_id over the account's SMTP submission server (implicit TLS or "
    "STARTTLS; AUTH PLAIN with the account's password, or XOAUTH2/OAUTHBEARER with its token). Only for an "
    "account with send_enabled, and only to allowed_recipients (To, Cc and Bcc, checked before any "
    "connection). Before anything is sent the user is shown every part a recipient's client may display: From, "
    "Sender, Reply-To, each To, Cc and Bcc on its own line, the subject, each attachment's name, type and size, the whole "
    "text with its lines, each HTML part as rendered text, the Message-ID, In-Reply-To, References and the draft's fingerprint; through "
    "the client (MCP elicitation) only when that text holds everything that leaves: at most 4,000 characters, "
    "each HTML part plain (no style, script, image, comment, title or hidden element) and saying nothing the "
    "text does not, no other header field, no MIME preamble or epilogue; else on the approval page, which renders "
    "the HTML in a sandboxed frame (no script, nothing loaded) and lists all the rest; the approval is bound to exactly that text and this call, so a draft "
    "changed since is asked about again, never sent as approved. No argument, token or setting lets an agent "
    "approve (confirm_without_elicitation does not apply); without elicitation, or for a message only the page shows, it "
    "is refused (saying why) unless an approval page is available (one open page per account). On the page (a browser on the user's desktop) the user may take minutes: a call "
    "with a progressToken hears progress and answers the decision; one without answers at once "
    "outcome waiting_for_approval with data.background, whose imap_get_operation result is the send's own answer "
    "(sent, outcome_unknown, or the error: declined, expired, page reopened, draft changed); imap_cancel_operation closes the "
    "page and sends nothing; the same draft sent again meanwhile is conflict. The draft's bytes are sent as saved, with Date replaced and Bcc left out of "
    "the transmitted copy; From must be one of the account's addresses; at most 100 recipients; at most the submission server's SIZE where it states one, else max_send_bytes (25 MiB by default), the limit imap_save_draft applies too. At most once: "
    "the draft's Message-ID (one derived from its content is added when it has none) is recorded for every process "
    "of the machine (after restarts too; Redis in a team), claimed on the IMAP server where it allows (a "
    "keyword), and looked for in Sent before each send; a connection lost after the message went out is "
    "outcome_unknown, never retried, and the draft is then refused (conflict) like one already sent. After "
    "the server accepted it: a copy in Sent with \\Seen (unless the provider files one: Gmail, Microsoft "
    "365), \\Answered on the message replied to (found by In-Reply-To in INBOX, All Mail or another folder) and $Forwarded on the message forwarded (where its folder keeps keywords; a warning says when not), the draft moved to Trash; a "
    "step that fails is an issue of a successful answer. Recipients the server refused are named in "
    "data.refused (status partial). At most send_rate_per_hour sends an hour per account."
)
ERRORS = {
    "invalid_input": "message_id is malformed, or the draft cannot be sent as it is (not in Drafts, From not "
    "the account's, a repeated header, an address that does not parse, no or over 100 recipients).",
    "not_found": "The account or the draft is gone, or the draft changed while the user was approving it.",
    "permission_denied": "send_enabled is off for the account; a recipient is outside allowed_recipients; the "
    "client cannot ask the user and no approval page is available; the server refused the message or every "
    "recipient. Nothing was sent.",
    "confirmation_required": "The user declined or cancelled, or reopened the page; nothing was sent.",
    "conflict": "This draft was sent already, is being sent or waits for the user on an approval page, or its "
    "earlier send's outcome is unknown; or another approval page of the account is open.",
    "limit_exceeded": "send_rate_per_hour reached, or the draft is over the submission server's SIZE (or "
    "max_send_bytes where it states none).",
    "auth_failed": "The submission server refused the login.",
    "unavailable": "The submission server could not be reached or TLS failed, or the account names none; "
    "nothing was sent.",
    "timeout": "The submission server did not answer before the message was sent; nothing was sent.",
}


def handle(app: Call, args: SendDraftInput) -> ToolResult[SendDraftData]:
    """``services.send_draft`` once ``app.ask(Ask)`` approved ``send_review``'s review; audited."""
    from mail_imap_mcp.services.send_draft import check_not_sent, waiting_for_approval
    from mail_imap_mcp.services.send_page import MessageRenderer
    from mail_imap_mcp.services.send_prepare import prepare
    from mail_imap_mcp.services.send_review import review

    connection, ref = resolve_message(app, args.message_id)
    account_id = connection.account_id  # sending allowed there: the registry checked SENDING's gate
    with audited(_failed(app, account_id)):
        prepared = prepare(app, account_id, ref)
    try:
        with audited(_failed(app, account_id)):
            check_not_sent(app, connection, prepared)
            asked = Ask(
                account_id,
                review(prepared.outgoing, prepared.draft, account_id, prepared.forwarded_shown),
                MessageRenderer(prepared.draft),
                then=lambda: _approved(app, connection, prepared),
                waiting=lambda: waiting_for_approval(app, prepared),  # another page for the draft is refused
                audited=lambda: audited(_failed(app, account_id)),
            )
        answered = app.ask(asked)
    except BaseException:
        prepared.close()
        raise
    # Done: _approved sent and closed the draft's file; Waiting: it closes it once the send goes on.
    return answered.answer(lambda operation: _waiting(ref.message_id, account_id, operation))


def _failed(app: Call, account_id: str) -> Callable[[ToolFailure], None]:

    return lambda failure: audit(app.caller, NAME, account_id, "send", 0, failure.code)


def _approved(app: Call, connection: AccountConnection, prepared: Prepared) -> ToolResult[SendDraftData]:
    """Send ``prepared``, which the user approved in this call, unless it changed meanwhile."""
    from mail_imap_mcp.services.send_draft import send
    from mail_imap_mcp.services.send_prepare import still_as_approved

    ref, account_id = prepared.ref, prepared.account_id
    try:
        still_as_approved(app, prepared)
    except MessageGone:
        raise ToolFailure(
            ErrorCode.NOT_FOUND,
            "The draft was changed or removed while the user was approving it: nothing was sent. Find the "
            "draft in Drafts again and send that; the user is asked anew.",
            details={
                "parameter": "message_id",
                "message_id": ref.message_id,
                "approval": "draft_changed",
            },
            retryable=False,
        ) from None
    try:
        result = send(app, connection, prepared, NAME)
    finally:
        prepared.close()
    issues = worded(result.issues)
    refused = [RefusedRecipient(address=a, reply=r) for a, r in result.refused.items()]
    data = SendDraftData(
        account_id=account_id,
        message_id=ref.message_id,
        header_message_id=result.header_id,
        outcome=result.outcome,
        accepted=result.accepted,
        refused=refused,
        sent_copy=result.sent_copy,
        answered=result.answered,
        forwarded=result.forwarded,
        draft_moved_to_trash=result.draft_moved,
        status=status_for(issues),
        issues=issues,
        next_action=_look_in_sent(prepared.sent_mailbox, result.header_id),
    )
    if result.outcome == "outcome_unknown":
        summary = "Outcome unknown: the connection was lost after the message went out; not sent again"
    elif refused:
        summary = f"Sent to {len(result.accepted)} recipient(s); {len(refused)} refused by the server"
    else:
        summary = f"Sent to {len(result.accepted)} recipient(s)"
    return ToolResult(summary=summary, data=data, warnings=result.warnings)


def _waiting(message_id: str, account_id: str, operation: Operation) -> ToolResult[SendDraftData]:
    """The answer while the user decides on the approval page: the operation to poll (nothing sent yet)."""
    data = SendDraftData(
        account_id=account_id,
        message_id=message_id,
        header_message_id="",
        outcome="waiting_for_approval",
        accepted=[],
        refused=[],
        sent_copy=None,
        answered=False,
        draft_moved_to_trash=False,
        status="ok",
        issues=[],
        next_action=NextAction(
            instruction="The user is deciding in their browser: check the send (its result once decided)",
            tool="imap_get_operation",
            arguments={"operation_id": operation.operation_id},
        ),
        background=operation.ref(),
    )
    summary = (
        f"Waiting for the user to approve the message in their browser, as {operation.operation_id}; follow "
        "it with imap_get_operation (imap_cancel_operation closes the page, sending nothing)"
    )
    return ToolResult(summary=summary, data=data)


def _look_in_sent(sent: str | None, header_id: str) -> NextAction | None:
    if sent is None:
        return None
    return NextAction(
        instruction="Find the message in Sent",
        tool="imap_search_messages",
        arguments={"mailbox": sent, "query": header_id.strip("<>")},
    )


TOOL = ToolSpec(
    name=NAME,
    title=TITLE,
    description=DESCRIPTION,
    details=DETAILS,
    input_model=SendDraftInput,
    data_model=SendDraftData,
    handle=handle,
    errors=ERRORS,
    capability=SENDING,
    idempotent=False,
    changes=("New: sends a saved draft, approved by the user, at most once (issue 49).",),
)

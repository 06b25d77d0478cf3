"""imap_save_draft: build a plain-text message (optionally a quoted reply) and APPEND it to the Drafts
folder with ``\\Draft \\Seen``. Nothing is ever sent: the user reviews and sends it from their client.

The message is built by the stdlib email package (UTF-8, RFC 2047 headers, CRLF, a new Message-ID with
the account's domain); no argument can add a header line. The draft's message_id comes from APPENDUID
(UIDPLUS), else from one ``UID SEARCH HEADER Message-ID``. A connection lost after the APPEND was sent is
``outcome_unknown``, never retried. A revision moves the draft it replaces to Trash (``services/drafts``).

Its spec and the saving are here; what it answers is :mod:`.answer`, its arguments and data :mod:`.models`.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import TYPE_CHECKING

from mail_imap_mcp.call import Call
from mail_imap_mcp.envelope import Issue, ToolFailure, ToolResult
from mail_imap_mcp.mail.roles import DRAFTS, TRASH
from mail_imap_mcp.operations.audit import audit
from mail_imap_mcp.presentation.issues import worded
from mail_imap_mcp.presentation.writes import audited
from mail_imap_mcp.tools.save_draft.models import NAME, SaveDraftData, SaveDraftInput
from mail_imap_mcp.tools.spec import DRAFT_CONTENTS, WRITING, ToolSpec

if TYPE_CHECKING:
    from mail_imap_mcp.services.drafts import Replaced

TITLE = "Save a draft (never sends)"
DESCRIPTION = (
    "Save a draft (plain-text body, attachments, Bcc) in Drafts; nothing is sent. in_reply_to makes a reply (Re:, threading, the "
    "original quoted, to its sender). replace_message_id revises a draft: the old one goes to Trash, "
    "next_action undoes it."
)
DETAILS = (
    "Save an email draft in the account's Drafts folder: a plain-text body, with attachments and Bcc where "
    "given. This tool never sends: the user sends it "
    "from their mail client, or, where the account has sending on, imap_send_draft does once the user approved "
    "it. With in_reply_to (a message_id) the draft is a reply: one 'Re:' before the original's subject, "
    "In-Reply-To and References headers, the original's start quoted below body_text, and `to` defaulting to "
    "the original's Reply-To or From; reply_all adds its To and Cc as Cc (never the account's own addresses, no"
    " address twice). from_address picks one of the account's addresses. replace_message_id revises a draft: "
    "the new one is saved, then the old one moved to Trash (never deleted for good), and next_action undoes it "
    "(data.undo: the old draft moved back as it was, the new one to Trash); a draft with attachments is "
    "replaced only once the user confirmed it through the client. Returns the draft's message_id (read it back "
    "with imap_get_message). dry_run returns the message that would be saved, without saving it. "
    "bcc recipients are kept in the draft and the Sent copy and never shown to the others (sending leaves "
    "the Bcc line out of what is transmitted). attachments are references, never bytes: '<message_id>#"
    "<part_id>' (a part imap_get_message lists, or its resource_uri), fetched part by part and carried "
    "byte-exact with its type, name and disposition, or the path of a file inside a folder of "
    "attachment_dirs (absolute, or relative to the one folder that holds it); each at most "
    "max_attachment_bytes, the whole draft at most the IMAP server's APPENDLIMIT where it says one and, "
    "on an account that sends, at most what imap_send_draft sends (the submission server's SIZE where it "
    "says one, else max_send_bytes), counted encoded. data.draft.attachments lists each with its name, "
    "type, size and where it comes from, as the user is shown it when asked to approve the send. A "
    "revision keeps the replaced draft's attachments unless attachments is given ([] for none). "
    "forward_of forwards a message: 'Fwd: ' and its subject (once), References to it, to the recipients "
    "given; forward_as 'inline' (the default) puts its From/Date/Subject/To block and text below body_text "
    "and carries its attachments byte-exact, 'attachment' attaches it whole as message/rfc822, byte for "
    "byte. Sending it marks the original $Forwarded where its folder keeps keywords (data.draft.forwarded: "
    "its subject and sender, as the user is shown it). reply_to_invitation answers a calendar invitation "
    "(a text/calendar REQUEST): an iMIP REPLY (RFC 5546) to its organizer, from the account's address it "
    "invites, with invitation_answer as the PARTSTAT and body_text as a comment (data.draft.invitation_reply: "
    "the answer in words, as the user is shown it); refused when the account is no attendee, the calendar "
    "is no REQUEST, or a later message in its folder or INBOX cancels or updates it."
)
ERRORS = {
    "invalid_input": "An item of attachments names no part ('<message_id>#<part_id>') or a message body; "
    "an address, the subject or the body is malformed, contains control characters "
    "(CR/LF would add header lines) or is too large; in_reply_to or replace_message_id is malformed or "
    "of another account; reply_all without in_reply_to; from_address is not one of the account's "
    "addresses; replace_message_id is not a \\Draft message of the Drafts folder, or Drafts is the Trash; "
    "more than one of in_reply_to, forward_of and reply_to_invitation; reply_to_invitation not answerable "
    "(details.reason: no_calendar, calendar_malformed, not_a_request, not_an_attendee).",
    "not_found": "The account, the message of in_reply_to or replace_message_id, the Drafts folder (no "
    "\\Drafts mailbox or drafts_mailbox setting), or for replace_message_id the Trash is missing; a message "
    "or part, or a file, of attachments[i] is missing (the error names the item).",
    "conflict": "The mailbox of in_reply_to or replace_message_id changed (UIDVALIDITY); rerun the search. "
    "reply_to_invitation: a later message cancels or updates the invitation (details.reason "
    "invitation_cancelled or invitation_superseded, details.later_message_id).",
    "permission_denied": "Writes are off for this account (write_enabled), a file of attachments is not "
    "inside a folder of attachment_dirs, the server refused the APPEND, "
    "replace_message_id on a server with neither MOVE nor UIDPLUS (it cannot move exactly one message), "
    "or of a draft with attachments where the client cannot ask the user to confirm (no elicitation).",
    "confirmation_required": "replace_message_id of a draft with attachments: the user declined (or the "
    "client could not ask); nothing was changed.",
    "limit_exceeded": "The server refused the draft: over quota; an attachment is over max_attachment_bytes, "
    "or the draft over the IMAP server's APPENDLIMIT, the submission server's SIZE or max_send_bytes (nothing "
    "was saved); "
    "forward_of: one of its attachments, or the message whole, is over max_attachment_bytes.",
    "auth_failed": "The server rejected the credentials.",
    "unavailable": "The server cannot be reached; nothing was saved.",
    "timeout": "A command exceeded its time budget.",
}


def handle(app: Call, args: SaveDraftInput) -> ToolResult[SaveDraftData]:
    """``services.drafts`` (a replaced draft confirmed by ``app.ask``), audited by ``presentation.writes``."""
    from mail_imap_mcp.services.draft_compose import compose
    from mail_imap_mcp.services.drafts import (
        audit_ids,
        check_replaceable,
        mailbox_directory,
        parse_own_id,
        read_original,
        save_and_retire,
    )
    from mail_imap_mcp.tools.save_draft.answer import saved_answer

    connection = app.write_connection(args.account_id)
    account_id = connection.account_id
    action = "dry_run:save" if args.dry_run else ("replace" if args.replace_message_id else "save")
    if args.reply_all and args.in_reply_to is None:
        raise ToolFailure.invalid_input(
            "reply_all",
            "it needs in_reply_to (the message_id of the message answered).",
            conflicts_with="in_reply_to",
        )
    made_from = [args.in_reply_to, args.forward_of, args.reply_to_invitation]
    if sum(given is not None for given in made_from) > 1:
        which = "forward_of" if args.forward_of else "reply_to_invitation"
        raise ToolFailure.invalid_input(which, "only one of in_reply_to, forward_of and reply_to_invitation.")
    issues: list[Issue] = []
    with audited(lambda failure: audit(app.caller, NAME, account_id, action, 1, failure.code)):
        original = None
        if args.in_reply_to is not None:
            original = read_original(app, parse_own_id(app, account_id, args.in_reply_to, "in_reply_to"))
        directory = mailbox_directory(app, account_id)
        mailbox = directory.require(DRAFTS, account_id)
        replaced: Replaced | None = None
        if args.replace_message_id is not None:
            trash = directory.require(TRASH, account_id, ", where a replaced draft is kept for the undo")
            replaced = check_replaceable(app, account_id, args, mailbox, trash)
        with ExitStack() as stack:  # the attachments' temporary files
            draft = compose(app, account_id, args, original, replaced, stack)
            raw = draft.built.whole() if not args.dry_run else bytearray()
        saving = save_and_retire(
            app, account_id, mailbox, raw, draft.header_id, replaced, dry_run=args.dry_run
        )
        del raw
        issues += worded(saving.issues)
    outcome = "outcome_unknown" if not saving.saved and not args.dry_run else "ok"
    messages = 1 if replaced is None else 2
    audit(app.caller, NAME, account_id, action, messages, outcome, **audit_ids(replaced, saving.retired))
    return saved_answer(app, args, account_id, mailbox, draft, original, replaced, saving, issues)


TOOL = ToolSpec(
    name=NAME,
    title=TITLE,
    description=DESCRIPTION,
    details=DETAILS,
    input_model=SaveDraftInput,
    data_model=SaveDraftData,
    handle=handle,
    errors=ERRORS,
    capability=WRITING,
    gated_arguments={"bcc": DRAFT_CONTENTS, "attachments": DRAFT_CONTENTS},
    idempotent=False,
    changes=(
        "replace_message_id moves the replaced draft to Trash, never expunges it (security.md, C1); "
        "data.undo moves it back as it was; a draft with attachments needs the user's confirmation "
        "(MCP elicitation); servers need MOVE or UIDPLUS (UIDPLUS alone before).",
        "bcc, and attachments by reference (parts of messages, files of attachment_dirs); a revision keeps "
        "the replaced draft's attachments unless attachments is given (it used to drop them).",
    ),
)

"""imap_apply_to_messages: move, copy or delete messages by id, with their new ids and an undo. The work
is :mod:`mail_imap_mcp.operations.transfer`; ``delete`` moves to the account's Trash (so does a move or
copy into Gmail's Trash, answered as a delete); ``permanent`` removal needs ``allow_permanent_delete``,
UIDPLUS and the user's confirmation.

Its spec and dispatch are here, a module per flow: :mod:`.by_ids`, :mod:`.by_search` and
:mod:`.unsubscribing`; its arguments and data in :mod:`.models`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mail_imap_mcp.call import Call
from mail_imap_mcp.capabilities import UNSUBSCRIBING
from mail_imap_mcp.envelope import ToolResult
from mail_imap_mcp.presentation import bulk, unsubscribe
from mail_imap_mcp.presentation.unsubscribe import UnsubscribeData
from mail_imap_mcp.tools.apply_to_messages.models import (
    NAME,
    ApplyToMessagesData,
    ApplyToMessagesInput,
)
from mail_imap_mcp.tools.spec import DESTRUCTIVE_WRITING, ToolSpec

TITLE = "Move, copy or delete messages"
DESCRIPTION = (
    "Move, copy or delete up to 250 messages of one account. delete moves them to Trash; permanent (where "
    "allowed) removes them for good once the user confirms. next_action undoes a move or delete."
)
DETAILS = (
    "Move, copy or delete up to 250 messages of one account, given by message_id (from "
    "imap_search_messages). move and copy need destination_mailbox, an existing mailbox (see "
    "imap_list_mailboxes). delete moves the messages to the account's Trash, so they can be restored; "
    "permanent: true removes them for good where the configuration allows it, after the user confirmed. "
    "On Gmail, archive moves INBOX messages to All Mail (only the Inbox label goes). Each moved or copied "
    "message gets its new_message_id; next_action undoes a move, delete or archive; dry_run changes nothing."
    "\n\n" + bulk.APPLY_DETAILS + "\n\n" + unsubscribe.DETAILS
)
ERRORS = {
    "invalid_input": "A message_id is malformed, ids of several accounts, destination_mailbox missing for "
    "move/copy or given for delete, a move into the messages' own mailbox, a delete (not permanent) "
    "of messages already in Trash, or by search: a malformed query, no mailbox, an action other than move "
    "or delete, or permanent (refused); for unsubscribe, over 20 ids or lists.",
    "not_found": "The account, a message's mailbox, destination_mailbox or the Trash mailbox does not "
    "exist (none is created), none of the messages exists any more, or the undo token is unknown, used "
    "or older than 24 hours.",
    "conflict": "A mailbox's UIDVALIDITY changed since the ids were issued; nothing was changed; "
    "next_action reruns the search.",
    "permission_denied": "Writes are off for the account (write_enabled), permanent delete is not allowed "
    "(allow_permanent_delete) or cannot be confirmed by the user (the client has no MCP elicitation), or "
    "the server lacks the extension needed to touch exactly these messages (MOVE or UIDPLUS; UIDPLUS for "
    "a permanent delete), or unsubscribe_enabled is off (or nobody can approve an unsubscribe).",
    "confirmation_required": "The user did not confirm the permanent delete (or declined an unsubscribe) "
    "when the client asked them; "
    "nothing was changed. Where the user allowed token confirmation (confirm_without_elicitation), call "
    "again with confirm_token (see next_action) once the user agreed.",
    "limit_exceeded": "The server refused the change: over quota.",
    "auth_failed": "The server rejected the credentials.",
    "unavailable": "The server cannot be reached, or refused the change for another reason.",
    "timeout": "A command exceeded its time budget.",
}


#: What each action asks for, as its failure's summary leads with it.
_ASKED = {
    "move": "Move messages",
    "copy": "Copy messages",
    "delete": "Delete messages",
    "archive": "Archive messages",
    "unsubscribe": "Unsubscribe",
}


def asked(arguments: Mapping[str, Any]) -> str | None:
    """What the call asks for in a failure's first words: its action (an undo undoes it), the title where
    the action is none of them."""
    if arguments.get("undo") is not None:
        return "Undo a move or delete"
    action = arguments.get("action")
    if action == "delete" and arguments.get("permanent") is True:
        return "Delete messages permanently"
    return _ASKED.get(action) if isinstance(action, str) else None


def handle(app: Call, args: ApplyToMessagesInput) -> ToolResult[Any]:
    """The flow the arguments ask for: unsubscribe, by search (or its undo), or by id (each flow's modules
    load at its first call: a server's start lists the tool, it runs none)."""
    if args.action == "unsubscribe":
        from mail_imap_mcp.tools.apply_to_messages.unsubscribing import unsubscribe_from_lists

        return unsubscribe_from_lists(app, args)
    if args.message_ids is None or args.query is not None:
        from mail_imap_mcp.tools.apply_to_messages.by_search import by_search

        return by_search(app, args)
    from mail_imap_mcp.tools.apply_to_messages.by_ids import by_ids

    return by_ids(app, args)


TOOL = ToolSpec(
    name=NAME,
    title=TITLE,
    description=DESCRIPTION,
    details=DETAILS,
    input_model=ApplyToMessagesInput,
    data_model=ApplyToMessagesData,
    handle=handle,
    errors=ERRORS,
    capability=DESTRUCTIVE_WRITING,
    gated_values={"action": {"unsubscribe": UNSUBSCRIBING}},
    asked=asked,
    other_data_models=(UnsubscribeData,),
    idempotent=False,
    changes=(
        '`action: "unsubscribe"` (with unsubscribe_enabled) replaces imap_unsubscribe: ids or a search, the '
        "messages moved to destination_mailbox in the same approval.",
        '`action: "archive"` (Gmail, X-GM-EXT-1) takes INBOX messages out of the inbox, undone by moving them '
        "back; on Gmail a permanent delete outside Trash and Spam is refused (an expunge there only removes a "
        "label)",
        "A permanent delete asks the user (or hands back the confirming call) before it starts, never "
        "from the background, so a client with MCP elicitation is asked too.",
        "data.background names a write that continues in the background, as in "
        "imap_update_message_flags; data.operation is its deprecated alias for this release.",
    ),
)

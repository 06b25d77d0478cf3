"""imap_update_message_flags: add, remove or replace flags of up to 250 messages; each one's flags after.

Per mailbox, in one read-write SELECT (UIDVALIDITY checked): ``UID FETCH FLAGS`` (and ``MODSEQ`` for a
replace where the server has CONDSTORE), one ``UID STORE ... FLAGS.SILENT`` (never retried), and a
``UID FETCH FLAGS`` that reads back what the messages carry now. A replace keeps ``\\Deleted`` where it
is (deleting is imap_apply_to_messages) and, with CONDSTORE, is conditional (``UNCHANGEDSINCE``) on the
flags read in the same SELECT: a message another client changed meanwhile is reported, not overwritten.

Its spec and dispatch are here, a module per flow (:mod:`.by_ids`, :mod:`.by_search`); its arguments and data
in :mod:`.models`.
"""

from __future__ import annotations

from mail_imap_mcp.call import Call
from mail_imap_mcp.envelope import ToolResult
from mail_imap_mcp.presentation import bulk
from mail_imap_mcp.tools.spec import WRITING, ToolSpec
from mail_imap_mcp.tools.update_message_flags.models import (
    NAME,
    UpdateFlagsData,
    UpdateFlagsInput,
)

TITLE = "Update message flags"
DESCRIPTION = (
    "Mark up to 250 messages of one account read or unread, flagged or not, or set keywords: operation "
    "add, remove or replace flags. Returns each one's flags after, and an undo next_action."
)
DETAILS = (
    "Mark messages read or unread, flag or unflag them, or set keywords: `operation` add, remove or "
    "replace `flags` (\\Seen read, \\Flagged starred, \\Answered, \\Draft, or keywords such as "
    "$Important) on up to 250 message_ids of one account, from any of its mailboxes. Returns each "
    "message's flags after the change and whether they changed, and an undo next_action. replace "
    "keeps \\Deleted as it is and, where the server has CONDSTORE, never overwrites a message another "
    "client changed meanwhile (issue modified_meanwhile). Deleting is imap_apply_to_messages. Safe to "
    "repeat; dry_run shows what would change. On Gmail (X-GM-EXT-1), `labels` are changed by the same "
    "operation (UID STORE X-GM-LABELS): Inbox, Important and the user's labels, as summaries show them; "
    "removing Inbox archives. A message a label change takes out of its mailbox gets its All Mail id as "
    "new_message_id, which the undo uses. Elsewhere labels are refused (unsupported)."
    "\n\n" + bulk.FLAGS_DETAILS
)
ERRORS = {
    "invalid_input": "A message id or flag is malformed or not allowed (e.g. \\Deleted), ids name several "
    "accounts, too many ids or flags, no mailbox allows a keyword to be added, or by search: a malformed "
    "query, no mailbox, or replace or labels (they take message_ids).",
    "permission_denied": "Writes are turned off for the account (write_enabled); nothing was changed.",
    "not_found": "The account or the mailbox is unknown, none of the messages exists any more, or the undo "
    "token is unknown, used or older than 24 hours.",
    "conflict": "The mailbox's UIDVALIDITY changed since the ids were issued (nothing was changed); "
    "next_action reruns the search.",
    "limit_exceeded": "The server refused the change for quota reasons.",
    "auth_failed": "The server rejected the credentials.",
    "unavailable": "The server cannot be reached, or refused the STORE; nothing was changed.",
    "timeout": "A command exceeded its time budget before anything was sent.",
}


def handle(app: Call, args: UpdateFlagsInput) -> ToolResult[UpdateFlagsData]:
    """The flow the arguments ask for: by search (or its undo), or by id."""
    if args.message_ids is None or args.query is not None:
        from mail_imap_mcp.tools.update_message_flags.by_search import by_search

        return by_search(app, args)
    from mail_imap_mcp.tools.update_message_flags.by_ids import by_ids

    return by_ids(app, args)


TOOL = ToolSpec(
    name=NAME,
    title=TITLE,
    description=DESCRIPTION,
    details=DETAILS,
    input_model=UpdateFlagsInput,
    data_model=UpdateFlagsData,
    handle=handle,
    errors=ERRORS,
    capability=WRITING,
    changes=(
        "`labels` (Gmail, X-GM-EXT-1) changes Gmail labels with the same operation, beside or instead of `flags` "
        "(which are no longer required); results carry `labels`, `previous_labels` and, for a message the "
        "change took out of its mailbox, `new_message_id` in All Mail, which the undo uses; on a server "
        "without X-GM-EXT-1 `labels` is `unsupported`, a new error code (as are `archive` and the query's "
        "Gmail operators)",
    ),
    idempotent=True,
)

"""Finding the message a tool was given by id: the id checked against the accounts and its mailbox
examined (``conflict`` when the mailbox changed since the id was issued)."""

from __future__ import annotations

from mail_imap_mcp.call import Connections
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.imap.view import MailboxState
from mail_imap_mcp.mail.errors import UidValidityChanged
from mail_imap_mcp.mail.ids import ForeignMessageId, InvalidMessageId, MessageRef, parse_message_id

# Error codes of the tools that read one message by id (rendered into docs/tools.md).
MESSAGE_TOOL_ERRORS = {
    "invalid_input": "message_id is malformed or another argument is out of range.",
    "not_found": "The account or mailbox is unknown, or the message no longer exists.",
    "conflict": "The mailbox's UIDVALIDITY changed since the id was issued; next_action reruns the search.",
    "auth_failed": "The server rejected the credentials.",
    "unavailable": "The server cannot be reached.",
    "timeout": "A command exceeded its time budget.",
}


def resolve_message(app: Connections, message_id: str) -> tuple[AccountConnection, MessageRef]:
    """Parse and check a message id against the configured accounts."""
    try:
        ref = parse_message_id(message_id, app.caller)
    except ForeignMessageId:  # said as a message that does not exist
        raise
    except InvalidMessageId as exc:  # named as the argument that gave it; the registry words it
        raise InvalidMessageId(str(exc), "message_id") from None
    return app.connection(ref.account_id), ref


def examine_for(session: ImapSession, ref: MessageRef) -> MailboxState:
    """Select the message's mailbox read-only and make sure the id still refers to it."""
    state = session.examine(ref.mailbox)
    if state.uidvalidity != ref.uidvalidity:
        # The failure registry says it as a conflict whose next_action reruns the search.
        raise UidValidityChanged(ref.uidvalidity, state.uidvalidity, ref.mailbox)
    return state

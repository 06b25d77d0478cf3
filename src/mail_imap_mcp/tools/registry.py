"""Every tool, in the order clients list them (bound to the application, each call's view built for its
caller, in :mod:`mail_imap_mcp.tool_calls`)."""

from __future__ import annotations

from typing import Any

from mail_imap_mcp.tools import (
    apply_to_messages,
    cancel_operation,
    get_attachment,
    get_changes,
    get_message,
    get_message_raw,
    get_operation,
    get_thread,
    list_accounts,
    list_mailboxes,
    manage_mailbox,
    manage_rules,
    save_draft,
    search_messages,
    send_draft,
    update_message_flags,
)
from mail_imap_mcp.tools.spec import ToolSpec

#: Every tool, in the order clients list them.
TOOLS: list[ToolSpec[Any]] = [
    list_accounts.TOOL,
    list_mailboxes.TOOL,
    search_messages.TOOL,
    get_message.TOOL,
    get_thread.TOOL,
    get_message_raw.TOOL,
    get_attachment.TOOL,
    get_changes.TOOL,
    update_message_flags.TOOL,
    apply_to_messages.TOOL,
    manage_mailbox.TOOL,
    manage_rules.TOOL,
    save_draft.TOOL,
    send_draft.TOOL,
    get_operation.TOOL,
    cancel_operation.TOOL,
]

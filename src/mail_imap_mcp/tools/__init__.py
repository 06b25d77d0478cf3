"""The tools: each module validates input, calls the IMAP layer and builds an envelope."""

from __future__ import annotations

import functools
from types import ModuleType

from mail_imap_mcp.envelope.mcp import EnvelopeTool, envelope_tool
from mail_imap_mcp.tools import (
    get_message,
    get_message_raw,
    list_accounts,
    list_mailboxes,
    search_messages,
)
from mail_imap_mcp.tools.context import AppContext

# (module, input model, data model) in the order clients list them.
TOOL_MODULES: list[tuple[ModuleType, type, type]] = [
    (list_accounts, list_accounts.ListAccountsInput, list_accounts.ListAccountsData),
    (list_mailboxes, list_mailboxes.ListMailboxesInput, list_mailboxes.ListMailboxesData),
    (search_messages, search_messages.SearchMessagesInput, search_messages.SearchMessagesData),
    (get_message, get_message.GetMessageInput, get_message.GetMessageData),
    (get_message_raw, get_message_raw.GetMessageRawInput, get_message_raw.GetMessageRawData),
]


def build_tools(app: AppContext) -> list[EnvelopeTool]:
    """One envelope tool per module, its handler bound to ``app``."""
    return [
        envelope_tool(
            name=module.NAME,
            title=module.TITLE,
            description=module.DESCRIPTION,
            input_model=input_model,
            data_model=data_model,
            handler=functools.partial(module.handle, app),
        )
        for module, input_model, data_model in TOOL_MODULES
    ]

"""The arguments several prompts share."""

from __future__ import annotations

from mail_imap_mcp.prompts.spec import PromptArgument

ACCOUNT = PromptArgument(
    name="account_id",
    description="The account (completed from your own accounts); the first one listed when left empty.",
    absent="the first account imap_list_accounts() lists",
    completes="account",
)
MAILBOX = PromptArgument(
    name="mailbox",
    description="The mailbox (completed from the account's mailboxes); INBOX when left empty.",
    absent="'INBOX'",
    completes="mailbox",
)

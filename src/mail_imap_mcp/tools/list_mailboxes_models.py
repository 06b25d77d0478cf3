"""imap_list_mailboxes's arguments and data: the pydantic models behind its inputSchema and outputSchema."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mail_imap_mcp.envelope import MultiItemData, Payload
from mail_imap_mcp.presentation.arguments import DEFAULT_ACCOUNT, AccountId
from mail_imap_mcp.presentation.shapes import UntrustedContent


class ListMailboxesInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    account_id: AccountId = DEFAULT_ACCOUNT
    include_counts: bool = Field(default=False, description="Add counts from STATUS (slower).")


class Mailbox(Payload):
    name: str = Field(description="Decoded mailbox name; pass it as `mailbox` to other tools.")
    delimiter: str | None = Field(description="Hierarchy delimiter, e.g. '/' or '.'.")
    attributes: list[str] = Field(description="LIST attributes, e.g. \\HasNoChildren.")
    special_use: str | None = Field(description="Role reported by the server: \\Sent, \\Trash, ...")
    messages: int | None = Field(default=None, description="Message count (include_counts).")
    unseen: int | None = Field(default=None, description="Unseen count (include_counts).")
    uidvalidity: int | None = Field(default=None, description="UIDVALIDITY (include_counts).")
    uidnext: int | None = Field(default=None, description="UIDNEXT (include_counts).")


class ListMailboxesData(MultiItemData):
    account_id: str = Field(description="Account the mailboxes belong to.")
    total: int = Field(description="Mailboxes the server listed.")
    returned: int = Field(description="Mailboxes in this response (bounded by server.max_mailboxes).")
    mailboxes: list[Mailbox] = Field(description="Mailboxes, INBOX first, then by name.")
    untrusted_content: UntrustedContent

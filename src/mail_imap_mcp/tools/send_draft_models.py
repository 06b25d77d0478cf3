"""imap_send_draft's arguments and data: the pydantic models behind its inputSchema and outputSchema."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mail_imap_mcp.envelope import MultiItemData
from mail_imap_mcp.operations import OperationRef
from mail_imap_mcp.presentation.arguments import MessageIdArg
from mail_imap_mcp.presentation.writes import operation_field


class SendDraftInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message_id: MessageIdArg = Field(description="The draft's message_id (in Drafts).")


class RefusedRecipient(BaseModel):
    address: str = Field(description="A recipient the server refused.")
    reply: str = Field(description="The server's reply.")


class SendDraftData(MultiItemData):
    account_id: str = Field(description="Account the message was sent from.")
    message_id: str = Field(description="The draft's message_id.")
    header_message_id: str = Field(description="The Message-ID the message was sent with.")
    outcome: Literal["sent", "outcome_unknown", "waiting_for_approval"] = Field(
        description="sent: the server accepted it; outcome_unknown: the connection was lost after the message "
        "went out (never retried; look in Sent); waiting_for_approval: the user decides on a page, see "
        "background."
    )
    accepted: list[str] = Field(description="Recipients the server accepted.")
    refused: list[RefusedRecipient] = Field(description="Recipients the server refused.")
    sent_copy: Literal["appended", "filed_by_provider"] | None = Field(
        description="How the copy in Sent came to be (null: none, data.issues says why)."
    )
    answered: bool = Field(description="The message replied to was marked \\Answered.")
    forwarded: bool = Field(default=False, description="The message forwarded was marked $Forwarded.")
    draft_moved_to_trash: bool = Field(description="The draft was moved to Trash.")
    background: OperationRef | None = operation_field()

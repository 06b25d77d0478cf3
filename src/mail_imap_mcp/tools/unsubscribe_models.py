"""The pydantic models of imap_unsubscribe: its arguments and its data."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mail_imap_mcp.envelope import NextAction
from mail_imap_mcp.operations import OperationRef
from mail_imap_mcp.presentation import writes
from mail_imap_mcp.presentation.arguments import MessageIdArg
from mail_imap_mcp.presentation.shapes import UntrustedContent

#: The most messages one call reads the lists of (one approval for all of them).
MAX_MESSAGES = 20


class UnsubscribeInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message_ids: list[MessageIdArg] = Field(min_length=1, max_length=MAX_MESSAGES, description="Their lists.")


class ListLeft(BaseModel):
    """One list: what it offers and what was done."""

    message_id: str = Field(description="The message its offer was read from.")
    list_name: str = Field(description="The list's name (List-Id), else the sender: the sender's text.")
    way: Literal["one_click", "mailto", "link", "none"] = Field(
        description="one_click: an HTTPS POST (RFC 8058, DKIM-verified); mailto: a draft; link: an address "
        "for the user to open themselves, never fetched; none: no List-Unsubscribe."
    )
    outcome: Literal[
        "would_do",
        "unsubscribed",
        "not_confirmed",
        "failed",
        "refused",
        "draft_saved",
        "open_yourself",
        "nothing_offered",
    ] = Field(description="What was done (would_do: nothing was, as nothing was to approve).")
    host: str | None = Field(default=None, description="Where the POST went (Unicode and ASCII forms).")
    status: int | None = Field(default=None, description="The list's HTTP status (only it is read).")
    draft_id: str | None = Field(default=None, description="The saved draft: send it with imap_send_draft.")
    link: str | None = Field(default=None, description="The untrusted address for the user to open.")
    detail: str = Field(default="", description="Why, where it did not unsubscribe.")


class UnsubscribeData(BaseModel):
    lists: list[ListLeft] = Field(description="One per list (messages of the same list are one).")
    dry_run: bool = Field(description="True: nothing was sent or saved (nothing was to approve).")
    next_action: NextAction | None = Field(default=None, description="The obvious next call.")
    background: OperationRef | None = writes.operation_field()
    untrusted_content: UntrustedContent

"""imap_get_message_raw's arguments and data: the pydantic models behind its inputSchema and outputSchema."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mail_imap_mcp.config.settings import MAX_WINDOW_BYTES
from mail_imap_mcp.envelope import Payload
from mail_imap_mcp.presentation.arguments import MessageIdArg


class GetMessageRawInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message_id: MessageIdArg
    offset_bytes: int = Field(default=0, ge=0, le=2**31, description="Window start (bytes).")
    max_bytes: int = Field(default=16_384, ge=1, le=MAX_WINDOW_BYTES, description="Window size (bytes).")


class GetMessageRawData(Payload):
    account_id: str = Field(description="Account of the message.")
    message_id: str = Field(description="The message read.")
    total_size_bytes: int = Field(description="Size of the whole message.")
    offset_bytes: int = Field(description="First byte of this window.")
    returned_bytes: int = Field(description="Bytes in this window.")
    truncated: bool = Field(description="True when bytes remain after this window.")
    raw_base64: str | None = Field(description="The window, base64-encoded, when raw_text is null.")
    raw_text: str | None = Field(description="The window as text, when it is valid UTF-8.")

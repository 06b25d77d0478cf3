"""imap_get_attachment's arguments and data: the pydantic models behind its inputSchema and outputSchema."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mail_imap_mcp.config.settings import MAX_WINDOW_BYTES, MAX_WINDOW_CHARS
from mail_imap_mcp.content.documents import CalendarEvent
from mail_imap_mcp.envelope import MultiItemData, Payload
from mail_imap_mcp.presentation.arguments import MessageIdArg, PartIdArg
from mail_imap_mcp.presentation.shapes import AttachmentInfo, UntrustedContent

TOOL_NAME = "imap_get_attachment"
Mode = Literal["text", "image", "bytes"]


class GetAttachmentInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message_id: MessageIdArg
    part_id: PartIdArg
    mode: Mode | None = Field(
        default=None,
        description="Omitted: image for PNG/JPEG/GIF/WebP, else text.",
    )
    offset: int = Field(default=0, ge=0, le=2**31, description="text: window start (characters).")
    max_chars: int = Field(
        default=20_000, ge=100, le=MAX_WINDOW_CHARS, description="text: window size (characters)."
    )
    offset_bytes: int = Field(default=0, ge=0, le=2**31, description="bytes: window start.")
    max_bytes: int = Field(default=16_384, ge=1, le=MAX_WINDOW_BYTES, description="bytes: window size.")
    save: bool = Field(default=False, description="Save it to the user's download folder; answers its path.")


class ImageInfo(Payload):
    mime_type: str = Field(description="Type of the image block returned (image/png, image/jpeg, ...).")
    width: int = Field(description="Width of the image returned, in pixels.")
    height: int = Field(description="Height of the image returned, in pixels.")
    original_width: int = Field(description="Width of the attachment itself.")
    original_height: int = Field(description="Height of the attachment itself.")
    downscaled: bool = Field(description="True when the image returned is smaller than the attachment.")
    size_bytes: int = Field(description="Bytes of the image returned.")


class GetAttachmentData(MultiItemData):
    account_id: str = Field(description="Account of the message.")
    message_id: str = Field(description="The message.")
    attachment: AttachmentInfo = Field(description="The attachment read.")
    mode: Mode = Field(description="How it was read.")
    format: str | None = Field(
        description="mode=text: what the text came from (pdf, docx, xlsx, pptx, odt, ics, csv, text, html, "
        "message, ...)."
    )
    text: str | None = Field(description="mode=text: the window of extracted text; null otherwise.")
    offset: int = Field(description="mode=text: first character of this window.")
    returned_chars: int = Field(description="mode=text: characters in this window.")
    total_chars: int | None = Field(description="mode=text: characters in the whole text, when known.")
    truncated: bool = Field(
        description="True when more follows this window (next_action reads it) or the attachment was cut."
    )
    pages: int | None = Field(description="Pages (PDF) or slides/sheets, when the format has them.")
    notes: list[str] = Field(description="What the extraction noticed (e.g. pages without a text layer).")
    events: list[CalendarEvent] = Field(
        description="Calendar attachments: the events (summary, start/end with time zone, location, "
        "organizer, attendees, recurrence)."
    )
    image: ImageInfo | None = Field(description="mode=image: the image block returned after this envelope.")
    offset_bytes: int = Field(description="mode=bytes: first byte of this window.")
    returned_bytes: int = Field(description="mode=bytes: bytes in this window.")
    raw_base64: str | None = Field(description="mode=bytes: the window, base64-encoded; null otherwise.")
    decoded_size_bytes: int | None = Field(
        description="Decoded size of the attachment, when the whole of it was read."
    )
    untrusted_content: UntrustedContent


class SavedAttachmentData(Payload):
    """save: the attachment saved to download_dir, not read."""

    account_id: str = Field(description="Account of the message.")
    message_id: str = Field(description="The message.")
    attachment: AttachmentInfo = Field(description="The attachment saved.")
    saved_path: str = Field(description="The new file's full path, in download_dir.")
    size_bytes: int = Field(description="Bytes written: the decoded attachment.")
    marked_downloaded: bool = Field(
        description="Whether the file carries the system's mark of a download (Windows, macOS)."
    )
    untrusted_content: UntrustedContent

"""Mail data shapes shared by the IMAP layer and the tools (pydantic: the schemas come from here)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

BodyFormat = Literal["text", "markdown", "html"]


class MailModel(BaseModel):
    """Base: serialised by alias (``from``), every field always present in the output."""

    model_config = ConfigDict(
        populate_by_name=True, serialize_by_alias=True, json_schema_serialization_defaults_required=True
    )


class MessageSummary(MailModel):
    """One message as a search result lists it."""

    message_id: str = Field(description="Stable id: imap:{account_id}:{mailbox}:{uidvalidity}:{uid}.")
    message_uri: str = Field(
        description="MCP resource URI of the message (same payload as imap_get_message)."
    )
    message_raw_uri: str = Field(description="MCP resource URI of the raw RFC 5322 source.")
    mailbox: str = Field(description="Mailbox holding the message.")
    uidvalidity: int = Field(description="UIDVALIDITY of the mailbox when the id was made.")
    uid: int = Field(description="IMAP UID within the mailbox.")
    date: str | None = Field(
        description="ISO 8601 UTC, from the Date header, else the server's INTERNALDATE."
    )
    from_: str | None = Field(alias="from", description="Sender, RFC 2047-decoded: 'Name <address>'.")
    to: str | None = Field(description="Recipients, comma-separated, decoded (long lists are shortened).")
    cc: str | None = Field(description="Cc recipients, comma-separated, decoded (long lists are shortened).")
    subject: str | None = Field(description="Decoded subject.")
    flags: list[str] = Field(description="IMAP flags, e.g. \\Seen, \\Flagged, keywords.")
    size_bytes: int = Field(description="Size of the whole message (RFC822.SIZE).")
    has_attachments: bool = Field(description="True when the message has attachment parts.")
    snippet: str | None = Field(
        description="Start of the body text (not the subject), whitespace-collapsed, bounded by snippet_chars."
    )


class AttachmentInfo(MailModel):
    part_id: str = Field(description="IMAP section number of the part, e.g. '2' or '1.3'.")
    filename: str | None = Field(description="Decoded file name (RFC 2231/2047).")
    content_type: str = Field(description="MIME type, e.g. application/pdf.")
    size_bytes: int = Field(description="Encoded size of the part on the server.")
    disposition: str | None = Field(description="attachment or inline, when given.")
    content_id: str | None = Field(description="Content-ID (for inline images), without <>.")
    resource_uri: str = Field(
        description="MCP resource URI of the attachment's bytes; imap_get_attachment reads it as text, "
        "an image or a byte window."
    )
    extracted_format: str | None = Field(
        default=None,
        description="attachment_mode=extract_text: what the text came from (pdf, docx, calendar, html, "
        "message, ...); null when no text was extracted.",
    )
    extracted_text: str | None = Field(
        default=None,
        description="attachment_mode=extract_text: the attachment's text, cut at attachment_text_max_chars; "
        "null for images and other non-documents.",
    )
    extracted_text_truncated: bool = Field(
        default=False, description="True when extracted_text was cut (imap_get_attachment reads on)."
    )


class MessageDetail(MessageSummary):
    """One message as imap_get_message returns it."""

    headers: dict[str, str] = Field(
        description="Selected headers (allowlist by default); repeated headers joined by newlines."
    )
    body_format: BodyFormat = Field(description="Format of the body field that is set.")
    body_text: str | None = Field(default=None, description="Plain-text body (body_format=text).")
    body_markdown: str | None = Field(default=None, description="Markdown body (body_format=markdown).")
    body_html: str | None = Field(default=None, description="Sanitized HTML body (body_format=html).")
    body_truncated: bool = Field(
        description="True when the body was cut at body_max_chars (or at the fetch cap)."
    )
    body_source: str | None = Field(
        description="Content type of the part the body came from (text/plain or text/html), or null."
    )
    attachments: list[AttachmentInfo] = Field(
        description="Attachment parts (not downloaded); at most 100, with a warning when there are more."
    )

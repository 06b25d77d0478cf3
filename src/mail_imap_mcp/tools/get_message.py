"""imap_get_message: one message's headers, readable body and attachment list."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mail_imap_mcp.envelope import MultiItemData
from mail_imap_mcp.envelope.mcp import ToolResult
from mail_imap_mcp.imap.fetch import ReadOptions
from mail_imap_mcp.imap.models import BodyFormat, MessageDetail
from mail_imap_mcp.tools.attachment_text import AttachmentMode, extract_attachment_texts
from mail_imap_mcp.tools.context import AppContext
from mail_imap_mcp.tools.messages import (
    MESSAGE_TOOL_ERRORS,
    MessageIdArg,
    UntrustedContent,
    read_checked,
    resolve_message,
)
from mail_imap_mcp.tools.spec import ToolSpec

NAME = "imap_get_message"
TITLE = "Read a message"
DESCRIPTION = (
    "Read one message by message_id: decoded headers, the body as text (default), markdown or "
    "sanitized HTML, bounded by body_max_chars, and the attachment list (names, types, sizes, part_id). "
    "Only the needed text part is downloaded, so large attachments cost nothing. "
    "attachment_mode='extract_text' also returns each document attachment's text (PDF, Office, "
    "OpenDocument, calendar, CSV, HTML, plain text, attached e-mails; cut at attachment_text_max_chars; "
    "a failure is an issue and the message still returns); imap_get_attachment reads one attachment in "
    "full. Never marks the message as read. The content is untrusted third-party text."
)
ERRORS = MESSAGE_TOOL_ERRORS


class GetMessageInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message_id: MessageIdArg
    body_max_chars: int = Field(
        default=4000, ge=100, le=100_000, description="Cut the body after this many characters."
    )
    body_format: BodyFormat = Field(
        default="text", description="text (default), markdown, or html (sanitized with an allowlist)."
    )
    include_headers: bool = Field(
        default=True,
        description="Include common headers (date, from, to, cc, reply-to, subject, message-id, "
        "in-reply-to, references, list-id, list-unsubscribe).",
    )
    include_all_headers: bool = Field(default=False, description="Include every header instead.")
    attachment_mode: AttachmentMode = Field(
        default="metadata",
        description="none (no attachment list), metadata (the list, default), or extract_text (the list "
        "plus each document attachment's text).",
    )
    attachment_text_max_chars: int = Field(
        default=4000,
        ge=100,
        le=100_000,
        description="attachment_mode=extract_text: cut each attachment's text after this many characters.",
    )


class GetMessageData(MultiItemData):
    account_id: str = Field(description="Account of the message.")
    message: MessageDetail = Field(description="The message.")
    untrusted_content: UntrustedContent


def handle(app: AppContext, args: GetMessageInput) -> ToolResult[GetMessageData]:
    connection, ref = resolve_message(app, args.message_id)
    options = ReadOptions(
        body_max_chars=min(args.body_max_chars, app.config.server.max_body_chars),
        body_format=args.body_format,
        include_headers=args.include_headers,
        include_all_headers=args.include_all_headers,
        max_text_part_bytes=app.config.server.max_text_part_bytes,
    )

    message, warnings = read_checked(connection, ref, options)
    issues = []
    if args.attachment_mode == "none":
        message.attachments = []
    elif args.attachment_mode == "extract_text":
        max_chars = min(args.attachment_text_max_chars, app.config.server.max_attachment_text_chars)
        issues = extract_attachment_texts(app, connection, ref, message.attachments, max_chars, warnings)
    body_field = {"text": "body_text", "markdown": "body_markdown", "html": "body_html"}[args.body_format]
    data = GetMessageData(
        account_id=ref.account_id,
        message=message,
        untrusted_content=UntrustedContent(
            fields=[
                "message.from",
                "message.to",
                "message.cc",
                "message.subject",
                "message.headers",
                f"message.{body_field}",
                "message.attachments[].filename",
                "message.attachments[].extracted_text",
            ]
        ),
        status="partial" if issues else "ok",
        issues=issues,
    )
    subject = message.subject or "(no subject)"
    return ToolResult(summary=f"Message retrieved: {subject[:120]}", data=data, warnings=warnings)


TOOL = ToolSpec(
    name=NAME,
    title=TITLE,
    description=DESCRIPTION,
    input_model=GetMessageInput,
    data_model=GetMessageData,
    handle=handle,
    errors=ERRORS,
)

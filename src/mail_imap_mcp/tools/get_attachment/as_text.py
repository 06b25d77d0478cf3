"""mode='text': the attachment's readable text (a document parsed in the sandbox), max_chars at a time from
offset, bounded to what a result may carry, with the call for the next window."""

from __future__ import annotations

from mail_imap_mcp.call import Call
from mail_imap_mcp.content.errors import ExtractionError
from mail_imap_mcp.envelope import ToolResult
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.presentation.result_size import TEXT_WINDOW_JSON_MAX, json_prefix
from mail_imap_mcp.presentation.shapes import attachment_info
from mail_imap_mcp.services.attachment_fetch import Spooled
from mail_imap_mcp.services.attachment_text import ReadPlan, read_text
from mail_imap_mcp.tools.get_attachment.answer import base_payload, read_again, unreadable
from mail_imap_mcp.tools.get_attachment.models import GetAttachmentData, GetAttachmentInput


def text_result(
    ref: MessageRef, spooled: Spooled, plan: ReadPlan, app: Call, args: GetAttachmentInput
) -> ToolResult[GetAttachmentData]:
    server = app.config.server
    max_chars = min(args.max_chars, server.max_attachment_text_chars)
    payload = base_payload(ref, attachment_info(ref, spooled.part), "text", args)
    try:
        window = read_text(spooled, server, plan, offset=args.offset, max_chars=max_chars)
    except ExtractionError as exc:
        return unreadable(ref, spooled, exc, "extract_text", args)
    if len(window.text) > (
        kept := len(json_prefix(window.text, TEXT_WINDOW_JSON_MAX))
    ):  # escapes: a result's bound
        window.text, window.more, window.next_offset = window.text[:kept], True, args.offset + kept
    payload.update(
        format=window.format,
        text=window.text,
        returned_chars=len(window.text),
        total_chars=window.total_chars,
        truncated=window.more or window.cut,
        pages=window.pages,
        events=window.events or [],
        notes=window.notes,
        decoded_size_bytes=spooled.read.decoded_end if spooled.read.complete else None,
    )
    warnings = list(window.warnings)
    if window.more:
        payload["next_action"] = read_again(
            ref,
            args.part_id,
            "Read the next window of text",
            mode="text",
            offset=window.next_offset,
            max_chars=max_chars,
        )
        warnings.append(f"Text continues at character {window.next_offset}; call again with that offset.")
    summary = f"{len(window.text)} character(s) of text from attachment {args.part_id} (offset {args.offset})"
    return ToolResult(summary=summary, data=GetAttachmentData(**payload), warnings=warnings)

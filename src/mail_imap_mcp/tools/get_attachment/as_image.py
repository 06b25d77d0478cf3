"""mode='image': the whole attachment as an image block beside the envelope (PNG, JPEG, GIF, WebP),
downscaled when large, its sizes in the data."""

from __future__ import annotations

from mail_imap_mcp.call import Call
from mail_imap_mcp.content.errors import ExtractionError
from mail_imap_mcp.content.images import prepare_image
from mail_imap_mcp.envelope import MediaBlock, ToolResult
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.presentation.shapes import attachment_info
from mail_imap_mcp.services.attachment_fetch import Spooled, too_large
from mail_imap_mcp.services.attachment_text import image_limits
from mail_imap_mcp.tools.get_attachment.answer import base_payload, unreadable
from mail_imap_mcp.tools.get_attachment.models import GetAttachmentData, GetAttachmentInput, ImageInfo


def image_result(
    ref: MessageRef, spooled: Spooled, app: Call, args: GetAttachmentInput
) -> ToolResult[GetAttachmentData]:
    server = app.config.server
    if not spooled.read.complete:
        raise too_large(spooled.part, server.max_attachment_bytes, "max_attachment_bytes")
    try:
        prepared = prepare_image(spooled.path, spooled.part.content_type, image_limits(server))
    except ExtractionError as exc:
        return unreadable(ref, spooled, exc, "prepare_image", args)
    payload = base_payload(ref, attachment_info(ref, spooled.part), "image", args)
    payload.update(
        image=ImageInfo(
            mime_type=prepared.mime_type,
            width=prepared.width,
            height=prepared.height,
            original_width=prepared.original_width,
            original_height=prepared.original_height,
            downscaled=prepared.downscaled,
            size_bytes=len(prepared.data),
        ),
        notes=prepared.notes,
        decoded_size_bytes=spooled.read.decoded_end,
    )
    scaled = f", downscaled to {prepared.width}x{prepared.height}" if prepared.downscaled else ""
    summary = (
        f"Image attachment {spooled.part.section} ({prepared.original_width}x"
        f"{prepared.original_height}{scaled}) follows as a {prepared.mime_type} image block"
    )
    return ToolResult(
        summary=summary,
        data=GetAttachmentData(**payload),
        media=[MediaBlock(data=prepared.data, mime_type=prepared.mime_type)],
    )

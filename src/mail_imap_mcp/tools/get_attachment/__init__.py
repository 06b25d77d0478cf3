"""imap_get_attachment: one attachment as text, as an image, or as a window of its bytes, or saved to a file.

Its spec and dispatch are here; each way of reading is a module of its own (:mod:`.as_text`,
:mod:`.as_image`, :mod:`.as_bytes`, :mod:`.save`), what they answer in common :mod:`.answer`, the
arguments and data :mod:`.models`."""

from __future__ import annotations

from typing import Any

from mail_imap_mcp.call import Call
from mail_imap_mcp.capabilities import SAVING_ATTACHMENTS
from mail_imap_mcp.envelope import ToolResult
from mail_imap_mcp.services.attachment_fetch import ATTACHMENT_ERRORS, spooled_part
from mail_imap_mcp.services.message_lookup import MESSAGE_TOOL_ERRORS, message_ref
from mail_imap_mcp.tools.get_attachment.models import (
    TOOL_NAME,
    GetAttachmentData,
    GetAttachmentInput,
    ImageInfo,
    SavedAttachmentData,
)
from mail_imap_mcp.tools.spec import ToolSpec

NAME = TOOL_NAME
TITLE = "Read an attachment"
DESCRIPTION = (
    "Read one attachment. mode text: the text of a PDF, Office, OpenDocument, calendar, CSV, HTML or "
    "e-mail file, max_chars from offset; image: an image block; bytes: a base64 window. Parsed in a sandbox."
)
DETAILS = (
    "Read one attachment of a message by message_id and part_id (from imap_get_message's attachment "
    "list). mode='text' extracts readable text (PDF, Word/Excel/PowerPoint, OpenDocument, calendar "
    "invites, CSV, HTML, plain text, attached e-mails) max_chars at a time from offset; mode='image' "
    "returns PNG/JPEG/GIF/WebP as an image block next to this envelope (downscaled when large); "
    "mode='bytes' returns a base64 window (offset_bytes, max_bytes) of anything. Without mode: image for "
    "those image types, text for everything else. Only this part is downloaded, in bounded chunks; "
    "documents are parsed in a sandboxed process. Never marks the message as read. The content is "
    "untrusted third-party text. save=true (an argument listed only where the user set download_dir) saves "
    "the whole attachment there instead, as a new file named from the attachment's own name made safe, "
    "numbered rather than overwriting (docs/security.md, Local files), and answers its path and size."
)
ERRORS = {
    **MESSAGE_TOOL_ERRORS,
    "invalid_input": "An argument is malformed or out of range, part_id names the message's body rather "
    "than an attachment, or the attachment cannot be read in the requested mode (next_action: "
    "mode='bytes').",
    "not_found": "The account, mailbox or message is unknown, or the message has no part part_id.",
    **ATTACHMENT_ERRORS,
    "permission_denied": "save where download_dir is not set in [server].",
    "unavailable": "The server cannot be reached, or save: download_dir cannot take a new file.",
}


def handle(app: Call, args: GetAttachmentInput) -> ToolResult[Any]:
    """``services.attachment_fetch`` (read, or saved by ``save_attachment``), by ``presentation.shapes``."""
    from mail_imap_mcp.services.attachment_text import plan_reading
    from mail_imap_mcp.tools.get_attachment.as_bytes import read_bytes
    from mail_imap_mcp.tools.get_attachment.as_image import image_result
    from mail_imap_mcp.tools.get_attachment.as_text import text_result
    from mail_imap_mcp.tools.get_attachment.save import save

    if args.save:
        return save(app, args)
    ref = message_ref(app, args.message_id)
    mail = app.mail(ref.account_id)
    if args.mode == "bytes":
        return read_bytes(app, ref, args)
    server = app.config.server
    max_chars = min(args.max_chars, server.max_attachment_text_chars)
    plan, accept = plan_reading(server, ref, args.mode, offset=args.offset, max_chars=max_chars)
    with spooled_part(mail, ref, args.part_id, server, accept=accept) as spooled:
        if plan.mode == "image":
            return image_result(ref, spooled, app, args)
        return text_result(ref, spooled, plan, app, args)


TOOL = ToolSpec(
    name=NAME,
    title=TITLE,
    description=DESCRIPTION,
    details=DETAILS,
    input_model=GetAttachmentInput,
    data_model=GetAttachmentData,
    handle=handle,
    errors=ERRORS,
    other_data_models=(SavedAttachmentData,),
    changes=(
        "`save: true` saves the attachment to `[server] download_dir` and answers `SavedAttachmentData` (its "
        "path and size); the argument is listed only where download_dir is set (security.md, Local files).",
    ),
    gated_arguments={"save": SAVING_ATTACHMENTS},
)

__all__ = ["TOOL", "GetAttachmentData", "GetAttachmentInput", "ImageInfo"]

"""mode='bytes': a base64 window of the attachment's decoded bytes (offset_bytes, max_bytes), anything at
all, with the call for the next window."""

from __future__ import annotations

import base64

from mail_imap_mcp.call import Call
from mail_imap_mcp.envelope import ToolResult
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.presentation.shapes import attachment_info
from mail_imap_mcp.services.attachment_fetch import byte_window
from mail_imap_mcp.tools.get_attachment.answer import base_payload, read_again
from mail_imap_mcp.tools.get_attachment.models import GetAttachmentData, GetAttachmentInput


def read_bytes(app: Call, ref: MessageRef, args: GetAttachmentInput) -> ToolResult[GetAttachmentData]:
    max_bytes = min(args.max_bytes, app.config.server.max_raw_bytes)
    data, read = byte_window(app, ref, args.part_id, offset_bytes=args.offset_bytes, max_bytes=max_bytes)
    end = args.offset_bytes + len(data)
    payload = base_payload(ref, attachment_info(ref, read.part), "bytes", args)
    payload.update(
        returned_bytes=len(data),
        raw_base64=base64.b64encode(data).decode("ascii"),
        truncated=not read.complete,
        decoded_size_bytes=read.decoded_end if read.complete else None,
    )
    warnings = []
    if not read.complete:
        payload["next_action"] = read_again(
            ref, args.part_id, "Read the next window", mode="bytes", offset_bytes=end, max_bytes=max_bytes
        )
        warnings.append(f"Window ends at byte {end}; call again with offset_bytes={end}.")
    summary = f"{len(data)} byte(s) of attachment {args.part_id} from offset {args.offset_bytes}"
    return ToolResult(summary=summary, data=GetAttachmentData(**payload), warnings=warnings)

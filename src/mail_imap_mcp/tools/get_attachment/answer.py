"""What every way of reading an attachment answers with: the data's common fields, the call that reads
on, and the answer for an attachment that cannot be read in the mode asked (its bytes still can)."""

from __future__ import annotations

from typing import Any

from mail_imap_mcp.content.errors import ExtractionError
from mail_imap_mcp.envelope import NextAction, ToolResult
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.presentation.shapes import AttachmentInfo, UntrustedContent, attachment_info
from mail_imap_mcp.services.attachment_fetch import Spooled
from mail_imap_mcp.services.attachment_text import extraction_failure, wrong_mode
from mail_imap_mcp.tools.get_attachment.models import TOOL_NAME, GetAttachmentData, GetAttachmentInput, Mode


def base_payload(
    ref: MessageRef, info: AttachmentInfo, mode: Mode, args: GetAttachmentInput
) -> dict[str, Any]:
    return {
        "account_id": ref.account_id,
        "message_id": ref.message_id,
        "attachment": info,
        "mode": mode,
        "format": None,
        "text": None,
        "offset": args.offset if mode == "text" else 0,
        "returned_chars": 0,
        "total_chars": None,
        "truncated": False,
        "pages": None,
        "notes": [],
        "events": [],
        "image": None,
        "offset_bytes": args.offset_bytes if mode == "bytes" else 0,
        "returned_bytes": 0,
        "raw_base64": None,
        "decoded_size_bytes": None,
        "untrusted_content": UntrustedContent(
            fields=["attachment.filename", "attachment.content_id", "text", "notes", "events"]
        ),
    }


def read_again(ref: MessageRef, part_id: str, instruction: str, **arguments: Any) -> NextAction:
    return NextAction(
        instruction=instruction,
        tool=TOOL_NAME,
        arguments={"message_id": ref.message_id, "part_id": part_id, **arguments},
    )


def unreadable(
    ref: MessageRef, spooled: Spooled, exc: ExtractionError, stage: str, args: GetAttachmentInput
) -> ToolResult[GetAttachmentData]:
    """A broken or encrypted attachment: the call answers with its metadata and an issue, and points at
    its bytes. Limits and unsupported formats are failures of the call instead."""
    if exc.code == "limit_exceeded":
        raise extraction_failure(exc, spooled.part) from None
    mode: Mode = "image" if stage == "prepare_image" else "text"
    if exc.code == "unsupported_format":
        raise wrong_mode(ref, spooled.part, mode, exc.message) from None
    payload = base_payload(ref, attachment_info(ref, spooled.part), mode, args)
    payload.update(
        status="partial",
        issues=[ref.issue(exc.code, stage, exc.message, retryable=False)],
        next_action=read_again(ref, args.part_id, "Read the attachment's bytes instead", mode="bytes"),
    )
    summary = f"Could not read attachment {args.part_id} as {mode}: {exc.message}"
    return ToolResult(summary=summary[:240], data=GetAttachmentData(**payload))

"""The words of the refusals of reading an attachment (:mod:`mail_imap_mcp.mail.attachment_errors`): a
limit, named as the ``[server]`` setting; a mode it cannot be read in; a part id that is no section
number; a part that cannot be read (:mod:`mail_imap_mcp.mail.part_errors`). The failure registry
(:mod:`.failures`) says each with these."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mail_imap_mcp.envelope import ErrorCode, NextAction, ToolFailure
from mail_imap_mcp.mail.attachment_errors import (
    AttachmentTooLarge,
    ExtractionLimitHit,
    InvalidPartId,
    ModeUnsupported,
    WindowBeyondLimit,
)
from mail_imap_mcp.mail.part_errors import (
    NotAnAttachment,
    PartError,
    PartGone,
    PartNotFound,
    PartRefused,
    StructureUnusable,
)
from mail_imap_mcp.presentation.call import Call
from mail_imap_mcp.presentation.mail_failures import part_failure


def _too_large(exc: AttachmentTooLarge, call: Call | None) -> ToolFailure:
    """``limit_exceeded`` for an attachment beyond its limit, naming the ``[server]`` setting."""
    part, setting, limit = exc.part, exc.setting, exc.limit
    what = f"{exc.size} bytes" if exc.exact else f"about {exc.size} bytes"
    return ToolFailure(
        ErrorCode.LIMIT_EXCEEDED,
        f"Attachment {part.section} ({part.content_type}) is {what}, more than {setting} = {limit} "
        f"in [server]; nothing beyond it is read. Read a window with mode='bytes', or raise {setting}.",
        details={"setting": setting, "limit": limit, "part_id": part.section, "size_bytes": part.size_bytes},
    )


def _window_beyond_limit(exc: WindowBeyondLimit, call: Call | None) -> ToolFailure:
    return ToolFailure(
        ErrorCode.LIMIT_EXCEEDED,
        f"The window ends at byte {exc.end}, beyond max_attachment_bytes = "
        f"{exc.limit} in [server]: no attachment is read further than that.",
        details={"setting": "max_attachment_bytes", "limit": exc.limit},
    )


def _invalid_part_id(exc: InvalidPartId, call: Call | None) -> ToolFailure:
    return ToolFailure.invalid_input("part_id", "must be an IMAP section number such as 2 or 1.3.")


def _mode_unsupported(exc: ModeUnsupported, call: Call | None) -> ToolFailure:
    """``invalid_input`` naming ``mode``: this attachment cannot be read that way (read its bytes)."""
    part = exc.part
    return ToolFailure(
        ErrorCode.INVALID_INPUT,
        f"Invalid 'mode': attachment {part.section} ({part.content_type}) cannot be read as {exc.mode}: "
        f"{exc.why.rstrip('.')}. "
        "Read its bytes with mode='bytes'.",
        details={"parameter": "mode", "content_type": part.content_type, "part_id": part.section},
        next_action=NextAction(
            instruction="Read the attachment's bytes",
            tool="imap_get_attachment",
            arguments={"message_id": exc.ref.message_id, "part_id": part.section, "mode": "bytes"},
        ),
    )


def _extraction_limit(exc: ExtractionLimitHit, call: Call | None) -> ToolFailure:
    """``limit_exceeded`` from the sandbox, naming the ``[server]`` setting when it is one."""
    advice = f" Raise {exc.setting} in [server] if this attachment is trusted." if exc.setting else ""
    details: dict[str, Any] = {"part_id": exc.part.section, "limit": exc.limit, "setting": exc.setting}
    return ToolFailure(ErrorCode.LIMIT_EXCEEDED, exc.said + advice, details=details)


def _part_failure(exc: PartError, call: Call | None) -> ToolFailure:
    ref = exc.ref or (call.message_ref() if call is not None else None)
    if ref is None:
        return ToolFailure(
            ErrorCode.NOT_FOUND, f"No such attachment: {exc}.", details={"parameter": "part_id"}
        )
    return part_failure(exc, ref)


#: The registry's lines of the attachment refusals and of the parts that cannot be read.
ATTACHMENT_FAILURES: Mapping[type[BaseException], Callable[[Any, Call | None], ToolFailure]] = {
    AttachmentTooLarge: _too_large,
    WindowBeyondLimit: _window_beyond_limit,
    InvalidPartId: _invalid_part_id,
    ModeUnsupported: _mode_unsupported,
    ExtractionLimitHit: _extraction_limit,
    PartGone: _part_failure,
    PartNotFound: _part_failure,
    NotAnAttachment: _part_failure,
    StructureUnusable: _part_failure,
    PartRefused: _part_failure,
    PartError: _part_failure,
}

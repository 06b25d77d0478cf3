"""imap_get_message_raw: a window of a message's raw RFC 5322 source."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING

from mail_imap_mcp.call import Call
from mail_imap_mcp.envelope import ToolResult
from mail_imap_mcp.mail.errors import MessageGone
from mail_imap_mcp.presentation.mail_failures import message_gone
from mail_imap_mcp.presentation.result_size import json_chars
from mail_imap_mcp.services.message_lookup import MESSAGE_TOOL_ERRORS, examine_for, resolve_message
from mail_imap_mcp.tools.get_message_raw_models import GetMessageRawData, GetMessageRawInput
from mail_imap_mcp.tools.spec import ToolSpec

if TYPE_CHECKING:
    from mail_imap_mcp.imap.session import ImapSession

NAME = "imap_get_message_raw"
TITLE = "Read raw message source"
DESCRIPTION = (
    "A window of a message's raw source: max_bytes from offset_bytes; while truncated, call again with "
    "offset_bytes += returned_bytes."
)
DETAILS = (
    "Read a window of a message's raw source (headers and MIME parts as stored on the server), "
    "max_bytes at a time starting at offset_bytes; page through with offset_bytes += returned_bytes "
    "while truncated is true. The window comes once: as raw_text where it is valid UTF-8 (and JSON "
    "escapes do not make it longer than its base64), else as raw_base64; the other is null. Never marks "
    "the message as read."
)
ERRORS = MESSAGE_TOOL_ERRORS


def window_text(data: bytes) -> str | None:
    """``data`` as text where it is UTF-8 and its JSON form is no longer than its base64 (a window of control
    characters, each escaped to six, comes as base64): a window's size in a result is at most its base64's."""

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if json_chars(text) - 2 <= base64_chars(len(data)) else None


def base64_chars(size: int) -> int:
    """The characters of ``size`` bytes in base64."""
    return 4 * ((size + 2) // 3)


def handle(app: Call, args: GetMessageRawInput) -> ToolResult[GetMessageRawData]:
    """``imap.read.read_raw`` of ``services.message_lookup``'s message; gone: ``message_gone``."""
    from mail_imap_mcp.imap.read import RawWindow, read_raw

    connection, ref = resolve_message(app, args.message_id)
    max_bytes = min(args.max_bytes, app.config.server.max_raw_bytes)

    def work(session: ImapSession) -> RawWindow:
        examine_for(session, ref)
        try:
            return read_raw(session, ref, args.offset_bytes, max_bytes)
        except MessageGone:
            raise message_gone(ref) from None

    window = connection.run(work)
    raw_text = window_text(window.data)
    end = args.offset_bytes + len(window.data)
    truncated = end < window.total_size_bytes
    warnings = []
    if truncated:
        warnings.append(
            f"Window ends at byte {end} of {window.total_size_bytes}; call again with offset_bytes={end}."
        )
    data = GetMessageRawData(
        account_id=ref.account_id,
        message_id=ref.message_id,
        total_size_bytes=window.total_size_bytes,
        offset_bytes=args.offset_bytes,
        returned_bytes=len(window.data),
        truncated=truncated,
        raw_base64=None if raw_text is not None else base64.b64encode(window.data).decode("ascii"),
        raw_text=raw_text,
    )
    summary = f"{len(window.data)} byte(s) of {window.total_size_bytes} from offset {args.offset_bytes}"
    return ToolResult(summary=summary, data=data, warnings=warnings)


TOOL = ToolSpec(
    name=NAME,
    title=TITLE,
    description=DESCRIPTION,
    details=DETAILS,
    input_model=GetMessageRawInput,
    data_model=GetMessageRawData,
    handle=handle,
    errors=ERRORS,
)

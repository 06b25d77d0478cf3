"""An attachment, once fetched, as text or as an image: which reader fits, limits named as settings.

HTML goes through the same HTML-to-text path as message bodies (hidden text dropped); an attached
message is read like imap_get_message reads one (headers, body text, its attachment list).
Everything else goes to the document extraction of :mod:`mail_imap_mcp.content`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mail_imap_mcp.config import ServerSettings
from mail_imap_mcp.envelope import ErrorCode, Issue, NextAction, ToolFailure
from mail_imap_mcp.imap import html as html_convert
from mail_imap_mcp.imap import mime
from mail_imap_mcp.imap.ids import MessageRef
from mail_imap_mcp.tools.attachments import Spooled, estimated_size, too_large

#: Image types returned as image blocks (what multimodal models read).
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_MESSAGE_TYPES = frozenset({"message/rfc822", "message/global"})
_HEADER_LINES = ("from", "to", "cc", "date", "subject")


@dataclass
class TextWindow:
    """``max_chars`` of an attachment's text from ``offset`` (or why there is none)."""

    format: str | None
    text: str | None
    total_chars: int | None
    #: More text follows this window (read it from ``next_offset``).
    more: bool
    next_offset: int
    #: The attachment itself was only read in part (too long for its reader's limit).
    cut: bool = False
    pages: int | None = None
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    issue: Issue | None = None


def reader_of(part: mime.Part) -> str:
    """Which reader turns ``part`` into text: ``message``, ``html`` or ``document``."""
    if part.content_type in _MESSAGE_TYPES:
        return "message"
    if part.content_type == "text/html":
        return "html"
    return "document"


def image_limits_accept(
    server: ServerSettings, mode: str | None, chosen: list[str], ref: MessageRef, part_id: str
) -> Callable[[mime.Part, bytes], None]:
    """The ``accept`` of a text or image read: decides the mode (recorded in ``chosen``) once the part is
    known, and refuses before fetching more what cannot be read that way or is beyond its limit."""

    def accept(part: mime.Part, head: bytes) -> None:
        effective = mode or ("image" if part.content_type in IMAGE_TYPES else "text")
        chosen[:] = [effective]
        if effective == "image":
            if not part.content_type.startswith("image/"):
                raise _wrong_mode(ref, part_id, part, "image", "it is not an image")
        elif reader_of(part) != "document":
            return  # read in part when long: only the start is needed
        if estimated_size(part) > server.max_attachment_bytes * 1.02:
            raise too_large(part, server.max_attachment_bytes, "max_attachment_bytes")

    return accept


def _wrong_mode(ref: MessageRef, part_id: str, part: mime.Part, mode: str, why: str) -> ToolFailure:
    return ToolFailure(
        ErrorCode.INVALID_INPUT,
        f"Invalid 'mode': attachment {part_id} ({part.content_type}) cannot be read as {mode}: {why}. "
        "Read its bytes with mode='bytes'.",
        details={"parameter": "mode", "content_type": part.content_type},
        next_action=NextAction(
            instruction="Read the attachment's bytes",
            tool="imap_get_attachment",
            arguments={"message_id": ref.message_id, "part_id": part_id, "mode": "bytes"},
        ),
    )


def window(text: str, offset: int, max_chars: int) -> tuple[str, bool, int]:
    """``max_chars`` of ``text`` from ``offset`` (cut at a word boundary): (piece, more follows, next offset)."""
    rest = text[offset:]
    piece, more = mime.truncate(rest, max_chars)
    return piece, more, offset + len(piece)


def _start(spooled: Spooled, limit: int) -> tuple[bytes, bool]:
    """The first ``limit`` decoded bytes of the spooled part, and whether it was cut there."""
    with spooled.path.open("rb") as handle:
        data = handle.read(limit + 1)
    cut = len(data) > limit or not spooled.read.complete
    return data[:limit], cut


def _html_text(spooled: Spooled, server: ServerSettings) -> tuple[str, bool]:
    data, cut = _start(spooled, server.max_text_part_bytes)
    decoded = mime.decode_text(data, spooled.part.charset, partial=cut)
    return html_convert.html_to_text(decoded), cut


def _message_text(spooled: Spooled, server: ServerSettings) -> tuple[str, bool]:
    data, cut = _start(spooled, server.max_text_part_bytes)
    parsed = mime.parse_full_message(data)
    lines = [
        f"{name.capitalize()}: {value}"
        for name in _HEADER_LINES
        for value in parsed.headers.get(name, [])[:1]
    ]
    if parsed.attachments:
        listed = ", ".join(
            f"{p.filename or p.section} ({p.content_type}, part {p.section} of the attached message)"
            for p in parsed.attachments[:20]
        )
        lines.append(f"Attachments: {listed}")
    if parsed.text is not None and (parsed.text.strip() or parsed.html is None):
        body = parsed.text
    else:
        body = html_convert.html_to_text(parsed.html or "")
    return "\n".join(lines) + "\n\n" + body.replace("\r\n", "\n"), cut


def read_text(spooled: Spooled, server: ServerSettings, *, offset: int, max_chars: int) -> TextWindow:
    """The text window of a fetched attachment (cleaned of control, bidi and invisible characters)."""
    reader = reader_of(spooled.part)
    if reader == "document":
        raise _wrong_mode(
            MessageRef("", "", 0, 0), spooled.part.section, spooled.part, "text", "no text extractor yet"
        )
    text, cut = _html_text(spooled, server) if reader == "html" else _message_text(spooled, server)
    piece, more, next_offset = window(text, offset, max_chars)
    warnings = []
    if cut:
        warnings.append(
            f"The attachment is longer than max_text_part_bytes = {server.max_text_part_bytes}; only its "
            "start was read."
        )
    return TextWindow(
        format=reader,
        text=piece,
        total_chars=len(text),
        more=more,
        next_offset=next_offset,
        cut=cut,
        warnings=warnings,
    )


__all__ = ["IMAGE_TYPES", "TextWindow", "image_limits_accept", "read_text", "reader_of", "window"]

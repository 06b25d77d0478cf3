"""An attachment, once fetched, as text: which reader fits, what to fetch for it, limits named as settings.

HTML goes through the same HTML-to-text path as message bodies (hidden text dropped); an attached
message is read like imap_get_message reads one (headers, body text, its attachment list); documents
(PDF, Office, OpenDocument, calendar, CSV, plain text) go to :mod:`mail_imap_mcp.content.documents`,
which parses them in a sandboxed child process. Every text is cleaned of control, bidi and invisible
characters.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from mail_imap_mcp import mime
from mail_imap_mcp.call import Call
from mail_imap_mcp.config import ServerSettings
from mail_imap_mcp.content.documents import (
    CalendarEvent,
    detect_format,
    extract_limits,
    extract_text,
)
from mail_imap_mcp.content.errors import ExtractionError
from mail_imap_mcp.content.images import ImageLimits
from mail_imap_mcp.content.text import clean_extracted_text, truncate
from mail_imap_mcp.envelope import Issue
from mail_imap_mcp.mail.attachment_errors import ExtractionLimitHit, ModeUnsupported
from mail_imap_mcp.mail.backend import MailReading
from mail_imap_mcp.mail.errors import MailError
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.part_errors import NotAnAttachment
from mail_imap_mcp.mail.parts import Accept
from mail_imap_mcp.mail.step_failure import StepFailed
from mail_imap_mcp.services.attachment_fetch import (
    Spooled,
    estimated_size,
    spooled_part,
    too_large,
)

#: Most attachments whose text one imap_get_message call extracts.
MAX_EXTRACTED_ATTACHMENTS = 10
#: Image types returned as image blocks (what multimodal models read).
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_MESSAGE_TYPES = frozenset({"message/rfc822", "message/global"})
_HEADER_LINES = ("from", "to", "cc", "date", "subject")
#: Formats read in a window straight from the start of the file (the rest need not be fetched).
_STREAMED_FORMATS = frozenset({"text", "csv"})
# Bytes per character at most (UTF-8 and UTF-16 alike), plus room for a cut character.
_BYTES_PER_CHAR = 4
_WINDOW_SLACK = 4096
#: What a limit of the extraction sandbox is called in [server] (the rest are built-in caps).
SETTING_OF_LIMIT = {
    "max_attachment_bytes": "max_attachment_bytes",
    "extract_timeout_s": "extract_timeout_s",
    "memory": "extract_memory_mb",
    "max_pixels": "max_image_pixels",
    "max_output_bytes": "max_image_output_bytes",
}


@dataclass
class ReadPlan:
    """How an attachment is read, decided once its type and first bytes are known."""

    mode: str = "text"
    #: ``message``, ``html``, ``document`` or ``image``.
    reader: str = "document"
    #: The document format (pdf, docx, calendar, text, ...), for the document reader.
    format: str | None = None


@dataclass
class TextWindow:
    """``max_chars`` of an attachment's text from ``offset``."""

    format: str | None
    text: str
    total_chars: int | None
    #: More text follows this window (read it from ``next_offset``).
    more: bool
    next_offset: int
    #: The attachment itself was only read in part (longer than its reader's limit).
    cut: bool = False
    pages: int | None = None
    events: list[CalendarEvent] | None = None
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def reader_of(part: mime.Part) -> str:
    """Which reader turns ``part`` into text: ``message``, ``html`` or ``document``."""
    if part.content_type in _MESSAGE_TYPES:
        return "message"
    if part.content_type in ("text/html", "application/xhtml+xml"):
        return "html"
    return "document"


def image_limits(server: ServerSettings) -> ImageLimits:
    """The image preparation's limits from ``[server]``."""
    return ImageLimits(
        max_input_bytes=server.max_attachment_bytes,
        max_pixels=server.max_image_pixels,
        max_dimension=server.image_max_dimension,
        max_output_bytes=server.max_image_output_bytes,
        timeout_s=server.extract_timeout_s,
        cpu_s=server.extract_timeout_s,
        memory_bytes=server.extract_memory_mb * 1024 * 1024,
    )


def wrong_mode(ref: MessageRef, part: mime.Part, mode: str, why: str) -> ModeUnsupported:
    """``invalid_input`` naming ``mode``: this attachment cannot be read that way (read its bytes); the
    failure registry words it."""
    return ModeUnsupported(ref, part, mode, why)


def plan_reading(
    server: ServerSettings, ref: MessageRef, mode: str | None, *, offset: int, max_chars: int
) -> tuple[ReadPlan, Accept]:
    """A plan, filled in by the returned ``accept`` once the part is known: the mode (images by default
    for PNG/JPEG/GIF/WebP), the reader, and how much to fetch. It refuses before fetching more what
    cannot be read in that mode, or a document or image beyond ``max_attachment_bytes``."""
    plan = ReadPlan()

    def accept(part: mime.Part, head: bytes) -> int | None:
        plan.mode = mode or ("image" if part.content_type in IMAGE_TYPES else "text")
        if plan.mode == "image":
            plan.reader = "image"
            if not part.content_type.startswith("image/"):
                raise wrong_mode(ref, part, "image", "it is not an image")
            _check_whole(part, server)
            return None
        plan.reader = reader_of(part)
        if plan.reader != "document":
            return server.max_text_part_bytes  # only the start of a huge HTML page or message is read
        plan.format = detect_format(part.content_type, part.filename, head)
        if plan.format is None:
            raise wrong_mode(
                ref,
                part,
                "text",
                "it is not a document with text (PDF, Office, OpenDocument, "
                "calendar, CSV, HTML, plain text or an e-mail)",
            )
        if plan.format in _STREAMED_FORMATS:
            return (offset + max_chars) * _BYTES_PER_CHAR + _WINDOW_SLACK
        _check_whole(part, server)
        return None

    return plan, accept


def _check_whole(part: mime.Part, server: ServerSettings) -> None:
    """Refuse what must be read whole (a document, an image) and is beyond ``max_attachment_bytes``."""
    # 2% slack: the decoded size estimated from an encoded size is not exact.
    if estimated_size(part) > server.max_attachment_bytes * 1.02:
        raise too_large(part, server.max_attachment_bytes, "max_attachment_bytes")


def window(text: str, offset: int, max_chars: int) -> tuple[str, bool, int]:
    """``max_chars`` of ``text`` from ``offset`` (cut at a word boundary): (piece, more follows, next offset)."""
    piece, more = truncate(text[offset:], max_chars)
    return piece, more, offset + len(piece)


def _start(spooled: Spooled, limit: int) -> tuple[bytes, bool]:
    """The first ``limit`` decoded bytes of the spooled part, and whether the part was longer."""
    with spooled.path.open("rb") as handle:
        data = handle.read(limit + 1)
    return data[:limit], len(data) > limit or not spooled.read.complete


def _html_text(spooled: Spooled, server: ServerSettings) -> tuple[str, bool]:
    from mail_imap_mcp.content.html import html_to_text  # on first use, as in message_read

    data, cut = _start(spooled, server.max_text_part_bytes)
    return html_to_text(mime.decode_text(data, spooled.part.charset, partial=cut)), cut


def message_text(raw: bytes) -> str:
    """An attached message as text: its main headers, its attachments, a blank line, its body."""
    parsed = mime.parse_full_message(raw)
    lines = [
        f"{name.capitalize()}: {value}"
        for name in _HEADER_LINES
        for value in parsed.headers.get(name, [])[:1]
    ]
    if parsed.attachments:
        listed = ", ".join(f"{p.filename or 'unnamed'} ({p.content_type})" for p in parsed.attachments[:20])
        lines.append(f"Attachments: {listed}")
    if parsed.text is not None and (parsed.text.strip() or parsed.html is None):
        body = parsed.text
    else:
        from mail_imap_mcp.content.html import html_to_text  # on first use, as in message_read

        body = html_to_text(parsed.html or "")
    return "\n".join(lines) + "\n\n" + body


def _in_process(
    spooled: Spooled, server: ServerSettings, reader: str, offset: int, max_chars: int
) -> TextWindow:
    if reader == "html":
        text, cut = _html_text(spooled, server)
    else:
        data, cut = _start(spooled, server.max_text_part_bytes)
        text = message_text(data)
    text = clean_extracted_text(text)
    piece, more, next_offset = window(text, offset, max_chars)
    warnings = []
    if cut:
        warnings.append(
            f"The attachment is longer than max_text_part_bytes = {server.max_text_part_bytes}; only its "
            "start was read."
        )
    return TextWindow(reader, piece, len(text), more, next_offset, cut=cut, warnings=warnings)


def read_text(
    spooled: Spooled, server: ServerSettings, plan: ReadPlan, *, offset: int, max_chars: int
) -> TextWindow:
    """The text window of a fetched attachment. Raises :class:`ExtractionError` from the extraction."""
    if plan.reader != "document":
        return _in_process(spooled, server, plan.reader, offset, max_chars)
    part = spooled.part
    if not spooled.read.complete and plan.format not in _STREAMED_FORMATS:
        raise too_large(part, server.max_attachment_bytes, "max_attachment_bytes")
    content_type = part.content_type + (f"; charset={part.charset}" if part.charset else "")
    extracted = extract_text(
        spooled.path, content_type, part.filename, extract_limits(server), offset=offset, max_chars=max_chars
    )
    more = extracted.next_offset is not None
    next_offset = extracted.next_offset if extracted.next_offset is not None else offset + len(extracted.text)
    # Truncated without a next window: the document was cut at one of the extraction's caps.
    cut = extracted.truncated and not more
    total = extracted.total_chars
    warnings = []
    if not spooled.read.complete:
        # Only the start was fetched (plain text and CSV): what this window needs, or max_attachment_bytes.
        total = None
        at_cap = spooled.read.written >= server.max_attachment_bytes
        more, cut = (more, True) if at_cap else (True, False)
        if at_cap and not more:
            warnings.append(
                f"The attachment is longer than max_attachment_bytes = {server.max_attachment_bytes}: its "
                "text ends here; read the rest with mode='bytes' windows or raise the setting."
            )
    return TextWindow(
        extracted.format,
        extracted.text,
        total,
        more,
        next_offset,
        cut=cut,
        warnings=warnings,
        pages=extracted.pages,
        events=extracted.events,
        notes=list(extracted.notes),
    )


@dataclass(frozen=True)
class ExtractedText:
    """The start of an attachment's text (imap_get_message attachment_mode=extract_text)."""

    #: What the text came from (pdf, docx, calendar, html, message, ...).
    format: str | None
    text: str
    #: Cut at the characters asked for, or at a limit of its reader (imap_get_attachment reads on).
    truncated: bool


def _extract_one(
    mail: MailReading,
    ref: MessageRef,
    attachment: mime.Part,
    server: ServerSettings,
    max_chars: int,
) -> ExtractedText | Issue | StepFailed | None:
    """``attachment``'s text; an issue when that failed (the error, where the server's, for presentation to
    word), None when the attachment is no document (an image, an archive: left without text)."""
    plan, accept = plan_reading(server, ref, "text", offset=0, max_chars=max_chars)
    try:
        with spooled_part(mail, ref, attachment.part_id, server, accept=accept) as spooled:
            window = read_text(spooled, server, plan, offset=0, max_chars=max_chars)
    except MailError as exc:  # an issue of the answer, in the registry's words
        if isinstance(exc, ModeUnsupported | NotAnAttachment):  # no document: nothing to extract
            return None
        if exc.for_caller:
            raise
        return StepFailed("extract_text", exc, _about(attachment, ""), uid=ref.uid, message_id=ref.message_id)
    except ExtractionError as exc:
        return ref.issue(exc.code, "extract_text", _about(attachment, exc.message), retryable=False)
    return ExtractedText(window.format, window.text, window.more or window.cut)


def _about(attachment: mime.Part, message: str) -> str:
    return f"Attachment {attachment.part_id} ({attachment.filename or attachment.content_type}): {message}"


def extract_attachment_texts(
    app: Call,
    mail: MailReading,
    ref: MessageRef,
    attachments: list[mime.Part],
    max_chars: int,
    warnings: list[str],
) -> tuple[dict[str, ExtractedText], list[Issue | StepFailed]]:
    """imap_get_message attachment_mode=extract_text: each document attachment's text by its part id (at
    most ``MAX_EXTRACTED_ATTACHMENTS``, within twice ``extract_timeout_s`` together); one that fails is
    an issue (stage ``extract_text``) and the others still get theirs."""
    server = app.config.server
    deadline = time.monotonic() + 2 * server.extract_timeout_s
    texts: dict[str, ExtractedText] = {}
    issues: list[Issue | StepFailed] = []
    candidates = [a for a in attachments if not a.content_type.startswith(("image/", "audio/", "video/"))]
    for index, attachment in enumerate(candidates):
        if index >= MAX_EXTRACTED_ATTACHMENTS or time.monotonic() > deadline:
            rest = candidates[index:]
            warnings.append(
                f"Text of {len(rest)} more attachment(s) not extracted in this call (part_id "
                f"{', '.join(a.part_id for a in rest[:10])}); read them with imap_get_attachment."
            )
            break
        outcome = _extract_one(mail, ref, attachment, server, max_chars)
        if isinstance(outcome, Issue | StepFailed):
            issues.append(outcome)
        elif outcome is not None:
            texts[attachment.part_id] = outcome
            if outcome.truncated:
                warnings.append(
                    f"Text of attachment {attachment.part_id} cut at {max_chars} characters; "
                    "imap_get_attachment reads on."
                )
    return texts, issues


def extraction_failure(exc: ExtractionError, part: mime.Part) -> ExtractionLimitHit:
    """``limit_exceeded`` from the sandbox, naming the ``[server]`` setting when it is one (the failure
    registry words it)."""
    return ExtractionLimitHit(exc.message, exc.limit, SETTING_OF_LIMIT.get(exc.limit or ""), part)


__all__ = [
    "IMAGE_TYPES",
    "SETTING_OF_LIMIT",
    "ExtractedText",
    "ReadPlan",
    "TextWindow",
    "extract_attachment_texts",
    "extract_limits",
    "extraction_failure",
    "image_limits",
    "message_text",
    "plan_reading",
    "read_text",
    "reader_of",
    "window",
    "wrong_mode",
]

"""Attachment documents as text: format detection and bounded, sandboxed extraction.

:func:`extract_text` reads a decoded attachment that is already in a file. Formats that
need a parser (PDF, OOXML, ODF, iCalendar) are parsed only in a sandboxed child process
(:mod:`.sandbox`): memory, CPU and wall time are limited there and nothing the parser does
can take the server down. Plain text and CSV need no parser and are decoded here with
bounded reads. Every result is cleaned like a message body (controls, bidi overrides and
invisible characters removed) and windowed by ``offset``/``max_chars`` over one
deterministic text, so consecutive windows concatenate to the whole text.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mail_imap_mcp.config import ServerSettings

from ._window import TextCollector
from .charsets import codec_for
from .document_formats import declared_format, detect_format, media_type_of
from .errors import ExtractionError, ExtractionErrorCode
from .sandbox import SandboxLimits, check_input, run_in_sandbox
from .sandbox_worker import SandboxWorker
from .text import remove_unsafe_characters

__all__ = [
    "MAX_DOCUMENT_CHARS",
    "CalendarEvent",
    "CalendarPerson",
    "ExtractLimits",
    "ExtractedText",
    "ExtractionError",
    "ExtractionErrorCode",
    "declared_format",
    "detect_format",
    "extract_limits",
    "extract_text",
]

_MiB = 1 << 20
#: Default hard cap on the text produced from one document.
MAX_DOCUMENT_CHARS = 2_000_000
_READ_CHUNK = 64 * 1024
_HEAD_BYTES = 4096


class ExtractLimits(BaseModel):
    """Caps of one extraction. The server's settings (``ServerSettings`` in config/, the one place their
    defaults are defined) fill the first four; the rest are fixed safety caps of the parsers."""

    model_config = ConfigDict(frozen=True)

    max_input_bytes: int = Field(ge=1, description="Largest attachment read (max_attachment_bytes).")
    timeout_s: float = Field(gt=0, description="Wall-clock limit of the extraction (extract_timeout_s).")
    cpu_s: float = Field(gt=0, description="CPU-time limit of the extraction child (extract_timeout_s).")
    memory_bytes: int = Field(
        ge=64 * _MiB, description="Address-space limit (RLIMIT_AS) of the child (extract_memory_mb)."
    )
    max_chars: int = Field(
        MAX_DOCUMENT_CHARS, ge=1, description="Hard cap on the text produced from one document."
    )
    max_unpacked_bytes: int = Field(
        256 * _MiB, ge=1, description="Office/ODF: total uncompressed size of the archive members read."
    )
    max_archive_members: int = Field(
        10_000, ge=1, description="Office/ODF: most entries an archive may have."
    )
    max_compression_ratio: int = Field(
        200, ge=1, description="Office/ODF: largest uncompressed/compressed ratio of a member over 1 MB."
    )


def extract_limits(server: ServerSettings) -> ExtractLimits:
    """The sandbox's limits from ``[server]``."""
    return ExtractLimits(
        max_input_bytes=server.max_attachment_bytes,
        timeout_s=server.extract_timeout_s,
        cpu_s=server.extract_timeout_s,
        memory_bytes=server.extract_memory_mb * _MiB,
        # A window anywhere in the attachment (a character takes a byte at least): the child's answer is
        # bounded by the window, not by this.
        max_chars=max(server.max_attachment_bytes, MAX_DOCUMENT_CHARS),
    )


class CalendarPerson(BaseModel):
    """An organizer or attendee of a calendar event."""

    name: str | None = None
    address: str | None = None
    role: str | None = None
    partstat: str | None = None


class CalendarEvent(BaseModel):
    """One VEVENT of a calendar attachment (an invitation, usually)."""

    summary: str | None = None
    start: str | None = Field(None, description="ISO 8601; with UTC offset unless floating or all-day.")
    end: str | None = Field(None, description="ISO 8601 end (exclusive date for all-day events).")
    timezone: str | None = Field(None, description="TZID of the start, as written in the invitation.")
    all_day: bool = False
    location: str | None = None
    organizer: CalendarPerson | None = None
    attendees: list[CalendarPerson] = Field(default_factory=list)
    recurrence: str | None = Field(None, description="The RRULE as text, e.g. FREQ=WEEKLY;BYDAY=MO.")
    status: str | None = None
    description: str | None = Field(None, description="Bounded description text.")
    uid: str | None = None


class ExtractedText(BaseModel):
    """One window of a document's text."""

    format: str
    text: str
    offset: int
    truncated: bool = Field(description="More text follows this window, or the document was cut at a limit.")
    total_chars: int | None = Field(
        None, description="Length of the whole text, when it was read to the end."
    )
    next_offset: int | None = Field(
        None, description="offset of the next window when truncated by max_chars."
    )
    pages: int | None = None
    events: list[CalendarEvent] | None = None
    notes: list[str] = Field(default_factory=list)


_CHARSET_PARAM = re.compile(r";\s*charset\s*=\s*\"?([^\";\s]+)", re.IGNORECASE)


def _charset(content_type: str) -> str | None:
    match = _CHARSET_PARAM.search(content_type or "")
    return match.group(1) if match else None


# A byte order mark wins over the declared charset (as in browsers); UTF-32 before UTF-16,
# whose little-endian mark is a prefix of UTF-32's.
_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _bom_codec(head: bytes) -> str | None:
    return next((codec for bom, codec in _BOMS if head.startswith(bom)), None)


def _plain_codec(head: bytes, declared: str | None) -> str:
    """The codec of a text attachment: its byte order mark, else the declared charset, else UTF-8
    when the start is valid UTF-8 and windows-1252 when not (as for bodies)."""
    codec = _bom_codec(head) or declared
    if codec in ("utf-16", "utf-32"):
        # Declared without a byte order mark: the zero bytes of ASCII text give the order away.
        width = 2 if codec == "utf-16" else 4
        little = head[width - 1 :: width].count(0) >= head[::width].count(0)
        return f"{codec}-{'le' if little else 'be'}"
    if codec is not None:
        return codec
    try:
        codecs.getincrementaldecoder("utf-8")("strict").decode(head, False)
    except UnicodeDecodeError:
        return "cp1252"
    return "utf-8"


def _decoded_chunks(stream: BinaryIO, head: bytes, codec: str) -> Iterator[str]:
    """The file as text, 64 KiB at a time; a split CRLF stays one line end."""
    decoder = codecs.getincrementaldecoder(codec)("replace")
    chunk = head
    pending_cr = ""
    while True:
        final = len(chunk) < _READ_CHUNK
        try:
            text = decoder.decode(chunk, final)
        except Exception:  # some stateful codecs still raise on hostile input: go on as UTF-8
            decoder = codecs.getincrementaldecoder("utf-8")("replace")
            text = decoder.decode(chunk, final)
        text = pending_cr + text
        pending_cr = "\r" if text.endswith("\r") and not final else ""
        yield text[:-1] if pending_cr else text
        if final:
            return
        chunk = stream.read(_READ_CHUNK)


def _read_plain(
    path: Path, fmt: str, content_type: str, limits: ExtractLimits, offset: int, max_chars: int
) -> dict[str, Any]:
    """Text and CSV: stream-decode in this process (no parser involved), stop at the window."""
    collector = TextCollector(offset=offset, max_chars=max_chars, hard_cap=limits.max_chars)
    complete = True
    with path.open("rb") as stream:
        head = stream.read(_READ_CHUNK)
        codec = _plain_codec(head, codec_for(_charset(content_type)))
        chunks = _decoded_chunks(stream, head, codec)
        for text in chunks:
            if not collector.add(text):
                complete = next(chunks, None) is None
                break
    window = collector.finish(complete=complete)
    notes = []
    if window.pop("cut_at_limit"):
        notes.append(f"the text was cut at {limits.max_chars} characters (the extraction limit)")
    if b"\x00" in head[:_HEAD_BYTES] and not codec.startswith(("utf-16", "utf-32")):
        notes.append("the file contains NUL bytes: it may be binary data rather than text")
    return {"format": fmt, **window, "notes": notes}


def _read_head(path: Path) -> bytes:
    with path.open("rb") as stream:
        return stream.read(_HEAD_BYTES)


def extract_text(
    path: Path,
    content_type: str,
    filename: str | None,
    limits: ExtractLimits,
    *,
    offset: int = 0,
    max_chars: int,
    worker: SandboxWorker | None = None,
) -> ExtractedText:
    """Read one window (``offset``, ``max_chars`` characters) of the attachment's text (a parser's
    format in a child of its own, or in ``worker``'s child, which serves many, each bounded alike).

    Raises :class:`ExtractionError`: ``unsupported_format`` (not a document read as text),
    ``limit_exceeded`` (``limit`` names the cap: ``max_attachment_bytes``,
    ``extract_timeout_s``, ``memory``, ...), ``encrypted`` or ``extract_failed``.
    """
    if offset < 0:
        raise ValueError("offset must be >= 0")
    if max_chars < 1:
        raise ValueError("max_chars must be >= 1")
    size = check_input(path, limits.max_input_bytes)
    fmt = detect_format(content_type, filename, _read_head(path))
    if fmt is None:
        raise ExtractionError(
            "unsupported_format",
            f"{media_type_of(content_type) or 'This attachment'} is not a document that can be read as text "
            "(supported: PDF, Word/Excel/PowerPoint (OOXML), OpenDocument, calendar, CSV and plain text). "
            "Fetch its bytes instead.",
        )
    if fmt in ("text", "csv"):
        result = _read_plain(path, fmt, content_type, limits, offset, max_chars)
    else:
        params = {
            "format": fmt,
            "path": str(path),
            "offset": offset,
            "max_chars": max_chars,
            "hard_cap": limits.max_chars,
            "memory_bytes": limits.memory_bytes,
            "max_unpacked_bytes": limits.max_unpacked_bytes,
            "max_archive_members": limits.max_archive_members,
            "max_compression_ratio": limits.max_compression_ratio,
        }
        # Up to 4 UTF-8 bytes a character plus JSON escapes, and room for calendar events.
        response_cap = 8 * (min(offset + max_chars, limits.max_chars) + 1) + 4 * _MiB
        child_limits = SandboxLimits.of(limits, response_cap)
        if worker is None:
            result = run_in_sandbox("document", params, child_limits)
        else:
            result = worker.run("document", params, child_limits, input_bytes=size)
    return _validated(result)


def _validated(result: dict[str, Any]) -> ExtractedText:
    """The child's answer as a model; unsafe characters are removed again here (a no-op on
    the child's cleaned text, so offsets do not move)."""
    try:
        extracted = ExtractedText.model_validate(result)
    except ValidationError as exc:
        raise ExtractionError(
            "extract_failed", "The extraction process returned a malformed answer."
        ) from exc
    events = None
    if extracted.events is not None:
        events = [
            CalendarEvent.model_validate(_clean_strings(event.model_dump())) for event in extracted.events
        ]
    return extracted.model_copy(
        update={
            "text": remove_unsafe_characters(extracted.text),
            "notes": [remove_unsafe_characters(note)[:300] for note in extracted.notes[:50]],
            "events": events,
        }
    )


def _clean_strings(value: Any) -> Any:
    if isinstance(value, str):
        return remove_unsafe_characters(value)
    if isinstance(value, dict):
        return {key: _clean_strings(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_clean_strings(item) for item in value]
    return value

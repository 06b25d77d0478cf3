"""A MIME message read part by part from a :class:`~.message_file.MessageFile`, a line at a time, never
holding a body: each part's header block is parsed (by the standard library's parser, which sees nothing
else), its body known by where it starts and ends; a multipart's parts are found by its boundary lines, as
the standard library's ``email.feedparser`` finds them (a boundary line is ``--boundary``, ``--`` more on
the last one, blanks, a line end; the line end before it belongs to the boundary); a ``message/*`` part's
body is a message of its own. The decoded size of a body is counted a piece at a time.

Only a text part a reader is shown is read whole (:func:`part_message`), and parsed as the standard
library would parse it within the message.
"""

from __future__ import annotations

import binascii
import email.policy
import quopri
import re
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import EmailMessage, Message
from email.parser import BytesHeaderParser, BytesParser

from .message_file import HEADER_BLOCK_MAX_BYTES, HeaderBlockTooLarge, MessageFile

#: The bytes read at a time: split into lines, a piece is held about three times over.
SCAN_BYTES = 256 * 1024

# What the standard library's feedparser takes for a header line (its headerRE), and a boundary line's rest.
_HEADER_LINE = re.compile(rb"(From |[\041-\071\073-\176]*:|[\t ])")
_BOUNDARY_REST = re.compile(rb"(--)?[ \t]*(\r\n|\r|\n)?")
_BASE64_SPACE = b" \t\r\n"


@dataclass(frozen=True)
class StreamPart:
    """One part: its header fields alone (``headers``), where the part (``start``) and its body
    (``body_start`` .. ``end``) are in the file."""

    headers: EmailMessage
    start: int
    body_start: int
    end: int


def _line_end(line: bytes) -> int:
    """The length of ``line``'s line end (0: none)."""
    if line.endswith(b"\r\n"):
        return 2
    return 1 if line.endswith((b"\r", b"\n")) else 0


def _lines(source: MessageFile, start: int, end: int) -> Iterator[tuple[int, bytes, bool]]:
    """Each line of ``source[start:end]`` with its line end, where it starts, and whether it starts a
    line: a line longer than :data:`SCAN_BYTES` comes in pieces, only its first starting one."""
    carry, carry_at, starts = b"", start, True
    for chunk in source.chunks(start, end, SCAN_BYTES):
        data = carry + chunk
        lines = data.splitlines(keepends=True)
        at = carry_at
        for line in lines[:-1]:
            yield at, line, starts
            at, starts = at + len(line), True
        last = lines[-1]
        if last.endswith(b"\n"):
            yield at, last, starts
            carry, carry_at, starts = b"", at + len(last), True
        elif len(last) > SCAN_BYTES:  # a line without end that goes on: given in pieces
            yield at, last, starts
            carry, carry_at, starts = b"", at + len(last), False
        else:  # it may go on (or a CR may be followed by its LF) in the next piece
            carry, carry_at = last, at
    if carry:
        yield carry_at, carry, starts


def read_part(source: MessageFile, start: int, end: int, default_type: str = "text/plain") -> StreamPart:
    """The part of ``source[start:end]``: its header block (up to a blank line, or up to a line that is no
    header field, which starts the body, as the feedparser reads it) and where its body is."""
    header: list[bytes] = []
    body_start, size = end, 0
    for at, line, starts in _lines(source, start, end):
        if not starts or (line[:1] in (b"\r", b"\n")) or not _HEADER_LINE.match(line):
            body_start = at + (len(line) if starts and line[:1] in (b"\r", b"\n") else 0)
            break
        size += len(line)
        if size > HEADER_BLOCK_MAX_BYTES:
            raise HeaderBlockTooLarge(f"a part's header block is over {HEADER_BLOCK_MAX_BYTES:,} bytes")
        header.append(line)
    headers = BytesHeaderParser(policy=email.policy.default).parsebytes(b"".join(header))
    assert isinstance(headers, EmailMessage)
    headers.set_default_type(default_type)
    return StreamPart(headers, start, body_start, end)


def child_parts(source: MessageFile, part: StreamPart) -> list[StreamPart] | None:
    """The parts of the multipart ``part``, or the message a ``message/*`` part holds; None where it has
    none (a leaf, a multipart without a boundary or whose first boundary line never comes)."""
    headers = part.headers
    if headers.get_content_maintype() == "message":
        return [read_part(source, part.body_start, part.end)]
    boundary = headers.get_boundary() if headers.get_content_maintype() == "multipart" else None
    if boundary is None:
        return None
    try:
        marker = b"--" + boundary.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return None
    default = "message/rfc822" if headers.get_content_type() == "multipart/digest" else "text/plain"
    found: list[tuple[int, int]] = []  # (where a part starts, where the line end before the next one is)
    opened, previous_end = None, 0
    for at, line, starts in _lines(source, part.body_start, part.end):
        rest = _BOUNDARY_REST.fullmatch(line, len(marker)) if starts and line.startswith(marker) else None
        if rest is not None and (rest.group(2) or at + len(line) >= part.end):
            closes = bool(rest.group(1))
            if opened == at:  # boundary lines in a row, of either kind: no part between them
                opened = at + len(line)
            elif opened is None and closes:  # closed before any part began: it has none (a leaf)
                return None
            else:
                if opened is not None:
                    found.append((opened, max(opened, at - previous_end)))
                if closes:
                    break
                opened = at + len(line)
        previous_end = _line_end(line)
    else:
        if opened is not None:  # no closing boundary: the last part runs to the end, less its line end
            found.append((opened, max(opened, part.end - previous_end)))
    if opened is None:
        return None
    return [read_part(source, start, stop, default) for start, stop in found]


def body_size(source: MessageFile, part: StreamPart) -> int:
    """The bytes of ``part``'s body once its Content-Transfer-Encoding is decoded (base64 and
    quoted-printable a piece at a time; the others as they are)."""
    encoding = str(part.headers.get("content-transfer-encoding", "")).strip().lower()
    if encoding == "base64":
        return _base64_size(source.chunks(part.body_start, part.end, SCAN_BYTES))
    if encoding == "quoted-printable":
        return sum(len(quopri.decodestring(lines)) for lines in _whole_lines(source, part))
    if encoding in ("x-uuencode", "uuencode", "uue", "x-uue"):
        payload = part_message(source, part).get_payload(decode=True)
        return len(payload) if isinstance(payload, bytes) else 0
    return part.end - part.body_start


def _whole_lines(source: MessageFile, part: StreamPart) -> Iterator[bytes]:
    """``part``'s body in pieces that each end with a line end (but the last)."""
    carry = b""
    for chunk in source.chunks(part.body_start, part.end, SCAN_BYTES):
        data = carry + chunk
        cut = data.rfind(b"\n") + 1
        if cut == 0 and len(data) <= SCAN_BYTES:
            carry = data
            continue
        cut = cut or len(data)
        yield data[:cut]
        carry = data[cut:]
    if carry:
        yield carry


def _base64_size(chunks: Iterator[bytes]) -> int:
    """The decoded size of base64 ``chunks``: whole groups of four decoded as they come, a tail padded."""
    size, carry = 0, b""
    for chunk in chunks:
        data = carry + chunk.translate(None, _BASE64_SPACE)
        whole = len(data) - len(data) % 4
        size += len(_unbase64(data[:whole]))
        carry = data[whole:]
    if carry:
        size += len(_unbase64(carry + b"=" * (-len(carry) % 4)))
    return size


def _unbase64(data: bytes) -> bytes:
    try:
        return binascii.a2b_base64(data)
    except binascii.Error:  # a broken group: counted as the standard library would not decode it
        return b""


def part_message(source: MessageFile, part: StreamPart) -> Message:
    """``part`` read whole and parsed (headers and body): only for a part shown as text."""
    message = BytesParser(policy=email.policy.default).parsebytes(
        source.read_at(part.start, part.end - part.start)
    )
    message.set_default_type(part.headers.get_default_type())
    return message

"""A MIME message read part by part from a :class:`~.message_file.MessageFile`, a line at a time, never
holding a body: :func:`message_tree` gives the message as the standard library's parser would, but with
no body in it: each part's header fields (parsed by the standard library, which sees nothing else), its
parts as its payload (a multipart's, found by its boundary lines as ``email.feedparser`` finds them: a
boundary line is ``--boundary``, ``--`` more on the last one, blanks, a line end, the line end before it
the boundary's; the message a ``message/*`` part holds), a multipart's preamble and epilogue, and where
each part and its body are in the file. The decoded size of a body is counted a piece at a time
(:func:`body_size`); only a text part a reader is shown is read whole (:func:`part_message`), and parsed
as the standard library would parse it within the message.
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
#: The most multiparts and messages within one another read: a message nested deeper is not read.
MAX_DEPTH = 40

# What the standard library's feedparser takes for a header line (its headerRE), and a boundary line's rest.
_HEADER_LINE = re.compile(rb"(From |[\041-\071\073-\176]*:|[\t ])")
_BOUNDARY_REST = re.compile(rb"(--)?[ \t]*(\r\n|\r|\n)?")
_BASE64_SPACE = b" \t\r\n"


class StreamPart(EmailMessage):
    """One part (see the module): where it (``start``), its body (``body_start``) and its end (``end``)
    are in the file."""

    start = body_start = end = 0


class TooDeep(ValueError):
    """The message's parts are nested more than :data:`MAX_DEPTH` deep."""


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
    part = BytesHeaderParser(StreamPart, policy=email.policy.default).parsebytes(b"".join(header))
    assert isinstance(part, StreamPart)
    part.set_default_type(default_type)
    part.start, part.body_start, part.end = start, body_start, end
    return part


def message_tree(
    source: MessageFile,
    start: int = 0,
    end: int | None = None,
    default_type: str = "text/plain",
    depth: int = 0,
) -> StreamPart:
    """The message (or part) of ``source[start:end]`` with its parts, as the module says; raises
    :class:`TooDeep` or :class:`~.message_file.HeaderBlockTooLarge`."""
    if depth > MAX_DEPTH:
        raise TooDeep(f"its parts are nested more than {MAX_DEPTH} deep")
    part = read_part(source, start, source.size if end is None else end, default_type)
    if part.get_content_maintype() == "message":
        part.set_payload([message_tree(source, part.body_start, part.end, depth=depth + 1)])
        return part
    split = _split(source, part)
    if split is None:
        return part
    part.preamble, part.epilogue = _text(source, split.preamble), _text(source, split.epilogue)
    if split.parts is None:  # no part: its body is its preamble (what follows is left out)
        part.end, part.preamble = split.preamble[1] if split.preamble else part.end, None
        return part
    default = "message/rfc822" if part.get_content_type() == "multipart/digest" else "text/plain"
    children: list[Message | str] = []
    for first, last, line_end in split.parts:
        child = message_tree(source, first, last, default, depth + 1)
        if child.get_content_maintype() == "multipart":  # the feedparser takes the line end before the
            if child.epilogue == "":  # next boundary off its epilogue, never off its body
                child.epilogue = None
            if not child.is_multipart() and child.end == last:
                child.end += line_end
        children.append(child)
    part.set_payload(children)
    return part


def _text(source: MessageFile, where: tuple[int, int] | None) -> str | None:
    """``source[start:end]`` as the standard library's parser keeps text; None for no place."""
    if where is None:
        return None
    start, end = where
    return source.read_at(start, end - start).decode("ascii", "surrogateescape")


@dataclass(frozen=True)
class _Split:
    """Where a multipart's parts are (start, end, the length of the line end after it: None: it has none,
    its body being the preamble that ends at ``preamble``), its preamble (None: none) and its epilogue
    (None: no closing boundary line came)."""

    parts: list[tuple[int, int, int]] | None
    preamble: tuple[int, int] | None
    epilogue: tuple[int, int] | None


def _split(source: MessageFile, part: StreamPart) -> _Split | None:
    """How the multipart ``part`` divides, as the feedparser divides it; None where it does not (not a
    multipart, no boundary, or no boundary line)."""
    boundary = part.get_boundary() if part.get_content_maintype() == "multipart" else None
    if boundary is None:
        return None
    try:
        marker = b"--" + boundary.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return None
    found: list[tuple[int, int, int]] = []
    opened, previous_end, preamble, epilogue = None, 0, None, None
    for at, line, starts in _lines(source, part.body_start, part.end):
        rest = _BOUNDARY_REST.fullmatch(line, len(marker)) if starts and line.startswith(marker) else None
        if rest is not None and (rest.group(2) or at + len(line) >= part.end):
            closes = bool(rest.group(1))
            if opened == at:  # boundary lines in a row, of either kind: no part between them
                opened = at + len(line)
            elif opened is None and closes:  # closed before any part began: its preamble is its body
                return _Split(None, (part.body_start, at), (part.end, part.end))
            else:
                if opened is None and at > part.body_start:  # the line end before it is the boundary's
                    preamble = (part.body_start, max(part.body_start, at - previous_end))
                elif opened is not None:
                    found.append((opened, max(opened, at - previous_end), previous_end))
                if closes:
                    epilogue = (at + len(line), part.end)
                    break
                opened = at + len(line)
        previous_end = _line_end(line)
    else:
        if opened is not None:  # no closing boundary: the last part runs to the end, less its line end
            found.append((opened, max(opened, part.end - previous_end), previous_end))
    if opened is None:  # no boundary line: its body is its preamble
        return _Split(None, (part.body_start, part.end), (part.end, part.end))
    return _Split(found, preamble, epilogue)


def body_size(source: MessageFile, part: StreamPart) -> int:
    """The bytes of ``part``'s body once its Content-Transfer-Encoding is decoded (base64 and
    quoted-printable a piece at a time; the others as they are)."""
    encoding = str(part.get("content-transfer-encoding", "")).strip().lower()
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
    message.set_default_type(part.get_default_type())
    return message

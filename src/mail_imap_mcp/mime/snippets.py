"""The readable start of a body (the snippet of a search result) from the first bytes of ``BODY.PEEK[TEXT]``."""

from __future__ import annotations

import email
import email.policy
import re
from collections.abc import Callable
from email.errors import MissingHeaderBodySeparatorDefect

from ..content.quotes import new_text
from ..content.text import collapse_whitespace
from .header_text import bytes_to_str, decode_header_value, to_str, unfold
from .headers import parse_header_block
from .message import payload_bytes, walk_message
from .params import decode_params, split_header_params, valid_media_type
from .parts import Part, choose_body_parts, decode_part_text, is_body_candidate, make_part

__all__ = ["snippet_from_prefix", "text_from_prefix"]

Reader = Callable[[bytes, Part], "str | None"]


def _whole_text(data: bytes, part: Part) -> str | None:
    """The text of the (possibly cut) encoded bytes of one part, HTML rendered as text; None if no text."""
    if not part.content_type.startswith("text/"):
        return None
    text = decode_part_text(data, part, final=False)
    if part.content_type == "text/html":
        from ..content.html import html_to_text  # on first use: the HTML renderer is slow to import

        text = html_to_text(text)
    return text


def _readable(data: bytes, part: Part) -> str | None:
    """Snippet text from the (possibly cut) encoded bytes of one part."""
    text = _whole_text(data, part)
    if text is None:
        return None
    # Spend the snippet on what the sender wrote, not on the quoted thread and the signature; a snippet
    # is at most 500 characters, so twice that much new text is plenty to read.
    return collapse_whitespace(new_text(text, enough=1000).text[:2000]) or None


def text_from_prefix(
    prefix: bytes,
    parts: list[Part],
    *,
    header_content_type: str | None = None,
    boundary: str | None = None,
    header_encoding: str | None = None,
) -> str | None:
    """The text of the body part :func:`snippet_from_prefix` reads, whole as far as the prefix holds it:
    quoted replies and signatures kept, whitespace as written (what a local index reads)."""
    try:
        return _snippet(
            bytes(prefix or b""), parts or [], header_content_type, boundary, header_encoding, _whole_text
        )
    except Exception:
        return None


def snippet_from_prefix(
    prefix: bytes,
    parts: list[Part],
    *,
    header_content_type: str | None = None,
    boundary: str | None = None,
    header_encoding: str | None = None,
) -> str | None:
    """Readable start of a body from the first bytes of ``BODY.PEEK[TEXT]``.

    ``parts`` are the leaves from :func:`~mail_imap_mcp.imap.bodystructure.parse_bodystructure` (may be empty if unknown).
    For a multipart message the boundary is taken from ``boundary`` (see
    :func:`~mail_imap_mcp.imap.bodystructure.top_level_boundary`), else from ``header_content_type`` (the raw top-level
    Content-Type header), else sniffed from the first ``--`` line of the prefix. Without
    ``parts``, a single-part body is decoded as ``header_content_type`` says, with the
    top-level Content-Transfer-Encoding ``header_encoding``.
    text/plain is preferred over text/html (converted to text). Whitespace is collapsed;
    the result is not truncated (see :func:`~mail_imap_mcp.content.text.truncate`). None if nothing readable fits.
    """
    try:
        return _snippet(bytes(prefix or b""), parts or [], header_content_type, boundary, header_encoding)
    except Exception:
        return None


def _snippet(
    prefix: bytes,
    parts: list[Part],
    header_content_type: str | None,
    boundary: str | None,
    header_encoding: str | None,
    readable: Reader = _readable,
) -> str | None:
    if not prefix.strip():
        return None
    header_type, header_pairs = split_header_params(unfold(to_str(header_content_type) or ""))
    header_type = header_type.lower()
    header_params = decode_params(header_pairs)
    boundary = boundary or header_params.get("boundary")
    multipart = bool(boundary) or header_type.startswith("multipart/") or len(parts) > 1
    if parts and parts[0].section != "1":
        multipart = True
    if not multipart and not header_type and _looks_multipart(prefix):
        # A multipart with a single child looks like a single part in BODYSTRUCTURE terms.
        multipart = True

    if not multipart:
        if parts:
            part = parts[0]
        else:
            ctype = header_type if valid_media_type(header_type) else "text/plain"
            encoding = decode_header_value(header_encoding) or "7bit"
            part = make_part("1", ctype, header_params, encoding, len(prefix), None, {}, None)
        return readable(prefix, part)

    boundary = (
        (boundary or _sniff_boundary(prefix) or "").replace('"', "").replace("\r", "").replace("\n", "")
    )
    if not boundary:
        return None
    fast = _first_leaf_text(prefix, parts, boundary, readable)
    if fast:
        return fast
    subtype = header_type.split("/", 1)[1] if header_type.startswith("multipart/") else "mixed"
    synthetic = f'Content-Type: multipart/{subtype}; boundary="{boundary}"\r\n\r\n'.encode()
    message = email.message_from_bytes(synthetic + prefix, policy=email.policy.compat32)
    if not isinstance(message.get_payload(), list):
        return None  # no complete boundary line yet
    leaves = walk_message(message)
    if leaves and any(isinstance(d, MissingHeaderBodySeparatorDefect) for d in leaves[-1][1].defects):
        # The prefix ends inside this part's header block: its "body" is header text.
        leaves.pop()
    by_section = {part.section: node for part, node in leaves}

    # Prefer the server's view of the parts (it saw the whole message), then the prefix.
    plain, html = choose_body_parts(parts)
    for chosen in (plain, html):
        if chosen is not None and chosen.section in by_section:
            text = readable(payload_bytes(by_section[chosen.section]), chosen)
            if text:
                return text
    for kind in ("text/plain", "text/html"):
        for part, node in leaves:
            if part.content_type == kind and is_body_candidate(part):
                text = readable(payload_bytes(node), part)
                if text:
                    return text
    return None


_BLANK_LINE = re.compile(rb"\r?\n\r?\n")
#: Bytes of a header block that decode to themselves: printable ASCII, tab and line ends (no control
#: character that decoding drops, no 8-bit text).
_PLAIN_HEADER_BYTES = re.compile(rb"[\t\n\r\x20-\x7e]*")


def _cannot_say_multipart(block: bytes) -> bool:
    """Whether no Content-Type of this part's header ``block`` can read as multipart once decoded, so it
    needs no parse: plain ASCII without the word and without encoded-words (which could spell it)."""
    return (
        b"=?" not in block
        and b"multipart" not in block.lower()
        and bool(_PLAIN_HEADER_BYTES.fullmatch(block))
    )


def _first_leaf_text(
    prefix: bytes, parts: list[Part], boundary: str, readable: Reader = _readable
) -> str | None:
    """Fast path: the body text when it is the message's first leaf (section 1, 1.1, ...).

    BODYSTRUCTURE says the body is the first leaf, so its bytes are found by skipping one
    delimiter line and header block per nesting level (checking each delimiter) and ending at the
    next delimiter, with no MIME parse. Anything unexpected returns None and the caller parses
    the prefix properly.
    """
    plain, html = choose_body_parts(parts)
    chosen = plain or html
    if chosen is None or not parts or chosen is not parts[0] or set(chosen.section) - {"1", "."}:
        return None
    position = 0
    for _ in range(chosen.section.count(".") + 1):
        delimiter = b"--" + boundary.encode("utf-8", "surrogateescape")
        start = prefix.find(delimiter, position)
        end = start + len(delimiter)
        if (
            start < 0
            or (start > 0 and prefix[start - 1] != 0x0A)
            or prefix[end : end + 1] not in (b"\r", b"\n")
        ):
            return None
        blank = _BLANK_LINE.search(prefix, start)
        if blank is None:
            return None
        block = prefix[end : blank.end()]
        position = blank.end()
        if _cannot_say_multipart(block):
            continue
        content_type = parse_header_block(block.lstrip(b"\r\n")).get("content-type", [""])[0]
        # A nested multipart names the delimiter of the next level.
        ctype, params = split_header_params(content_type)
        if ctype.strip().lower().startswith("multipart/"):
            boundary = decode_params(params).get("boundary", "")
            if not boundary:
                return None
    # The part ends at the next delimiter of its level (or where the prefix was cut).
    content = prefix[position:]
    cut = content.find(b"\n--" + boundary.encode("utf-8", "surrogateescape"))
    # The CRLF before a delimiter belongs to the delimiter (RFC 2046).
    return readable(content if cut < 0 else content[:cut].removesuffix(b"\r"), chosen)


def _looks_multipart(prefix: bytes) -> bool:
    lines = prefix.lstrip(b"\r\n").split(b"\n", 2)
    return (
        len(lines) >= 2
        and lines[0].startswith(b"--")
        and len(lines[0].strip()) > 2
        and lines[1].lower().startswith(b"content-")
    )


def _sniff_boundary(prefix: bytes) -> str | None:
    for line in prefix.split(b"\n")[:200]:
        line = line.rstrip(b"\r \t")
        if line.startswith(b"--") and len(line) > 2:
            return bytes_to_str(line[2:])
    return None

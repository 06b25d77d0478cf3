"""The text of one header value: 8-bit tolerant, unfolded, RFC 2047 encoded-words decoded, control
characters removed; RFC 5322 comments stripped. Also reads imapclient response atoms as text."""

from __future__ import annotations

import re

from ..content.charsets import decode_bytes
from .transfer import decode_base64, decode_qp

__all__ = [
    "HEADER_CONTROL",
    "bytes_to_str",
    "clean_header",
    "decode_header_value",
    "drop_controls",
    "strip_comments",
    "to_str",
    "unfold",
]


# Control characters are dropped from header values; CR/LF become spaces; tab is kept.
HEADER_CONTROL: dict[int, str | None] = {
    **dict.fromkeys([*range(0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0)]),
    0x0A: " ",
    0x0D: " ",
}
# The payload excludes "?" so a scan stops at the next "?" (linear time on hostile input).
_ENCODED_WORD = re.compile(r"=\?([^?\s]{1,75})\?([bBqQ])\?([^?]*)\?=")


def bytes_to_str(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        return raw.decode("cp1252")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def to_str(value: object) -> str | None:
    """A response atom or header value as ``str`` (8-bit tolerant), or None."""
    if value is None:
        return None
    if type(value) is bytes:  # nearly every atom of a response: skip the checks below
        return bytes_to_str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes_to_str(bytes(value))
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            # Surrogate-escaped 8-bit data (email package) or lone surrogates.
            try:
                return bytes_to_str(value.encode("utf-8", "surrogateescape"))
            except UnicodeEncodeError:
                return value.encode("utf-8", "replace").decode("utf-8")
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def unfold(value: str) -> str:
    if "\n" not in value and "\r" not in value:
        return value
    lines = value.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    out = [lines[0]]
    for line in lines[1:]:
        # A fold is CRLF + WSP; a tab used for folding reads better as a space.
        if line.startswith("\t"):
            line = " " + line[1:]
        elif not line.startswith(" "):
            line = " " + line
        out.append(line)
    return "".join(out)


def _decode_encoded_words(value: str) -> str:
    if "=?" not in value:
        return value
    out: list[str] = []
    run: list[tuple[str, bytes]] = []  # adjacent encoded words, decoded to bytes

    def flush() -> None:
        # Join same-charset neighbours first: encoders split multi-byte characters.
        index = 0
        while index < len(run):
            charset, data = run[index]
            index += 1
            while index < len(run) and run[index][0] == charset:
                data += run[index][1]
                index += 1
            out.append(decode_bytes(data, charset or "utf-8"))
        run.clear()

    position = 0
    for match in _ENCODED_WORD.finditer(value):
        gap = value[position : match.start()]
        if gap and not (run and gap.isspace()):
            flush()
            out.append(gap)
        charset = match.group(1).split("*", 1)[0].lower()
        payload = match.group(3).encode("utf-8", "replace")
        is_base64 = match.group(2) in "bB"
        data = decode_base64(payload) if is_base64 else decode_qp(payload.replace(b"_", b" "))
        run.append((charset, data))
        position = match.end()
    flush()
    out.append(value[position:])
    return "".join(out)


def drop_controls(value: str) -> str:
    """``value.translate(HEADER_CONTROL)``: control characters dropped, CR and LF made spaces."""
    # Every character HEADER_CONTROL maps is a control (Cc), which isprintable() refuses: a printable
    # value, nearly every one, is its own translation (the test costs a tenth of the translation).
    return value if value.isprintable() else value.translate(HEADER_CONTROL)


def clean_header(value: str) -> str:
    return drop_controls(value).strip()


def decode_header_value(raw: bytes | str | None) -> str:
    """Decode a header value: 8-bit bytes, RFC 2047 encoded-words, folding, control chars.

    Whitespace between adjacent encoded-words is dropped (RFC 2047 §6.2), adjacent
    same-charset words are joined before decoding, unknown charsets decode as UTF-8 with
    replacement. The result has no control characters except tab and is stripped.
    """
    try:
        text = to_str(raw)
        if not text:
            return ""
        return clean_header(_decode_encoded_words(unfold(text)))
    except Exception:
        return clean_header(str(raw)) if isinstance(raw, str) else ""


def strip_comments(text: str) -> tuple[str, str]:
    """Remove top-level (comments) outside quotes; return (text, first comment)."""
    out: list[str] = []
    comment: list[str] = []
    first = ""
    depth = 0
    quoted = False
    index = 0
    while index < len(text):
        ch = text[index]
        if ch == "\\" and index + 1 < len(text):
            (comment if depth else out).append(text[index : index + 2])
            index += 2
            continue
        if depth:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if not depth:
                    first = first or "".join(comment).strip()
                    comment.clear()
                    index += 1
                    continue
            comment.append(ch)
        elif ch == "(" and not quoted:
            depth = 1
        else:
            if ch == '"':
                quoted = not quoted
            out.append(ch)
        index += 1
    return "".join(out), first

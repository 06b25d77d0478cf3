"""MIME decoding for the IMAP layer: headers, addresses, dates, BODYSTRUCTURE, bodies.

Pure functions over bytes and imapclient response atoms; no network, no MCP. Real-world
mail is full of broken charsets, bad encodings, truncated data and 8-bit headers, so
every function here degrades gracefully instead of raising. The single exception is
:func:`parse_bodystructure`, which raises ``ValueError`` when the structure is unusable so
that the caller can fall back to fetching and parsing the whole message
(:func:`parse_full_message`).

Conventions:

* Text returned is always a valid ``str`` without control characters: bodies keep only tab,
  CR and LF, header-derived text only tab. (Terminal escape sequences such as ``ESC [2J`` or
  OSC 8 hyperlinks in mail must not reach whoever displays the output.)
* 8-bit header bytes are read as UTF-8, falling back to windows-1252 (the superset
  browsers use for "latin-1"), then latin-1.
* Section numbers follow IMAP (RFC 3501 §6.4.5): leaves of a multipart are numbered
  ``1``, ``1.2``...; a non-multipart message has the single section ``1``;
  ``message/rfc822`` parts are leaves (not descended into).
"""

from __future__ import annotations

import binascii
import email
import email.policy
import email.utils
import functools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.errors import MissingHeaderBodySeparatorDefect
from email.message import Message
from typing import Any
from urllib.parse import unquote_to_bytes

from ..content.charsets import decode_bytes
from ..content.html import html_to_text
from ..content.quotes import new_text
from ..content.text import BIDI_CONTROLS, collapse_whitespace, strip_controls, truncate

__all__ = [
    "Address",
    "ParsedMessage",
    "Part",
    "attachment_parts",
    "choose_body_parts",
    "collapse_whitespace",
    "decode_header_value",
    "decode_text",
    "decode_transfer",
    "format_address",
    "has_attachments",
    "message_leaves",
    "parse_address_list",
    "parse_bodystructure",
    "parse_date",
    "parse_full_message",
    "parse_header_block",
    "snippet_from_prefix",
    "structure_mismatch",
    "top_level_boundary",
    "truncate",
]

# --------------------------------------------------------------------------------------
# Data types
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Address:
    """One mailbox from an address header; either field may be missing in broken mail."""

    name: str | None
    email: str | None


@dataclass(frozen=True, slots=True)
class Part:
    """A leaf MIME part as described by BODYSTRUCTURE (or by the parsed message).

    ``size_bytes`` is the *encoded* size (base64 is ~4/3 of the decoded size).
    ``content_id`` is stored without the surrounding ``<>``. ``disposition`` is
    normalised: leaves that are not ``text/plain``/``text/html`` and carry no
    disposition get ``"inline"`` when they have a Content-ID (embedded images) and
    ``"attachment"`` otherwise; unknown dispositions become ``"attachment"``.
    ``filename`` has any directory components removed.
    """

    section: str
    content_type: str
    params: dict[str, str] = field(hash=False)
    encoding: str
    size_bytes: int
    disposition: str | None
    filename: str | None
    content_id: str | None
    charset: str | None


@dataclass(frozen=True, slots=True)
class ParsedMessage:
    """Result of :func:`parse_full_message`.

    ``text``/``html`` are the decoded bodies of the parts chosen by
    :func:`choose_body_parts`; ``html`` is *not* sanitised.
    """

    headers: dict[str, list[str]] = field(hash=False)
    text: str | None
    html: str | None
    attachments: list[Part] = field(hash=False)


# --------------------------------------------------------------------------------------
# Charsets and transfer encodings
# --------------------------------------------------------------------------------------


def decode_text(data: bytes, charset: str | None, *, partial: bool = False) -> str:
    """Decode body bytes using ``charset`` (aliases and supersets applied, unknown -> UTF-8).

    Invalid sequences are replaced; control characters other than tab, CR and LF (NUL,
    ESC, BEL, C1...) are removed. Absent or ASCII charsets
    accept UTF-8 and fall back to windows-1252. With ``partial=True`` (data cut by a
    partial fetch) an incomplete multi-byte character at the end is dropped instead of
    becoming U+FFFD.
    """
    if not data:
        return ""
    return strip_controls(decode_bytes(bytes(data), charset, final=not partial))


_B64_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_DELETE = bytes(sorted(set(range(256)) - set(_B64_ALPHABET) - {ord("=")}))
_HEX = frozenset(b"0123456789abcdefABCDEF")


def _decode_base64(raw: bytes) -> bytes:
    # Padding inside the data means concatenated chunks (seen from some mailers); each
    # chunk is decoded on its own, and a final partial group yields its complete bytes.
    out = bytearray()
    for chunk in raw.translate(None, _B64_DELETE).split(b"="):
        whole = len(chunk) - len(chunk) % 4
        try:
            out += binascii.a2b_base64(chunk[:whole])
            rest = chunk[whole:]
            if len(rest) >= 2:
                out += binascii.a2b_base64(rest + b"=" * (4 - len(rest)))
        except (binascii.Error, ValueError):
            continue
    return bytes(out)


def _decode_qp(raw: bytes, *, header: bool = False) -> bytes:
    # A body cut by a partial fetch can end inside an escape ("=", "=C", "=\r").
    if raw.endswith(b"="):
        raw = raw[:-1]
    elif len(raw) >= 2 and raw[-2] == ord("=") and (raw[-1] in _HEX or raw[-1] == ord("\r")):
        raw = raw[:-2]
    try:
        return binascii.a2b_qp(raw, header=header)
    except (binascii.Error, ValueError):
        return raw


def _decode_uu(raw: bytes) -> bytes:
    out = bytearray()
    for line in raw.splitlines():
        if not line.strip() or line.startswith((b"begin ", b"end")):
            continue
        try:
            out += binascii.a2b_uu(line)
        except binascii.Error:
            # Buggy encoders pad lines with garbage; decode only the declared length.
            length = (((line[0] - 32) & 63) * 4 + 5) // 3
            try:
                out += binascii.a2b_uu(line[:length])
            except binascii.Error:
                continue
    return bytes(out)


def decode_transfer(raw: bytes, encoding: str) -> bytes:
    """Undo a Content-Transfer-Encoding, tolerating garbage and truncation.

    base64 ignores non-alphabet bytes and missing padding and decodes as much as is
    present; quoted-printable drops a dangling escape at the end; uuencode is decoded
    line by line; 7bit/8bit/binary and unknown encodings are returned unchanged.
    """
    if not raw:
        return b""
    data = bytes(raw)
    enc = (encoding or "").strip().strip("\"'").lower()
    try:
        if enc in ("base64", "base-64", "b64"):
            return _decode_base64(data)
        if enc in ("quoted-printable", "quoted_printable", "qp"):
            return _decode_qp(data)
        if enc in ("x-uuencode", "uuencode", "x-uue", "uue"):
            return _decode_uu(data)
    except Exception:
        return data
    return data


# --------------------------------------------------------------------------------------
# Headers
# --------------------------------------------------------------------------------------

# Control characters are dropped from header values; CR/LF become spaces; tab is kept.
_HEADER_CONTROL: dict[int, str | None] = {
    **dict.fromkeys([*range(0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0)]),
    0x0A: " ",
    0x0D: " ",
}
# The payload excludes "?" so a scan stops at the next "?" (linear time on hostile input).
_ENCODED_WORD = re.compile(r"=\?([^?\s]{1,75})\?([bBqQ])\?([^?]*)\?=")


def _bytes_to_str(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        return raw.decode("cp1252")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _to_str(value: object) -> str | None:
    """A response atom or header value as ``str`` (8-bit tolerant), or None."""
    if value is None:
        return None
    if type(value) is bytes:  # nearly every atom of a response: skip the checks below
        return _bytes_to_str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return _bytes_to_str(bytes(value))
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            # Surrogate-escaped 8-bit data (email package) or lone surrogates.
            try:
                return _bytes_to_str(value.encode("utf-8", "surrogateescape"))
            except UnicodeEncodeError:
                return value.encode("utf-8", "replace").decode("utf-8")
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _unfold(value: str) -> str:
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
        data = _decode_base64(payload) if is_base64 else _decode_qp(payload.replace(b"_", b" "))
        run.append((charset, data))
        position = match.end()
    flush()
    out.append(value[position:])
    return "".join(out)


def _clean_header(value: str) -> str:
    return value.translate(_HEADER_CONTROL).strip()


def decode_header_value(raw: bytes | str | None) -> str:
    """Decode a header value: 8-bit bytes, RFC 2047 encoded-words, folding, control chars.

    Whitespace between adjacent encoded-words is dropped (RFC 2047 §6.2), adjacent
    same-charset words are joined before decoding, unknown charsets decode as UTF-8 with
    replacement. The result has no control characters except tab and is stripped.
    """
    try:
        text = _to_str(raw)
        if not text:
            return ""
        return _clean_header(_decode_encoded_words(_unfold(text)))
    except Exception:
        return _clean_header(str(raw)) if isinstance(raw, str) else ""


_ADDRESS_HEADERS = frozenset(
    {
        "from",
        "sender",
        "reply-to",
        "to",
        "cc",
        "bcc",
        "resent-from",
        "resent-sender",
        "resent-to",
        "resent-cc",
        "resent-bcc",
        "mail-followup-to",
        "mail-reply-to",
        "disposition-notification-to",
    }
)


#: A header field name: printable US-ASCII but the colon (RFC 5322 3.6.8).
_FIELD_NAME = re.compile(rb"[\x21-\x39\x3b-\x7e]+")


def parse_header_block(raw: bytes) -> dict[str, list[str]]:
    """Parse raw header bytes into ``{lower-case name: [decoded values in order]}``.

    Accepts the output of ``BODY.PEEK[HEADER]`` / ``BODY.PEEK[HEADER.FIELDS (...)]`` or a
    whole message (parsing stops at the first empty line). Folded lines are joined,
    garbage lines (no colon, invalid name, mbox ``From`` line) are skipped. Address
    headers (From, To, Cc, ...) are re-serialised from :func:`parse_address_list` with
    display names quoted where needed, so feeding a value back to
    :func:`parse_address_list` is safe even when a decoded name contains a comma.
    """
    if not raw:
        return {}
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogateescape")
    fields: list[tuple[str, list[bytes]]] = []
    current: list[bytes] | None = None
    for line in bytes(raw).split(b"\n"):
        line = line.rstrip(b"\r")
        if not line:
            if fields:
                break
            continue
        if line[:1] in (b" ", b"\t"):
            if current is not None:
                current.append(line)
            continue
        name, sep, value = line.partition(b":")
        name = name.rstrip(b" \t")
        if not sep or not _FIELD_NAME.fullmatch(name):
            current = None
            continue
        current = [value]
        fields.append((name.decode("ascii").lower(), current))

    headers: dict[str, list[str]] = {}
    for field_name, lines in fields:
        raw_value = b"\r\n".join(lines)
        decoded = ""
        if field_name in _ADDRESS_HEADERS:
            decoded = ", ".join(_format_address_quoted(a) for a in parse_address_list(raw_value))
        headers.setdefault(field_name, []).append(decoded or decode_header_value(raw_value))
    return headers


# --------------------------------------------------------------------------------------
# Addresses and dates
# --------------------------------------------------------------------------------------


def format_address(a: Address) -> str:
    """``"Name <email>"``, or just the email (or name) when the other part is missing."""
    if a.name and a.email:
        return f"{a.name} <{a.email}>"
    return a.email or a.name or ""


_SPECIALS = frozenset('()<>[]:;@\\,."')


def _format_address_quoted(a: Address) -> str:
    name = a.name
    if name and any(ch in _SPECIALS for ch in name):
        name = '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return format_address(Address(name, a.email))


def _split_top_level(text: str) -> Iterator[str]:
    """Split an address list on top-level "," and ";" (outside quotes, <> and comments)."""
    start = 0
    quoted = False
    angle = comment = 0
    index = 0
    while index < len(text):
        ch = text[index]
        if ch == "\\":
            index += 2
            continue
        if quoted:
            quoted = ch != '"'
        elif ch == '"':
            quoted = True
        elif ch == "(":
            comment += 1
        elif ch == ")" and comment:
            comment -= 1
        elif not comment:
            if ch == "<":
                angle += 1
            elif ch == ">" and angle:
                angle -= 1
            elif ch in ",;" and not angle:
                yield text[start:index]
                start = index + 1
        index += 1
    yield text[start:]


def _strip_comments(text: str) -> tuple[str, str]:
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


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        text = text[1:-1]
    elif text.startswith('"'):
        text = text[1:]
    elif text.endswith('"'):
        text = text[:-1]
    out: list[str] = []
    index = 0
    while index < len(text):
        if text[index] == "\\" and index + 1 < len(text):
            index += 1
        out.append(text[index])
        index += 1
    return "".join(out)


def _parse_mailbox(chunk: str) -> Address | None:
    # Group syntax "Friends: a@x, b@y;" — the display name of a group is dropped.
    text, comment = _strip_comments(chunk)
    colon = _top_level_colon(text)
    if colon is not None:
        text = text[colon + 1 :]
    text = text.strip()
    if not text:
        return None
    open_at = _top_level_index(text, "<")
    if open_at is not None:
        close_at = text.find(">", open_at)
        addr = text[open_at + 1 : close_at if close_at != -1 else len(text)]
        addr = addr.rsplit(":", 1)[-1]  # obsolete source route "<@a,@b:user@host>"
        name = _unquote(text[:open_at]) or comment
    elif "@" in text:
        addr, name = text, comment
    elif " " in text.strip() or text.strip().startswith('"'):
        addr, name = "", _unquote(text)
    else:
        addr, name = text, comment
    email_addr = "".join(_unquote(addr).split()) or None
    display = decode_header_value(name) or None
    if email_addr is None and display is None:
        return None
    return Address(display, email_addr)


def _top_level_index(text: str, target: str) -> int | None:
    quoted = False
    index = 0
    while index < len(text):
        ch = text[index]
        if ch == "\\":
            index += 2
            continue
        if ch == '"':
            quoted = not quoted
        elif ch == target and not quoted:
            return index
        index += 1
    return None


def _top_level_colon(text: str) -> int | None:
    colon = _top_level_index(text, ":")
    angle = _top_level_index(text, "<")
    if colon is None or (angle is not None and angle < colon):
        return None
    return colon


def parse_address_list(raw: bytes | str | None) -> list[Address]:
    """Parse an address header (From/To/Cc...) into :class:`Address` entries.

    Display names are unquoted and RFC 2047-decoded (also when the encoded-words sit
    inside quotes, which is common). Groups are flattened, empty groups such as
    ``undisclosed-recipients:;`` yield nothing, a bare phrase becomes a name without an
    email, ``a@b (Name)`` uses the comment as the name.
    """
    try:
        text = _to_str(raw)
    except Exception:
        return []
    return list(_parse_address_text(text)) if text else []


# The same senders and recipients recur on every page of a mailbox: parse each header text once.
@functools.lru_cache(maxsize=4096)
def _parse_address_text(text: str) -> tuple[Address, ...]:
    try:
        text = _unfold(text).translate(_HEADER_CONTROL)
        return tuple(a for a in map(_parse_mailbox, _split_top_level(text)) if a is not None)
    except Exception:
        return ()


def parse_date(raw: str | bytes | None) -> datetime | None:
    """Parse an RFC 5322 (or ISO 8601) date into an aware UTC datetime, else None.

    Dates without a usable zone (including ``-0000``) are taken as UTC.
    """
    try:
        text = _to_str(raw)
        if not text:
            return None
        text = _unfold(text).translate(_HEADER_CONTROL).strip()
        if not text:
            return None
        parsed = _try_parse_date(text)
        if parsed is not None:
            return parsed
        # Only then without comments ("(CET)"): most dates parse as they are, and this costs.
        stripped, _ = _strip_comments(text)
        stripped = " ".join(stripped.split())
        return _try_parse_date(stripped) if stripped != text else None
    except Exception:
        return None


def _try_parse_date(text: str) -> datetime | None:
    parsed: datetime | None = None
    try:
        parsed = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            return None
    if parsed is None:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except (OverflowError, ValueError):
        return None


# --------------------------------------------------------------------------------------
# Content-Type style parameters (RFC 2045 / RFC 2231)
# --------------------------------------------------------------------------------------


def _decode_params(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Lower-case names; RFC 2231 continuations/charsets joined and decoded.

    An extended ``name*`` value wins over a plain ``name`` (RFC 2231 §4); RFC 2047
    encoded-words inside values (not allowed, but common in filenames) are decoded too.
    """
    simple: dict[str, str] = {}
    extended: dict[str, list[tuple[int, bool, str]]] = {}
    for raw_name, value in pairs:
        name = raw_name.strip().lower()
        if not name:
            continue
        base, star, rest = name.partition("*")
        if star and base:
            encoded = rest == "" or rest.endswith("*")
            digits = rest.rstrip("*")
            if digits == "" or digits.isdigit():
                extended.setdefault(base, []).append((int(digits or 0), encoded, value))
                continue
        simple.setdefault(name, value)

    result = {name: _param_value(name, value) for name, value in simple.items()}
    for name, sections in extended.items():
        sections.sort(key=lambda item: item[0])
        charset = "utf-8"
        chunks: list[bytes] = []
        for index, (number, encoded, text) in enumerate(sections):
            if encoded:
                if index == 0 and number == 0 and text.count("'") >= 2:
                    label, _language, text = text.split("'", 2)
                    charset = label or charset
                chunks.append(unquote_to_bytes(text))
            else:
                chunks.append(text.encode("utf-8", "replace"))
        decoded = _param_value(name, decode_bytes(b"".join(chunks), charset))
        if decoded or name not in result:
            result[name] = decoded
    return result


def _param_value(name: str, value: str) -> str:
    if name in ("name", "filename"):
        return decode_header_value(value)
    return _clean_header(_unfold(value))


def _split_header_params(value: str) -> tuple[str, list[tuple[str, str]]]:
    """Split ``type/subtype; a=b; c="d;e"`` into the main value and raw parameter pairs."""
    items = value.split(";") if '"' not in value else _split_quoted(value)
    main = items[0].strip()
    pairs: list[tuple[str, str]] = []
    for item in items[1:]:
        name, sep, param_value = item.partition("=")
        if sep and name.strip():
            pairs.append((name.strip(), param_value.strip()))
    return main, pairs


def _split_quoted(value: str) -> list[str]:
    """``value`` split on the semicolons outside double quotes, the quotes removed, ``\\x`` read as x."""
    items: list[str] = []
    current: list[str] = []
    quoted = False
    index = 0
    while index < len(value):
        ch = value[index]
        if quoted and ch == "\\" and index + 1 < len(value):
            current.append(value[index + 1])
            index += 2
            continue
        if ch == '"':
            quoted = not quoted
        elif ch == ";" and not quoted:
            items.append("".join(current))
            current = []
        else:
            current.append(ch)
        index += 1
    items.append("".join(current))
    return items


# --------------------------------------------------------------------------------------
# Parts, BODYSTRUCTURE
# --------------------------------------------------------------------------------------

_BODY_TYPES = frozenset({"text/plain", "text/html"})
_MESSAGE_TYPES = frozenset({"message/rfc822", "message/global"})
_MAX_DEPTH = 64


def _clean_filename(value: str | None) -> str | None:
    if not value:
        return None
    name = value.translate(BIDI_CONTROLS).replace("\\", "/").rsplit("/", 1)[-1].strip()
    return name if name not in ("", ".", "..") else None


def _make_part(
    section: str,
    content_type: str,
    params: dict[str, str],
    encoding: str,
    size: int,
    disposition: str | None,
    disposition_params: dict[str, str],
    content_id: str | None,
) -> Part:
    # Values straight from BODYSTRUCTURE have not been through decode_header_value.
    content_type = "".join(_clean_header(content_type).split()) or "application/octet-stream"
    cid = _clean_header(content_id or "").strip("<>").strip() or None
    filename = _clean_filename(disposition_params.get("filename") or params.get("name"))
    if disposition is not None and disposition not in ("inline", "attachment"):
        disposition = "attachment"
    if content_type in _MESSAGE_TYPES:
        filename = filename or "message.eml"
        disposition = disposition or "attachment"
    elif disposition is None and content_type not in _BODY_TYPES:
        disposition = "inline" if cid else "attachment"
    charset = (params.get("charset") or "").strip().strip("\"'").lower() or None
    return Part(
        section=section,
        content_type=content_type,
        params=params,
        encoding=(encoding or "7bit").strip().lower() or "7bit",
        size_bytes=max(size, 0),
        disposition=disposition,
        filename=filename,
        content_id=cid,
        charset=charset,
    )


def _atom(node: Any, index: int) -> Any:
    try:
        return node[index]
    except (IndexError, TypeError, KeyError):
        return None


def _atom_int(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = _to_str(value)
    return int(text) if text and text.strip().isdigit() else 0


def _atom_pairs(value: Any) -> list[tuple[str, str]]:
    if not isinstance(value, tuple | list):
        return []
    pairs: list[tuple[str, str]] = []
    for index in range(0, len(value) - 1, 2):
        name = _to_str(value[index])
        if name:
            pairs.append((name, _to_str(value[index + 1]) or ""))
    return pairs


def _is_disposition(value: Any) -> bool:
    return (
        isinstance(value, tuple | list)
        and len(value) == 2
        and isinstance(value[0], bytes | str)
        and (value[1] is None or isinstance(value[1], tuple | list))
    )


def _split_multipart(node: Any) -> tuple[list[Any], list[Any]] | None:
    """(children, rest) for a multipart node (BodyData or raw tuple), else None."""
    if not isinstance(node, tuple | list) or not node:
        return None
    first = node[0]
    if isinstance(first, list):
        return list(first), list(node[1:])
    if isinstance(first, tuple):
        index = 0
        while index < len(node) and isinstance(node[index], tuple | list):
            index += 1
        return list(node[:index]), list(node[index:])
    return None


def _leaf_from_bodystructure(node: Any, section: str) -> Part | None:
    if not isinstance(node, tuple | list) or len(node) < 2:
        return None
    main = _to_str(node[0])
    sub = _to_str(node[1])
    if not isinstance(node[0], bytes | str | None) or not isinstance(node[1], bytes | str | None):
        return None
    if main is None and sub is None:
        return None
    content_type = f"{(main or 'application').strip().lower()}/{(sub or 'octet-stream').strip().lower()}"
    if content_type.startswith("multipart/"):
        return None
    params = _decode_params(_atom_pairs(_atom(node, 2)))
    content_id = _to_str(_atom(node, 3))
    encoding = _to_str(_atom(node, 5)) or "7bit"
    size = _atom_int(_atom(node, 6))

    skip: set[int] = set()
    if content_type.startswith("text/"):
        extension = 8
    elif (
        content_type in _MESSAGE_TYPES
        and isinstance(_atom(node, 7), tuple | list)
        and isinstance(_atom(node, 8), tuple | list)
    ):
        extension, skip = 10, {7, 8}
    else:
        extension = 7
    disposition_atom = _atom(node, extension + 1)
    if not _is_disposition(disposition_atom):
        # Servers differ on optional fields; look for anything disposition-shaped.
        disposition_atom = next(
            (
                item
                for index, item in enumerate(node)
                if index >= 7 and index not in skip and _is_disposition(item)
            ),
            None,
        )
    disposition: str | None = None
    disposition_params: dict[str, str] = {}
    if disposition_atom is not None:
        disposition = (_to_str(disposition_atom[0]) or "").strip().lower() or None
        disposition_params = _decode_params(_atom_pairs(disposition_atom[1]))
    return _make_part(
        section, content_type, params, encoding, size, disposition, disposition_params, content_id
    )


def _walk_bodystructure(node: Any, prefix: str, depth: int, out: list[Part]) -> None:
    split = _split_multipart(node)
    if split is None:
        part = _leaf_from_bodystructure(node, prefix or "1")
        if part is not None:
            out.append(part)
        return
    if depth >= _MAX_DEPTH:
        return
    for number, child in enumerate(split[0], start=1):
        section = f"{prefix}.{number}" if prefix else str(number)
        if _split_multipart(child) is not None:
            _walk_bodystructure(child, section, depth + 1, out)
        else:
            part = _leaf_from_bodystructure(child, section)
            if part is not None:
                out.append(part)


def parse_bodystructure(bs: Any) -> list[Part]:
    """Return the leaf parts of an imapclient BODYSTRUCTURE with IMAP section numbers.

    Accepts ``imapclient.response_types.BodyData`` or equivalent raw tuples. Malformed
    leaves are skipped (their section numbers stay reserved). Raises ``ValueError`` when
    nothing usable is found; the caller should then fall back to
    :func:`parse_full_message`.
    """
    if not isinstance(bs, tuple | list) or not bs:
        raise ValueError("BODYSTRUCTURE is not a non-empty sequence")
    parts: list[Part] = []
    try:
        _walk_bodystructure(bs, "", 0, parts)
    except (RecursionError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"unusable BODYSTRUCTURE: {exc}") from exc
    if not parts:
        raise ValueError("BODYSTRUCTURE has no usable parts")
    return parts


def top_level_boundary(bs: Any) -> str | None:
    """The boundary parameter of a top-level multipart BODYSTRUCTURE, else None.

    Pass it to :func:`snippet_from_prefix` when the Content-Type header was not fetched.
    """
    try:
        split = _split_multipart(bs)
        if split is None or not split[1]:
            return None
        params = _decode_params(_atom_pairs(_atom(split[1], 1)))
        return params.get("boundary") or None
    except Exception:
        return None


def _valid_media_type(value: str) -> bool:
    return value.count("/") == 1 and all(value.split("/")) and not any(ch.isspace() for ch in value)


def _childless_multipart(node: Any, depth: int) -> bool:
    """Whether ``node`` is, or contains, a multipart without any part."""
    split = _split_multipart(node)
    if split is None:
        # Leaf-shaped, yet a multipart: ("multipart" "mixed" ...) or, with the parts missing,
        # the multipart's own fields ("mixed" ("boundary" "x") ...).
        return (
            isinstance(node, tuple | list)
            and len(node) >= 2
            and isinstance(node[0], bytes | str)
            and ((_to_str(node[0]) or "").strip().lower() == "multipart" or isinstance(node[1], tuple | list))
        )
    if not split[0]:
        return True
    return depth < _MAX_DEPTH and any(_childless_multipart(child, depth + 1) for child in split[0])


def structure_mismatch(bs: Any, content_type: str | None) -> str | None:
    """Why the server's BODYSTRUCTURE must not be trusted for this message, else None.

    Some servers describe every message without a ``MIME-Version`` header as text/plain,
    whatever its Content-Type says (Courier), or return a multipart with no parts. Reading
    along such a structure shows an HTML body as raw markup (skipping the hidden-text
    defence) and loses attachments, so the caller should parse the message itself.
    ``content_type`` is the message's top-level Content-Type header (None if absent).
    """
    try:
        if _childless_multipart(bs, 0):
            return "it lists a multipart without parts"
        if _split_multipart(bs) is not None:
            return None  # a multipart with parts: nothing to doubt (tested before parsing the header)
        header_type, pairs = _split_header_params(_unfold(content_type or ""))
        header_type = header_type.lower()
        if not _valid_media_type(header_type):
            return None
        leaf = _leaf_from_bodystructure(bs, "1")
        server_type = leaf.content_type if leaf is not None else "an unknown type"
        if header_type.startswith("multipart/"):
            # Without a boundary the header's multipart cannot be split: servers and
            # parse_full_message alike read it as text/plain.
            if not _decode_params(pairs).get("boundary"):
                return None
        elif server_type != "text/plain" or header_type == "text/plain":
            return None
        return f"it says {server_type} where the Content-Type header says {header_type}"
    except Exception:
        return None


def _is_attachment(part: Part) -> bool:
    if part.disposition == "attachment" or part.filename is not None:
        return True
    return part.disposition == "inline" and part.content_type not in _BODY_TYPES


def _is_body_candidate(part: Part) -> bool:
    return part.content_type in _BODY_TYPES and part.disposition != "attachment" and part.filename is None


def choose_body_parts(parts: list[Part]) -> tuple[Part | None, Part | None]:
    """(first text/plain, first text/html) that are body text rather than attachments."""
    plain = next((p for p in parts if _is_body_candidate(p) and p.content_type == "text/plain"), None)
    html = next((p for p in parts if _is_body_candidate(p) and p.content_type == "text/html"), None)
    return plain, html


def attachment_parts(parts: list[Part]) -> list[Part]:
    """Parts shown as attachments: disposition attachment, a filename, or inline resources
    such as Content-ID images (``disposition == "inline"`` on a non-body type)."""
    return [part for part in parts if _is_attachment(part)]


def has_attachments(parts: list[Part]) -> bool:
    """Whether :func:`attachment_parts` would return anything."""
    return any(_is_attachment(part) for part in parts)


# --------------------------------------------------------------------------------------
# Snippets and text helpers
# --------------------------------------------------------------------------------------


def _payload_bytes(message: Message) -> bytes:
    """The still transfer-encoded payload bytes of a leaf as they were in the input."""
    # get_payload() re-decodes 8-bit payloads with the declared charset and errors
    # replaced, losing the original bytes; the stored payload keeps them surrogate-escaped.
    payload = getattr(message, "_payload", None)
    if payload is None:
        payload = message.get_payload()
    if isinstance(payload, str):
        try:
            return payload.encode("ascii", "surrogateescape")
        except UnicodeEncodeError:
            return payload.encode("utf-8", "surrogateescape")
    if isinstance(payload, bytes):
        return payload
    if isinstance(payload, list):
        try:
            return b"".join(
                item.as_bytes(policy=email.policy.compat32) for item in payload if isinstance(item, Message)
            )
        except Exception:
            return b""
    return b""


def _header(message: Message, name: str) -> str:
    """First raw value of a header, unfolded (``get()`` would hide 8-bit values in compat32)."""
    wanted = name.lower()
    for key, value in message.raw_items():
        if key.lower() == wanted:
            return _unfold(_to_str(value) or "")
    return ""


def _part_from_message(message: Message, section: str, default_type: str) -> Part:
    main, pairs = _split_header_params(_header(message, "Content-Type"))
    main = main.lower()
    if main.count("/") != 1 or not all(main.split("/")) or any(ch.isspace() for ch in main):
        main = default_type
    if main.startswith("multipart/"):
        # A multipart without a usable boundary is rendered as text, like servers do.
        main = "text/plain"
    disposition_main, disposition_pairs = _split_header_params(_header(message, "Content-Disposition"))
    return _make_part(
        section=section,
        content_type=main,
        params=_decode_params(pairs),
        encoding=decode_header_value(_header(message, "Content-Transfer-Encoding")) or "7bit",
        size=len(_payload_bytes(message)),
        disposition=disposition_main.strip().lower() or None,
        disposition_params=_decode_params(disposition_pairs),
        content_id=decode_header_value(_header(message, "Content-ID")) or None,
    )


def _walk_message(message: Message) -> list[tuple[Part, Message]]:
    """Leaves of a parsed message with IMAP section numbers (message/* not descended)."""
    out: list[tuple[Part, Message]] = []

    def visit(node: Message, section: str, default_type: str, depth: int) -> None:
        payload = node.get_payload()
        if node.get_content_maintype() == "multipart" and isinstance(payload, list) and depth < _MAX_DEPTH:
            child_default = "message/rfc822" if node.get_content_subtype() == "digest" else "text/plain"
            for number, child in enumerate(payload, start=1):
                if isinstance(child, Message):
                    visit(child, f"{section}.{number}" if section else str(number), child_default, depth + 1)
            return
        out.append((_part_from_message(node, section or "1", default_type), node))

    visit(message, "", "text/plain", 0)
    return out


def _decode_part_text(data: bytes, part: Part, *, final: bool = True) -> str:
    return strip_controls(decode_bytes(decode_transfer(data, part.encoding), part.charset, final=final))


def _readable(data: bytes, part: Part) -> str | None:
    """Snippet text from the (possibly cut) encoded bytes of one part."""
    if not part.content_type.startswith("text/"):
        return None
    text = _decode_part_text(data, part, final=False)
    if part.content_type == "text/html":
        text = html_to_text(text)
    # Spend the snippet on what the sender wrote, not on the quoted thread and the signature; a snippet
    # is at most 500 characters, so twice that much new text is plenty to read.
    return collapse_whitespace(new_text(text, enough=1000).text[:2000]) or None


def snippet_from_prefix(
    prefix: bytes,
    parts: list[Part],
    *,
    header_content_type: str | None = None,
    boundary: str | None = None,
    header_encoding: str | None = None,
) -> str | None:
    """Readable start of a body from the first bytes of ``BODY.PEEK[TEXT]``.

    ``parts`` are the leaves from :func:`parse_bodystructure` (may be empty if unknown).
    For a multipart message the boundary is taken from ``boundary`` (see
    :func:`top_level_boundary`), else from ``header_content_type`` (the raw top-level
    Content-Type header), else sniffed from the first ``--`` line of the prefix. Without
    ``parts``, a single-part body is decoded as ``header_content_type`` says, with the
    top-level Content-Transfer-Encoding ``header_encoding``.
    text/plain is preferred over text/html (converted to text). Whitespace is collapsed;
    the result is not truncated (see :func:`truncate`). None if nothing readable fits.
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
) -> str | None:
    if not prefix.strip():
        return None
    header_type, header_pairs = _split_header_params(_unfold(_to_str(header_content_type) or ""))
    header_type = header_type.lower()
    header_params = _decode_params(header_pairs)
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
            ctype = header_type if _valid_media_type(header_type) else "text/plain"
            encoding = decode_header_value(header_encoding) or "7bit"
            part = _make_part("1", ctype, header_params, encoding, len(prefix), None, {}, None)
        return _readable(prefix, part)

    boundary = (
        (boundary or _sniff_boundary(prefix) or "").replace('"', "").replace("\r", "").replace("\n", "")
    )
    if not boundary:
        return None
    fast = _first_leaf_text(prefix, parts, boundary)
    if fast:
        return fast
    subtype = header_type.split("/", 1)[1] if header_type.startswith("multipart/") else "mixed"
    synthetic = f'Content-Type: multipart/{subtype}; boundary="{boundary}"\r\n\r\n'.encode()
    message = email.message_from_bytes(synthetic + prefix, policy=email.policy.compat32)
    if not isinstance(message.get_payload(), list):
        return None  # no complete boundary line yet
    leaves = _walk_message(message)
    if leaves and any(isinstance(d, MissingHeaderBodySeparatorDefect) for d in leaves[-1][1].defects):
        # The prefix ends inside this part's header block: its "body" is header text.
        leaves.pop()
    by_section = {part.section: node for part, node in leaves}

    # Prefer the server's view of the parts (it saw the whole message), then the prefix.
    plain, html = choose_body_parts(parts)
    for chosen in (plain, html):
        if chosen is not None and chosen.section in by_section:
            text = _readable(_payload_bytes(by_section[chosen.section]), chosen)
            if text:
                return text
    for kind in ("text/plain", "text/html"):
        for part, node in leaves:
            if part.content_type == kind and _is_body_candidate(part):
                text = _readable(_payload_bytes(node), part)
                if text:
                    return text
    return None


_BLANK_LINE = re.compile(rb"\r?\n\r?\n")


def _first_leaf_text(prefix: bytes, parts: list[Part], boundary: str) -> str | None:
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
        content_type = parse_header_block(prefix[end : blank.end()].lstrip(b"\r\n")).get(
            "content-type", [""]
        )[0]
        position = blank.end()
        # A nested multipart names the delimiter of the next level.
        ctype, params = _split_header_params(content_type)
        if ctype.strip().lower().startswith("multipart/"):
            boundary = _decode_params(params).get("boundary", "")
            if not boundary:
                return None
    # The part ends at the next delimiter of its level (or where the prefix was cut).
    content = prefix[position:]
    cut = content.find(b"\n--" + boundary.encode("utf-8", "surrogateescape"))
    # The CRLF before a delimiter belongs to the delimiter (RFC 2046).
    return _readable(content if cut < 0 else content[:cut].removesuffix(b"\r"), chosen)


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
            return _bytes_to_str(line[2:])
    return None


# --------------------------------------------------------------------------------------
# Whole-message fallback
# --------------------------------------------------------------------------------------


def parse_full_message(raw: bytes) -> ParsedMessage:
    """Parse a complete RFC 5322 message (fallback when BODYSTRUCTURE is unusable).

    Headers as in :func:`parse_header_block`; bodies chosen with
    :func:`choose_body_parts` and decoded; attachments with IMAP-compatible sections so
    the caller can still fetch ``BODY[section]``.
    """
    data = bytes(raw or b"")
    headers = parse_header_block(data)
    try:
        message = email.message_from_bytes(data, policy=email.policy.compat32)
        leaves = _walk_message(message)
    except Exception:
        return ParsedMessage(headers=headers, text=_fallback_text(data), html=None, attachments=[])
    parts = [part for part, _ in leaves]
    nodes = {part.section: node for part, node in leaves}
    plain, html = choose_body_parts(parts)
    text = _decode_part_text(_payload_bytes(nodes[plain.section]), plain) if plain else None
    html_text = _decode_part_text(_payload_bytes(nodes[html.section]), html) if html else None
    return ParsedMessage(headers=headers, text=text, html=html_text, attachments=attachment_parts(parts))


def message_leaves(raw: bytes) -> list[tuple[Part, bytes]]:
    """The leaves of a whole (possibly cut) message with IMAP section numbers, each with its still
    transfer-encoded payload: the attachments of a message whose BODYSTRUCTURE cannot be trusted."""
    try:
        message = email.message_from_bytes(bytes(raw or b""), policy=email.policy.compat32)
        return [(part, _payload_bytes(node)) for part, node in _walk_message(message)]
    except Exception:
        return []


def _fallback_text(data: bytes) -> str | None:
    for separator in (b"\r\n\r\n", b"\n\n"):
        _, found, body = data.partition(separator)
        if found:
            return decode_text(body, None) or None
    return None

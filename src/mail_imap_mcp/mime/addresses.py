"""Address headers (From, To, Cc...): parsed into :class:`Address` entries and formatted back."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from .header_text import decode_header_value, drop_controls, strip_comments, to_str, unfold
from .kept import kept_when_short

__all__ = ["Address", "format_address", "format_address_quoted", "parse_address_list"]


@dataclass(frozen=True, slots=True)
class Address:
    """One mailbox from an address header; either field may be missing in broken mail."""

    name: str | None
    email: str | None


def format_address(a: Address) -> str:
    """``"Name <email>"``, or just the email (or name) when the other part is missing."""
    if a.name and a.email:
        return f"{a.name} <{a.email}>"
    return a.email or a.name or ""


#: The RFC 5322 specials: a display name holding one is quoted.
_SPECIALS = re.compile(r'[()<>\[\]:;@\\,."]')


def format_address_quoted(a: Address) -> str:
    name = a.name
    if name and _SPECIALS.search(name):
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
    text, comment = strip_comments(chunk)
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
        text = to_str(raw)
    except Exception:
        return []
    return list(_parse_address_text(text)) if text else []


#: Address header texts up to this size are kept parsed (the same senders and recipients recur on every
#: page of a mailbox): at most 4,096 of them, a few MB at worst; a longer one (a list of 5,000 Cc) is
#: parsed each time rather than held.
_KEPT_TEXT_CHARS = 1024


@kept_when_short(maxsize=4096, max_chars=_KEPT_TEXT_CHARS)
def _parse_address_text(text: str) -> tuple[Address, ...]:
    try:
        text = drop_controls(unfold(text))
        return tuple(a for a in map(_parse_mailbox, _split_top_level(text)) if a is not None)
    except Exception:
        return ()

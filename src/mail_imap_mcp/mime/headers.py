"""A header block (``BODY.PEEK[HEADER]`` or the top of a whole message) parsed into decoded values."""

from __future__ import annotations

import re

from .addresses import format_address_quoted, parse_address_list
from .header_text import decode_header_value
from .kept import kept_when_short

__all__ = ["parse_header_block"]


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
    headers (From, To, Cc, ...) are re-serialised from :func:`~.addresses.parse_address_list` with
    display names quoted where needed, so feeding a value back to
    ``parse_address_list`` is safe even when a decoded name contains a comma.
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
        raw_value = lines[0] if len(lines) == 1 else b"\r\n".join(lines)
        if field_name in _ADDRESS_HEADERS:
            decoded = _address_value(raw_value)
        else:
            decoded = decode_header_value(raw_value)
        headers.setdefault(field_name, []).append(decoded)
    return headers


#: Address header values up to this size are kept with their decoded text (senders and recipients recur
#: from message to message): at most 2,048 of them, a few MB at worst.
_KEPT_ADDRESS_BYTES = 1024


@kept_when_short(maxsize=2048, max_chars=_KEPT_ADDRESS_BYTES)
def _address_value(raw_value: bytes) -> str:
    """An address header's value, its addresses re-serialised (names quoted where needed), or the value
    decoded as text when no address is found in it."""
    decoded = ", ".join(format_address_quoted(a) for a in parse_address_list(raw_value))
    return decoded or decode_header_value(raw_value)

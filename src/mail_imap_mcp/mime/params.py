"""Content-Type style parameters (RFC 2045, RFC 2231 continuations and charsets) and media types."""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote_to_bytes

from ..content.charsets import decode_bytes
from .header_text import clean_header, decode_header_value, unfold

__all__ = ["decode_params", "split_header_params", "split_quoted", "valid_media_type"]


def decode_params(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
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
            if digits == "" or (
                digits.isascii() and digits.isdigit() and len(digits) < 10
            ):  # int() refuses "²"
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
    return clean_header(unfold(value))


def split_header_params(value: str) -> tuple[str, list[tuple[str, str]]]:
    """Split ``type/subtype; a=b; c="d;e"`` into the main value and raw parameter pairs."""
    items = value.split(";") if '"' not in value else split_quoted(value)
    main = items[0].strip()
    pairs: list[tuple[str, str]] = []
    for item in items[1:]:
        name, sep, param_value = item.partition("=")
        if sep and name.strip():
            pairs.append((name.strip(), param_value.strip()))
    return main, pairs


#: What split_quoted acts on; the text between two of them is kept as it is.
_QUOTING = re.compile(r'["\\;]')


def split_quoted(value: str) -> list[str]:
    """``value`` split on the semicolons outside double quotes, the quotes removed, ``\\x`` read as x
    (within quotes)."""
    items: list[str] = []
    current: list[str] = []
    quoted = False
    kept_from = 0  # the text from here to the next mark is kept as it is
    search_from = 0
    size = len(value)
    while (mark := _QUOTING.search(value, search_from)) is not None:
        index = mark.start()
        ch = value[index]
        if ch == "\\":
            if quoted and index + 1 < size:
                current.append(value[kept_from:index])
                current.append(value[index + 1])
                kept_from = search_from = index + 2
            else:
                search_from = index + 1  # a backslash outside quotes, or the last character: kept
            continue
        current.append(value[kept_from:index])
        if ch == '"':
            quoted = not quoted
        elif quoted:
            current.append(ch)
        else:
            items.append("".join(current))
            current = []
        kept_from = search_from = index + 1
    current.append(value[kept_from:])
    items.append("".join(current))
    return items


def valid_media_type(value: str) -> bool:
    return value.count("/") == 1 and all(value.split("/")) and not any(ch.isspace() for ch in value)

"""Content-Type style parameters (RFC 2045, RFC 2231 continuations and charsets) and media types."""

from __future__ import annotations

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


def split_quoted(value: str) -> list[str]:
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


def valid_media_type(value: str) -> bool:
    return value.count("/") == 1 and all(value.split("/")) and not any(ch.isspace() for ch in value)

"""BODYSTRUCTURE (RFC 3501 §7.4.2) read into the leaf :class:`~mail_imap_mcp.mime.parts.Part` list, and
whether the server's structure can be trusted at all.

Accepts ``imapclient.response_types.BodyData`` or equivalent raw tuples. Servers differ on optional
fields and some describe messages wrongly; anything unusable raises ``ValueError`` so the caller falls
back to parsing the whole message (:func:`mail_imap_mcp.mime.parse_full_message`).
"""

from __future__ import annotations

import functools
from typing import Any

from mail_imap_mcp.mime.header_text import to_str, unfold
from mail_imap_mcp.mime.params import decode_params, split_header_params, valid_media_type
from mail_imap_mcp.mime.parts import MAX_DEPTH, MESSAGE_TYPES, Part, make_part

__all__ = ["parse_bodystructure", "structure_mismatch", "top_level_boundary"]


# Type tuples for isinstance: a union such as ``tuple | list`` written in a call is built anew at each
# call, which the walk of every structure of a page pays thousands of times.
_SEQUENCE = (tuple, list)
_TEXT = (bytes, str)
_TEXT_OR_NONE = (bytes, str, type(None))


def _atom(node: Any, index: int) -> Any:
    try:
        return node[index]
    except (IndexError, TypeError, KeyError):
        return None


def _atom_int(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = to_str(value)
    return int(text) if text and text.strip().isdigit() else 0


def _atom_pairs(value: Any) -> list[tuple[str, str]]:
    if not isinstance(value, _SEQUENCE):
        return []
    pairs: list[tuple[str, str]] = []
    for index in range(0, len(value) - 1, 2):
        name = to_str(value[index])
        if name:
            pairs.append((name, to_str(value[index + 1]) or ""))
    return pairs


def _is_disposition(value: Any) -> bool:
    return (
        isinstance(value, _SEQUENCE)
        and len(value) == 2
        and isinstance(value[0], _TEXT)
        and (value[1] is None or isinstance(value[1], _SEQUENCE))
    )


def _split_multipart(node: Any) -> tuple[list[Any], list[Any]] | None:
    """(children, rest) for a multipart node (BodyData or raw tuple), else None."""
    if not isinstance(node, _SEQUENCE) or not node:
        return None
    first = node[0]
    if isinstance(first, list):
        return list(first), list(node[1:])
    if isinstance(first, tuple):
        index = 0
        while index < len(node) and isinstance(node[index], _SEQUENCE):
            index += 1
        return list(node[:index]), list(node[index:])
    return None


def _leaf_from_bodystructure(node: Any, section: str) -> Part | None:
    """The part a leaf ``node`` describes (None when it describes none)."""
    fields = _recurring_fields(node)
    if fields is None:
        return _read_leaf(node, section)
    kept = _kept_leaf(fields, section)
    if kept is None:
        return None
    return Part(
        kept.section,
        kept.content_type,
        kept.params,
        kept.encoding,
        max(_atom_int(node[6]), 0),
        kept.disposition,
        kept.filename,
        kept.content_id,
        kept.charset,
    )


#: A leaf whose fields (but its size and line count) are all NIL, numbers or strings up to this size, its
#: parameters at most _KEPT_PARAMS of them, is read once and kept (a text part of the same type, charset
#: and encoding recurs from message to message): at most 1,024 leaves of a few KB.
_KEPT_FIELD_BYTES = 64
_KEPT_PARAMS = 6


def _recurring_fields(node: Any) -> tuple[Any, ...] | None:
    """The leaf's fields with its size (field 6) and a number in field 7 (a text part's line count) made
    0, when they are small and plain enough to be kept (see _KEPT_FIELD_BYTES), else None. Neither field
    says anything else: the size is read from the node, and a number is no disposition."""
    if not isinstance(node, tuple) or not 7 <= len(node) <= 12:
        return None
    params = node[2]
    if params is not None and not (
        type(params) is tuple and len(params) <= 2 * _KEPT_PARAMS and all(map(_short_atom, params))
    ):
        return None
    rest = node[7:]
    if rest and type(rest[0]) is int:
        rest = (0, *rest[1:])
    fields = (*node[:2], params, *node[3:6], 0, *rest)
    if not all(_short_atom(field) for index, field in enumerate(fields) if index != 2):
        return None
    return fields


def _short_atom(value: Any) -> bool:
    # Exact types: a bool equals an int as a key, and must not stand for it.
    if type(value) is bytes:
        return len(value) <= _KEPT_FIELD_BYTES
    return value is None or (type(value) is int and value.bit_length() <= 64)


@functools.lru_cache(maxsize=1024)
def _kept_leaf(fields: tuple[Any, ...], section: str) -> Part | None:
    return _read_leaf(fields, section)


def _read_leaf(node: Any, section: str) -> Part | None:
    if not isinstance(node, _SEQUENCE) or len(node) < 2:
        return None
    main = to_str(node[0])
    sub = to_str(node[1])
    if not isinstance(node[0], _TEXT_OR_NONE) or not isinstance(node[1], _TEXT_OR_NONE):
        return None
    if main is None and sub is None:
        return None
    content_type = f"{(main or 'application').strip().lower()}/{(sub or 'octet-stream').strip().lower()}"
    if content_type.startswith("multipart/"):
        return None
    params = decode_params(_atom_pairs(_atom(node, 2)))
    content_id = to_str(_atom(node, 3))
    encoding = to_str(_atom(node, 5)) or "7bit"
    size = _atom_int(_atom(node, 6))

    skip: set[int] = set()
    if content_type.startswith("text/"):
        extension = 8
    elif (
        content_type in MESSAGE_TYPES
        and isinstance(_atom(node, 7), _SEQUENCE)
        and isinstance(_atom(node, 8), _SEQUENCE)
    ):
        extension, skip = 10, {7, 8}
    else:
        extension = 7
    disposition_atom = _atom(node, extension + 1)
    if not _is_disposition(disposition_atom):
        # Servers differ on optional fields; look for anything disposition-shaped.
        disposition_atom = next(
            (
                node[index]
                for index in range(7, len(node))
                if index not in skip and _is_disposition(node[index])
            ),
            None,
        )
    disposition: str | None = None
    disposition_params: dict[str, str] = {}
    if disposition_atom is not None:
        disposition = (to_str(disposition_atom[0]) or "").strip().lower() or None
        disposition_params = decode_params(_atom_pairs(disposition_atom[1]))
    return make_part(
        section, content_type, params, encoding, size, disposition, disposition_params, content_id
    )


def _walk_bodystructure(node: Any, prefix: str, depth: int, out: list[Part]) -> None:
    split = _split_multipart(node)
    if split is None:
        part = _leaf_from_bodystructure(node, prefix or "1")
        if part is not None:
            out.append(part)
        return
    if depth >= MAX_DEPTH:
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
    :func:`~mail_imap_mcp.mime.parse_full_message`.
    """
    if not isinstance(bs, _SEQUENCE) or not bs:
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

    Pass it to :func:`~mail_imap_mcp.mime.snippet_from_prefix` when the Content-Type header was not fetched.
    """
    try:
        split = _split_multipart(bs)
        if split is None or not split[1]:
            return None
        params = decode_params(_atom_pairs(_atom(split[1], 1)))
        return params.get("boundary") or None
    except Exception:
        return None


def _childless_multipart(node: Any, depth: int) -> bool:
    """Whether ``node`` is, or contains, a multipart without any part."""
    split = _split_multipart(node)
    if split is None:
        # Leaf-shaped, yet a multipart: ("multipart" "mixed" ...) or, with the parts missing,
        # the multipart's own fields ("mixed" ("boundary" "x") ...).
        return (
            isinstance(node, _SEQUENCE)
            and len(node) >= 2
            and isinstance(node[0], _TEXT)
            and ((to_str(node[0]) or "").strip().lower() == "multipart" or isinstance(node[1], _SEQUENCE))
        )
    if not split[0]:
        return True
    return depth < MAX_DEPTH and any(_childless_multipart(child, depth + 1) for child in split[0])


def structure_mismatch(bs: Any, content_type: str | None, parts: list[Part] | None = None) -> str | None:
    """Why the server's BODYSTRUCTURE must not be trusted for this message, else None.

    Some servers describe every message without a ``MIME-Version`` header as text/plain,
    whatever its Content-Type says (Courier), or return a multipart with no parts. Reading
    along such a structure shows an HTML body as raw markup (skipping the hidden-text
    defence) and loses attachments, so the caller should parse the message itself.
    ``content_type`` is the message's top-level Content-Type header (None if absent); ``parts``: what
    :func:`parse_bodystructure` returned for ``bs``, when already read (a single part's leaf is not read
    again).
    """
    try:
        if _childless_multipart(bs, 0):
            return "it lists a multipart without parts"
        if _split_multipart(bs) is not None:
            return None  # a multipart with parts: nothing to doubt (tested before parsing the header)
        header_type, pairs = split_header_params(unfold(content_type or ""))
        header_type = header_type.lower()
        if not valid_media_type(header_type):
            return None
        # A single part: parse_bodystructure read it as this very leaf (section 1).
        leaf = parts[0] if parts else _leaf_from_bodystructure(bs, "1")
        server_type = leaf.content_type if leaf is not None else "an unknown type"
        if header_type.startswith("multipart/"):
            # Without a boundary the header's multipart cannot be split: servers and
            # parse_full_message alike read it as text/plain.
            if not decode_params(pairs).get("boundary"):
                return None
        elif server_type != "text/plain" or header_type == "text/plain":
            return None
        return f"it says {server_type} where the Content-Type header says {header_type}"
    except Exception:
        return None

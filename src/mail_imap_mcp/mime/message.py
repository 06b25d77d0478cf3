"""Whole-message parsing, for when the server's structure is not to be trusted (or is unusable).

Leaves get IMAP-compatible section numbers, so ``BODY[section]`` can still be fetched for them.
"""

from __future__ import annotations

import email
import email.policy
from dataclasses import dataclass, field
from email.message import Message

from .header_text import decode_header_value, to_str, unfold
from .headers import parse_header_block
from .params import decode_params, split_header_params
from .parts import (
    MAX_DEPTH,
    Part,
    attachment_parts,
    choose_body_parts,
    decode_part_text,
    decode_text,
    make_part,
)

__all__ = ["ParsedMessage", "message_leaves", "parse_full_message", "payload_bytes", "walk_message"]


@dataclass(frozen=True, slots=True)
class ParsedMessage:
    """Result of :func:`parse_full_message`.

    ``text``/``html`` are the decoded bodies of the parts chosen by
    :func:`~.parts.choose_body_parts`; ``html`` is *not* sanitised.
    """

    headers: dict[str, list[str]] = field(hash=False)
    text: str | None
    html: str | None
    attachments: list[Part] = field(hash=False)


def payload_bytes(message: Message) -> bytes:
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
            return unfold(to_str(value) or "")
    return ""


def _part_from_message(message: Message, section: str, default_type: str) -> Part:
    main, pairs = split_header_params(_header(message, "Content-Type"))
    main = main.lower()
    if main.count("/") != 1 or not all(main.split("/")) or any(ch.isspace() for ch in main):
        main = default_type
    if main.startswith("multipart/"):
        # A multipart without a usable boundary is rendered as text, like servers do.
        main = "text/plain"
    disposition_main, disposition_pairs = split_header_params(_header(message, "Content-Disposition"))
    return make_part(
        section=section,
        content_type=main,
        params=decode_params(pairs),
        encoding=decode_header_value(_header(message, "Content-Transfer-Encoding")) or "7bit",
        size=len(payload_bytes(message)),
        disposition=disposition_main.strip().lower() or None,
        disposition_params=decode_params(disposition_pairs),
        content_id=decode_header_value(_header(message, "Content-ID")) or None,
    )


def walk_message(message: Message) -> list[tuple[Part, Message]]:
    """Leaves of a parsed message with IMAP section numbers (message/* not descended)."""
    out: list[tuple[Part, Message]] = []

    def visit(node: Message, section: str, default_type: str, depth: int) -> None:
        payload = node.get_payload()
        if node.get_content_maintype() == "multipart" and isinstance(payload, list) and depth < MAX_DEPTH:
            child_default = "message/rfc822" if node.get_content_subtype() == "digest" else "text/plain"
            for number, child in enumerate(payload, start=1):
                if isinstance(child, Message):
                    visit(child, f"{section}.{number}" if section else str(number), child_default, depth + 1)
            return
        out.append((_part_from_message(node, section or "1", default_type), node))

    visit(message, "", "text/plain", 0)
    return out


def parse_full_message(raw: bytes) -> ParsedMessage:
    """Parse a complete RFC 5322 message (fallback when BODYSTRUCTURE is unusable).

    Headers as in :func:`~.headers.parse_header_block`; bodies chosen with
    :func:`~.parts.choose_body_parts` and decoded; attachments with IMAP-compatible sections so
    the caller can still fetch ``BODY[section]``.
    """
    data = bytes(raw or b"")
    headers = parse_header_block(data)
    try:
        message = email.message_from_bytes(data, policy=email.policy.compat32)
        leaves = walk_message(message)
    except Exception:
        return ParsedMessage(headers=headers, text=_fallback_text(data), html=None, attachments=[])
    parts = [part for part, _ in leaves]
    nodes = {part.section: node for part, node in leaves}
    plain, html = choose_body_parts(parts)
    text = decode_part_text(payload_bytes(nodes[plain.section]), plain) if plain else None
    html_text = decode_part_text(payload_bytes(nodes[html.section]), html) if html else None
    return ParsedMessage(headers=headers, text=text, html=html_text, attachments=attachment_parts(parts))


def message_leaves(raw: bytes) -> list[tuple[Part, bytes]]:
    """The leaves of a whole (possibly cut) message with IMAP section numbers, each with its still
    transfer-encoded payload: the attachments of a message whose BODYSTRUCTURE cannot be trusted."""
    try:
        message = email.message_from_bytes(bytes(raw or b""), policy=email.policy.compat32)
        return [(part, payload_bytes(node)) for part, node in walk_message(message)]
    except Exception:
        return []


def _fallback_text(data: bytes) -> str | None:
    for separator in (b"\r\n\r\n", b"\n\n"):
        _, found, body = data.partition(separator)
        if found:
            return decode_text(body, None) or None
    return None

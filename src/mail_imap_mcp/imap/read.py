"""One message read by id: its headers, the text of its body parts and its attachment parts with
bounded fetches (:func:`read_message`), a window of its source (:func:`read_raw`), or its source whole
copied into a file a chunk at a time (:func:`copy_raw`). A page of many messages is :mod:`.fetch`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from mail_imap_mcp import mime
from mail_imap_mcp.imap.fetch import (
    MAX_HEADER_BYTES,
    MESSAGE_ITEMS,
    expunged,
    find_item,
    summary_record,
    trusted_structure,
)
from mail_imap_mcp.imap.parts import FETCH_CHUNK_BYTES
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.mail.errors import MessageGone
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.reading import Body, ReadOptions, message_record
from mail_imap_mcp.mail.records import MessageRecord


def read_message(
    session: ImapSession, ref: MessageRef, options: ReadOptions
) -> tuple[MessageRecord, list[str]]:
    """Headers, the text of the body parts and the attachment parts of one message, with bounded fetches.

    The body is rendered in ``options.body_format`` by the tools (:mod:`mail_imap_mcp.services.message_read`);
    the format decides here which text part is fetched."""
    warnings: list[str] = []
    response = session.fetch([ref.uid], MESSAGE_ITEMS).get(ref.uid)
    if response is None or expunged(response):
        raise MessageGone(ref)
    header_bytes = find_item(response, b"BODY[HEADER]") or b""
    if len(header_bytes) >= MAX_HEADER_BYTES:
        warnings.append(f"Header block larger than {MAX_HEADER_BYTES} bytes; only its start was read.")
    headers = mime.parse_header_block(header_bytes)
    parts, doubt = trusted_structure(response, headers)

    text: str | None = None
    html: str | None = None
    fetch_truncated = False
    if parts is not None:
        plain_part, html_part = mime.choose_body_parts(parts)
        wanted: list[mime.Part | None]
        if options.body_format == "text":
            wanted = [plain_part] if plain_part else [html_part]
            # A plain part that is empty or a stub still yields readable text from the HTML part.
            if plain_part and html_part and plain_part.size_bytes < 16:
                wanted.append(html_part)
        else:
            wanted = [html_part] if html_part else [plain_part]
        budget = _fetch_budget(options)
        sections = {p.section: p for p in wanted if p is not None}
        if sections:
            fetched = session.fetch(
                [ref.uid], [f"BODY.PEEK[{section}]<0.{budget}>" for section in sections]
            ).get(ref.uid, {})
            for section, part in sections.items():
                raw = find_item(fetched, f"BODY[{section}]".encode()) or b""
                if part.size_bytes > len(raw) and len(raw) >= budget:
                    fetch_truncated = True
                decoded = mime.decode_text(
                    mime.decode_transfer(raw, part.encoding), part.charset, partial=True
                )
                if part.content_type == "text/html":
                    html = decoded
                else:
                    text = decoded
        attachments = mime.attachment_parts(parts)
    else:
        problem = "BODYSTRUCTURE was unusable"
        if doubt:
            problem = f"The server's BODYSTRUCTURE contradicts the message ({doubt})"
        warnings.append(
            f"{problem}; parsed the first {options.max_text_part_bytes} bytes of the raw message instead."
        )
        raw_response = session.fetch([ref.uid], [f"BODY.PEEK[]<0.{options.max_text_part_bytes}>"]).get(
            ref.uid, {}
        )
        raw_message = find_item(raw_response, b"BODY[]") or b""
        fetch_truncated = int(response.get(b"RFC822.SIZE") or 0) > len(raw_message)
        parsed = mime.parse_full_message(raw_message)
        text, html, attachments = parsed.text, parsed.html, parsed.attachments

    summary = summary_record(ref, response, parts, snippet=None, headers=headers)
    body = Body(text, html, fetch_truncated, attachments)
    return message_record(summary, headers, body, options, warnings), warnings


def _fetch_budget(options: ReadOptions) -> int:
    # Encoded bytes per visible character: base64 (4/3) x UTF-8 (up to 4) x markup for HTML.
    return min(options.max_text_part_bytes, max(64 * 1024, options.body_max_chars * 16))


# -- raw window --------------------------------------------------------------------------------


@dataclass
class RawWindow:
    total_size_bytes: int
    data: bytes


def read_raw(session: ImapSession, ref: MessageRef, offset: int, max_bytes: int) -> RawWindow:
    """Bytes ``offset .. offset+max_bytes`` of the message source (a partial ``BODY.PEEK[]``)."""
    response = session.fetch([ref.uid], ["RFC822.SIZE", f"BODY.PEEK[]<{offset}.{max_bytes}>"]).get(ref.uid)
    if response is None:
        raise MessageGone(ref)
    if expunged(response):
        raise MessageGone(ref)
    data = find_item(response, b"BODY[]") or b""
    return RawWindow(total_size_bytes=int(response.get(b"RFC822.SIZE") or 0), data=bytes(data))


class Sink(Protocol):
    """Where :func:`copy_raw` writes: a binary file, or anything that takes bytes the same way."""

    def write(self, data: bytes, /) -> object: ...


def copy_raw(
    session: ImapSession,
    ref: MessageRef,
    sink: Sink,
    *,
    accept: Callable[[int], None],
    told: Callable[[int, int], None],
) -> int:
    """The message source, byte for byte, written to ``sink`` in partial fetches of
    ``FETCH_CHUNK_BYTES`` (one chunk in memory at a time); ``accept`` sees its size (RFC822.SIZE) with the
    first chunk and raises to refuse it before more is read, ``told`` the bytes written so far and that
    size. Returns the bytes written."""
    window = read_raw(session, ref, 0, FETCH_CHUNK_BYTES)
    total = window.total_size_bytes
    accept(total)
    written, chunk = 0, window.data
    while chunk:
        sink.write(chunk)
        written += len(chunk)
        told(written, total)
        if len(chunk) < FETCH_CHUNK_BYTES:
            break
        chunk = read_raw(session, ref, written, FETCH_CHUNK_BYTES).data
    return written

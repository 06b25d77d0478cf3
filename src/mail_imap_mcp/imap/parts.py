"""One MIME part of a message, by IMAP section number, fetched as a bounded stream.

The message's BODYSTRUCTURE says which part ``part_id`` is (type, transfer encoding, size, file name);
the part itself arrives in partial fetches of 1 MB (``BODY.PEEK[<section>]<offset.length>``: never
a flag change), each decoded as it comes (:class:`~mail_imap_mcp.mime.transfer.StreamDecoder`) and
written to the caller's sink, so a 30 MB attachment never sits in memory. The first command asks for
the structure and the first chunk together: a part that fits in one chunk costs one round trip.
"""

from __future__ import annotations

from typing import Any, BinaryIO

from mail_imap_mcp import mime
from mail_imap_mcp.imap.bodystructure import parse_bodystructure, structure_mismatch
from mail_imap_mcp.imap.errors import command_refused, server_said
from mail_imap_mcp.imap.fetch import find_item
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.part_errors import (
    NotAnAttachment,
    PartError,
    PartGone,
    PartNotFound,
    PartRefused,
    StructureUnusable,
)
from mail_imap_mcp.mail.parts import (
    HEAD_BYTES,
    PART_ID_PATTERN,
    Accept,
    PartRead,
    PartWindow,
    WindowWriter,
    locate,
    valid_part_id,
)
from mail_imap_mcp.mime.transfer import StreamDecoder, encoding_name

#: Encoded bytes per partial fetch. A chunk in flight costs several times its size in transient memory
#: (the literal as read, its parse, the decoding): 1 MB keeps a 30 MB attachment's read within ~8 MB
#: of RSS (docs/benchmarks.md), at one round trip per MB.
FETCH_CHUNK_BYTES = 1024 * 1024
# A part whose encoding wastes more than this factor (base64 full of junk) stops being read.
_MAX_ENCODED_PER_DECODED = 3


def _section_data(response: dict[bytes, Any], section: str) -> bytes:
    # The answer's key is "BODY[<section>]<origin>"; the bracket keeps "BODY[1]" from matching "BODY[1.2]".
    value = find_item(response, f"BODY[{section}]".encode())
    return bytes(value) if isinstance(value, bytes | bytearray) else b""


def _expunged(response: dict[bytes, Any] | None) -> bool:
    return response is None or (not response.get(b"BODYSTRUCTURE") and not response.get(b"RFC822.SIZE"))


def _structure(response: dict[bytes, Any]) -> list[mime.Part]:
    structure = response.get(b"BODYSTRUCTURE")
    try:
        parts: list[mime.Part] = parse_bodystructure(structure)
    except ValueError as exc:
        raise StructureUnusable(f"the server's BODYSTRUCTURE is unusable ({exc})") from None
    headers = mime.parse_header_block(find_item(response, b"BODY[HEADER") or b"")
    content_type = next(iter(headers.get("content-type", [])), None)
    doubt = structure_mismatch(structure, content_type)
    if doubt:
        raise StructureUnusable(f"the server's BODYSTRUCTURE contradicts the message ({doubt})")
    return parts


def _encoded_need(decoded: int) -> int:
    """Encoded bytes that hold ``decoded`` bytes at most (base64 is 4/3, plus line ends)."""
    return decoded * 14 // 10 + 4096


def read_part(
    session: ImapSession,
    ref: MessageRef,
    part_id: str,
    sink: BinaryIO,
    window: PartWindow,
) -> PartRead:
    """Decode attachment ``part_id`` of ``ref`` into ``sink``: the ``window``'s decoded bytes, from
    ``skip_bytes`` up to ``skip_bytes + max_bytes``, fetched in partial chunks; stops as soon as the
    window is full.

    ``accept(part, head)`` runs once the part and its first decoded bytes are known, before anything is
    written or more than the first chunk is fetched: it raises to refuse the part (e.g. for a size
    limit) or returns a smaller ``max_bytes`` (e.g. only what a text window needs), or None.
    When the server's BODYSTRUCTURE cannot be trusted, the first ``source_bytes`` of the message are
    parsed here instead, as ``imap_get_message`` does to list the attachments (0: raise instead). The mailbox must be selected. Raises :class:`PartGone`,
    :class:`PartNotFound`, :class:`NotAnAttachment`, :class:`StructureUnusable` or :class:`PartRefused`,
    naming ``ref``.
    """
    try:
        return _read_part(
            session,
            ref,
            part_id,
            sink,
            window.max_bytes,
            window.skip_bytes,
            window.accept,
            window.source_bytes,
        )
    except PartError as exc:
        exc.ref = ref
        raise


def _read_part(
    session: ImapSession,
    ref: MessageRef,
    part_id: str,
    sink: BinaryIO,
    max_bytes: int,
    skip_bytes: int,
    accept: Accept | None,
    source_bytes: int,
) -> PartRead:
    first = min(FETCH_CHUNK_BYTES, _encoded_need(skip_bytes + max_bytes))
    items = [
        "BODYSTRUCTURE",
        "BODY.PEEK[HEADER.FIELDS (CONTENT-TYPE)]",
        f"BODY.PEEK[{part_id}]<0.{first}>",
    ]
    try:
        response = session.fetch([ref.uid], items).get(ref.uid)
    except Exception as exc:
        # Some servers refuse the whole FETCH for a section the message does not have: ask for the
        # structure alone to say which part ids exist.
        if command_refused(exc) is None:
            raise
        response = session.fetch([ref.uid], items[:2]).get(ref.uid)
        if _expunged(response):
            raise PartGone() from None
        assert response is not None
        locate(_structure(response), part_id)
        raise PartRefused(part_id, server_said(exc)) from None
    if _expunged(response):
        raise PartGone()
    assert response is not None
    try:
        part = locate(_structure(response), part_id)
    except StructureUnusable:
        if source_bytes <= 0:
            raise
        return _from_source(session, ref, part_id, sink, max_bytes, skip_bytes, accept, source_bytes)
    decoder = StreamDecoder(part.encoding)
    chunk = _section_data(response, part_id)
    decoded = decoder.feed(chunk)
    if accept is not None:
        max_bytes = min(max_bytes, accept(part, decoded[:HEAD_BYTES]) or max_bytes)
    writer = WindowWriter(sink, skip_bytes, max_bytes)
    position, fetched_bytes, fetches, requested = 0, 0, 1, first
    if decoder.encoding == "identity" and skip_bytes > len(chunk) == first:
        # Undecoded bytes sit where they are: go straight to the window.
        position, writer.seen, fetched_bytes = skip_bytes, skip_bytes, len(chunk)
        chunk = decoded = b""
        requested = 0
    # Junk-padded encodings cannot make the loop fetch without end.
    encoded_limit = (skip_bytes + max_bytes) * _MAX_ENCODED_PER_DECODED + FETCH_CHUNK_BYTES
    while True:
        position += len(chunk)
        fetched_bytes += len(chunk)
        ended = len(chunk) < requested
        if writer.write(decoded):
            return writer.result(part, complete=False, fetched=fetched_bytes, fetches=fetches)
        if ended or position >= encoded_limit:
            break
        # The last fetch asks for what the window still needs (an unencoded part: exactly that).
        requested = min(FETCH_CHUNK_BYTES, _encoded_need(writer.skip + writer.limit - writer.seen))
        answer = session.fetch([ref.uid], [f"BODY.PEEK[{part_id}]<{position}.{requested}>"]).get(ref.uid)
        fetches += 1
        chunk = _section_data(answer or {}, part_id)
        decoded = decoder.feed(chunk)
    full = writer.write(decoder.finish())
    return writer.result(part, complete=ended and not full, fetched=fetched_bytes, fetches=fetches)


def _from_source(
    session: ImapSession,
    ref: MessageRef,
    part_id: str,
    sink: BinaryIO,
    max_bytes: int,
    skip_bytes: int,
    accept: Accept | None,
    source_bytes: int,
) -> PartRead:
    """The part as the message's own MIME structure has it, from the message's first ``source_bytes``."""
    response = session.fetch([ref.uid], ["RFC822.SIZE", f"BODY.PEEK[]<0.{source_bytes}>"]).get(ref.uid) or {}
    raw = find_item(response, b"BODY[]") or b""
    leaves = mime.message_leaves(raw)
    part = locate([leaf for leaf, _ in leaves], part_id)
    payload = next(data for leaf, data in leaves if leaf.section == part_id)
    decoder = StreamDecoder(part.encoding)
    decoded = decoder.feed(payload) + decoder.finish()
    if accept is not None:
        max_bytes = min(max_bytes, accept(part, decoded[:HEAD_BYTES]) or max_bytes)
    writer = WindowWriter(sink, skip_bytes, max_bytes)
    full = writer.write(decoded)
    # A message longer than what was parsed may have cut this part.
    whole = int(response.get(b"RFC822.SIZE") or 0) <= len(raw)
    return writer.result(part, complete=whole and not full, fetched=len(raw), fetches=2)


__all__ = [
    "FETCH_CHUNK_BYTES",
    "PART_ID_PATTERN",
    "NotAnAttachment",
    "PartError",
    "PartGone",
    "PartNotFound",
    "PartRead",
    "StructureUnusable",
    "encoding_name",
    "locate",
    "read_part",
    "valid_part_id",
]

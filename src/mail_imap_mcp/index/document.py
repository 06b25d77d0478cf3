"""One message as the index keeps it, from the answer to one bounded ``UID FETCH``.

The fetch asks for metadata, the header fields the index searches and the first ``text_bytes`` of the
body, all ``BODY.PEEK`` (indexing never sets ``\\Seen``). The body's text is the part a summary's
snippet reads (the text part, else the HTML part rendered as text, :func:`mail_imap_mcp.mime.text_from_prefix`);
what the sender wrote goes to the ``body`` column, quoted replies and signatures to ``quoted``, which
ranks lower (:data:`~mail_imap_mcp.index.store.COLUMN_WEIGHTS`), so a thread does not drown its first
message.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mail_imap_mcp import mime
from mail_imap_mcp.content.quotes import new_text
from mail_imap_mcp.imap.bodystructure import top_level_boundary
from mail_imap_mcp.imap.fetch import find_item, trusted_structure
from mail_imap_mcp.imap.search.execute import epoch
from mail_imap_mcp.index.store import KEPT_HEADERS, IndexedMessage
from mail_imap_mcp.mime.summary import address_text, first

#: The header fields the index reads (Reply-To and Sender kept for a hit's sender warnings, store.KEPT_HEADERS;
#: Content-Type and -Transfer-Encoding to read the body without a trustworthy BODYSTRUCTURE).
INDEX_HEADERS = (
    "DATE FROM TO CC SUBJECT MESSAGE-ID LIST-ID REPLY-TO SENDER CONTENT-TYPE CONTENT-TRANSFER-ENCODING"
)
#: Header fields are read up to this size (a 300 KB Subject must not travel).
HEADER_BYTES = 16 * 1024
#: Characters of a header field kept.
MAX_FIELD_CHARS = 2000


def index_items(text_bytes: int, extra: tuple[str, ...] = ()) -> list[str]:
    """The FETCH items of one message to index (metadata and PEEK only; ``extra``: the personality's,
    :attr:`~mail_imap_mcp.imap.personality.Personality.index_items`)."""
    return [
        *extra,
        "FLAGS",
        "INTERNALDATE",
        "RFC822.SIZE",
        "BODYSTRUCTURE",
        f"BODY.PEEK[HEADER.FIELDS ({INDEX_HEADERS})]<0.{HEADER_BYTES}>",
        f"BODY.PEEK[TEXT]<0.{text_bytes}>",
    ]


def _field(headers: dict[str, list[str]], name: str) -> str:
    return " ".join(headers.get(name, ()))[:MAX_FIELD_CHARS]


def _arrival_day(arrived: Any) -> int:
    if not isinstance(arrived, datetime):
        return 0
    return arrived.year * 10000 + arrived.month * 100 + arrived.day


def _split_quoted(text: str) -> tuple[str, str]:
    """What the sender wrote, and the rest (quoted lines, attributions, signature)."""
    own = new_text(text).text
    if own is text:
        return text, ""
    kept = {line.strip() for line in own.splitlines()}
    quoted = [line for line in text.splitlines() if line.strip() and line.strip() not in kept]
    return own, "\n".join(quoted)


def message_flags(response: dict[bytes, Any]) -> tuple[str, ...]:
    """The flags of a ``FETCH`` answer, as the server spells them."""
    return tuple(f.decode() if isinstance(f, bytes) else str(f) for f in response.get(b"FLAGS", ()))


def _headers(response: dict[bytes, Any]) -> dict[str, list[str]]:
    return mime.parse_header_block(find_item(response, b"BODY[HEADER") or b"")


def message_parts(response: dict[bytes, Any]) -> list[mime.Part]:
    """The leaf parts of a message from its FETCH answer (:func:`index_items`); empty when its
    BODYSTRUCTURE cannot be trusted."""
    return trusted_structure(response, _headers(response))[0] or []


def indexed_message(
    uid: int,
    response: dict[bytes, Any],
    attachment_text: str = "",
    *,
    global_id: int | None = None,
    labels: tuple[str, ...] = (),
    attachments_read: bool = False,
) -> IndexedMessage:
    """The index's record of the message ``uid`` from its FETCH answer (:func:`index_items`), with the
    text of its attachments when they were read (:mod:`.attachments`; ``attachments_read``), and the
    server's own id of it and its labels where the server has them."""
    headers = _headers(response)
    parts, _ = trusted_structure(response, headers)
    prefix = find_item(response, b"BODY[TEXT]") or b""
    if parts:
        structure = response.get(b"BODYSTRUCTURE")
        boundary = top_level_boundary(structure) if structure is not None else None
        text = mime.text_from_prefix(prefix, parts, boundary=boundary)
    else:
        text = mime.text_from_prefix(
            prefix,
            [],
            header_content_type=first(headers, "content-type"),
            header_encoding=first(headers, "content-transfer-encoding"),
        )
    own, quoted = _split_quoted(text or "")
    arrived = response.get(b"INTERNALDATE")
    sent = mime.parse_date(first(headers, "date"))
    moment = sent or (arrived if isinstance(arrived, datetime) else None)
    attachments = mime.attachment_parts(parts) if parts else []
    filenames = tuple(part.filename.lower() for part in attachments if part.filename)
    texts = (
        _field(headers, "subject"),
        address_text(headers.get("from", ())),  # what a hit's sender warnings are read from, with kept
        _field(headers, "to"),
        _field(headers, "cc"),
        _field(headers, "list-id"),
        _field(headers, "message-id"),
        own,
        quoted,
        " ".join(filenames),
        attachment_text,
    )
    return IndexedMessage(
        uid=uid,
        sent=int(moment.timestamp()) if moment else 0,
        arrival_day=_arrival_day(arrived),
        size=int(response.get(b"RFC822.SIZE") or 0),
        flags=message_flags(response),
        has_attachment=bool(attachments),
        texts=texts,
        filenames=filenames,
        global_id=global_id,
        labels=labels,
        attachments_read=attachments_read,
        arrival=(epoch(arrived) or 0) if isinstance(arrived, datetime) else 0,
        kept=tuple(address_text(headers.get(name, ())) for name in KEPT_HEADERS),
    )

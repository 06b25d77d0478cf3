"""Forwarding with imap_save_draft (``forward_of``, ``forward_as``): the original read, and the draft's
text and attachments made of it (``content/forwards.py`` for the text and headers, ``mime/building.py``
for the message).

``inline``: the original's header block and text below the caller's, its attachments carried: each part
fetched part by part into a private temporary file and attached decoded as it was (type, name,
disposition, Content-ID), each at most ``max_attachment_bytes``. ``attachment``: the original whole as
``message/rfc822``, byte for byte as the server keeps it (7bit or 8bit, never re-encoded, RFC 2046
5.2.1), at most ``max_attachment_bytes``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path
from typing import Literal

from mail_imap_mcp import mime
from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.content.drafts import address, compose_draft, message_id_domain, one_line
from mail_imap_mcp.content.forwards import (
    FORWARDED_HEADER,
    forward_subject,
    forward_text,
    forwarded_id,
    references,
)
from mail_imap_mcp.imap.attachment_errors import AttachmentTooLarge
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.ids import MessageRef
from mail_imap_mcp.imap.read import read_raw
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.mime.building import Attachment
from mail_imap_mcp.mime.parts import MESSAGE_TYPES
from mail_imap_mcp.services.attachment_fetch import estimated_size, fetch_part, too_large
from mail_imap_mcp.services.drafts import Original, read_original, sender
from mail_imap_mcp.services.message_lookup import examine_for
from mail_imap_mcp.services.message_read import MessageRead

ForwardAs = Literal["inline", "attachment"]
#: How much of the original's text an inline forward carries (characters).
FORWARD_MAX_CHARS = 200_000
_NAME_UNSAFE = str.maketrans(dict.fromkeys('/\\:*?"<>|', "_"))


@dataclass
class Forward:
    """A forward draft's text message and what it attaches, and the original it forwards."""

    message: EmailMessage
    attachments: list[Attachment]
    original: Original
    warnings: list[str] = field(default_factory=list)

    @property
    def shown(self) -> str:
        """The forwarded message in words: "'Invoice 2026-11' of Acme <billing@acme.example>"."""
        detail = self.original.detail
        return f"{one_line(detail.subject) or '(no subject)'!r} of {one_line(detail.from_) or 'an unknown sender'}"


def _carried(part: mime.Part, size: int, path: Path) -> Attachment:
    kind = part.content_type.lower()
    params = {k: v for k, v in part.params.items() if k.lower() not in {"name", "boundary"} and "*" not in k}
    return Attachment(
        name=part.filename or f"part-{part.section}",
        content_type=kind,
        size=size,
        read=lambda: path.open("rb"),
        disposition="inline" if part.disposition == "inline" else "attachment",
        encoding="8bit" if kind in MESSAGE_TYPES else "base64",
        params=params,
        content_id=f"<{part.content_id}>" if part.content_id else None,
    )


def _parts(
    app: AppContext, connection: AccountConnection, original: Original, folder: Path
) -> list[Attachment]:
    """The original's attachments, each fetched into a file of ``folder``."""
    assert isinstance(original.detail, MessageRead)
    limit = app.config.server.max_attachment_bytes
    carried = []
    for part in original.detail.attachments:
        if estimated_size(part) > limit * 1.02:  # base64 line ends: the estimate is a little over
            raise too_large(part, limit, "max_attachment_bytes")
        path = folder / f"part-{part.section}"
        with path.open("w+b") as sink:
            read = fetch_part(
                connection,
                original.ref,
                part.section,
                sink,
                max_bytes=limit + 1,
                source_bytes=app.config.server.max_text_part_bytes,
            )
        if read.written > limit:
            raise too_large(part, limit, "max_attachment_bytes", size=read.written)
        carried.append(_carried(read.part, read.written, path))
    return carried


def _whole(app: AppContext, connection: AccountConnection, original: Original) -> Attachment:
    """The original as it is kept, as a ``message/rfc822`` attachment."""
    ref, limit = original.ref, app.config.server.max_attachment_bytes

    def read(session: ImapSession) -> bytes:
        examine_for(session, ref)
        window = read_raw(session, ref, 0, limit + 1)
        if window.total_size_bytes > limit:
            part = mime.Part(
                "", "message/rfc822", {}, "8bit", window.total_size_bytes, None, None, None, None
            )
            raise AttachmentTooLarge(
                part, limit, "max_attachment_bytes", size=window.total_size_bytes, exact=True
            )
        return window.data

    raw = connection.run(read)
    name = (one_line(original.detail.subject) or "forwarded message")[:100].translate(_NAME_UNSAFE) + ".eml"
    return Attachment.of_bytes(raw, name, "message/rfc822", encoding="7bit" if raw.isascii() else "8bit")


def forward_draft(
    app: AppContext,
    connection: AccountConnection,
    account: AccountConfig,
    ref: MessageRef,
    *,
    forward_as: ForwardAs,
    to: list[str],
    cc: list[str],
    subject: str | None,
    body_text: str,
    from_address: str | None,
    folder: Path,
) -> Forward:
    """The forward of ``ref`` (see the module); its attachments' files live in ``folder``."""
    original = read_original(app, ref, FORWARD_MAX_CHARS)
    inline = forward_as == "inline"
    sent_as = sender(account, from_address, original)
    domain = message_id_domain(sent_as.addr_spec if sent_as else "", account.host)
    text = forward_text(body_text, original.detail if inline else None)
    message, warnings = compose_draft(
        sent_as,
        [address(value) for value in to],
        [address(value) for value in cc],
        subject if subject is not None else forward_subject(original.detail.subject),
        text,
        domain,
        None,
    )
    chain, forwarded = references(original.detail), forwarded_id(original.detail)
    if chain:
        message["References"] = chain
    if forwarded is not None:
        message[FORWARDED_HEADER] = forwarded
    else:
        warnings.append("The original has no Message-ID: sending will not mark it $Forwarded.")
    if not to and not cc:
        warnings.append("The forward has no recipient yet: add to (or cc).")
    if inline and original.detail.body_truncated:
        warnings.append(f"The original's text was cut at {FORWARD_MAX_CHARS:,} characters; forward_as "
                        "'attachment' carries it whole.")  # fmt: skip
    attachments = _parts(app, connection, original, folder) if inline else [_whole(app, connection, original)]
    return Forward(message, attachments, original, warnings + original.warnings)

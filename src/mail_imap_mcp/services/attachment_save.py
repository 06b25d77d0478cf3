"""Saving one attachment to the user's ``download_dir``: spooled from the server (bounded by
``max_attachment_bytes``, retried as every read), then created in the folder by ``local_files`` under a
safe name from the attachment's own, never over another file. The folder is the setting's alone: no
name of the message or argument of the call chooses it."""

from __future__ import annotations

import mimetypes
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mail_imap_mcp import mime
from mail_imap_mcp.config import ServerSettings
from mail_imap_mcp.local_files import SavedFile, create_inside
from mail_imap_mcp.mail.backend import MailReading
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.services.attachment_fetch import spooled_part, too_large, within

_CHUNK = 1 << 20


@dataclass(frozen=True)
class SavedAttachment:
    """Attachment ``part`` saved as ``file``."""

    part: mime.Part
    file: SavedFile


def wanted_name(part: mime.Part) -> str:
    """The name the sender gave the attachment, else "attachment" with its type's usual extension."""
    if part.filename:
        return part.filename
    return "attachment" + (mimetypes.guess_extension(part.content_type) or "")


def _chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as spooled:
        while chunk := spooled.read(_CHUNK):
            yield chunk


def save_attachment(
    mail: MailReading, ref: MessageRef, part_id: str, server: ServerSettings, folder: Path
) -> SavedAttachment:
    """Attachment ``part_id`` of ``ref`` decoded into a new file of ``folder``; ``limit_exceeded`` naming
    ``max_attachment_bytes`` beyond it (nothing is saved then), the local files' refusals otherwise."""
    limit = server.max_attachment_bytes
    with spooled_part(mail, ref, part_id, server, accept=within(limit, "max_attachment_bytes")) as spooled:
        if not spooled.read.complete:
            raise too_large(spooled.part, limit, "max_attachment_bytes")
        saved = create_inside(folder, wanted_name(spooled.part), _chunks(spooled.path), max_bytes=limit)
    return SavedAttachment(part=spooled.part, file=saved)

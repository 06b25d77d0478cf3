"""Reading one attachment for the tools: fetch it (bounded, retried once like every read), or spool it
to a temporary file, and judge its size against the limits (``limit_exceeded`` names the setting).
Shared by imap_get_attachment, imap_get_message's ``attachment_mode`` and the attachment resources."""

from __future__ import annotations

import io
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from mail_imap_mcp import mime
from mail_imap_mcp.call import Call, Connections
from mail_imap_mcp.config import ServerSettings
from mail_imap_mcp.mail.attachment_errors import AttachmentTooLarge, InvalidPartId, WindowBeyondLimit
from mail_imap_mcp.mail.backend import MailReading
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.parts import Accept, PartRead, PartWindow, valid_part_id
from mail_imap_mcp.services.message_lookup import message_ref

#: Limit errors of the attachment tools (rendered into docs/tools.md).
ATTACHMENT_ERRORS = {
    "limit_exceeded": "The attachment is larger than max_attachment_bytes (or the image or document "
    "exceeds a limit of the extraction sandbox); the message names the setting.",
}

# A base64 part's decoded size from its encoded size: 3 bytes per 4 characters, 76-character lines.
_BASE64_RATIO = 57 / 78


def estimated_size(part: mime.Part) -> int:
    """The decoded size of ``part`` as its encoded size suggests (exact for unencoded parts)."""
    if part.encoding == "base64":
        return int(part.size_bytes * _BASE64_RATIO)
    return part.size_bytes


def too_large(part: mime.Part, limit: int, setting: str, *, size: int | None = None) -> AttachmentTooLarge:
    """``limit_exceeded`` for an attachment beyond ``limit`` bytes, naming the ``[server]`` setting (the
    failure registry words it)."""
    exact = size is not None
    return AttachmentTooLarge(
        part, limit, setting, size=size if size is not None else estimated_size(part), exact=exact
    )


def within(limit: int, setting: str) -> Accept:
    """An ``accept`` refusing, before its bytes are read, a part whose encoded size puts it beyond
    ``limit`` decoded bytes (``limit_exceeded`` naming ``setting``)."""

    def accept(part: mime.Part, head: bytes) -> None:
        if estimated_size(part) > limit * 1.02:
            raise too_large(part, limit, setting)

    return accept


def byte_window(
    app: Call, ref: MessageRef, part_id: str, *, offset_bytes: int, max_bytes: int
) -> tuple[bytes, PartRead]:
    """Bytes ``offset_bytes`` .. ``+max_bytes`` of attachment ``part_id`` as decoded (``max_bytes`` within
    max_raw_bytes), never past max_attachment_bytes."""
    server = app.config.server
    max_bytes = min(max_bytes, server.max_raw_bytes)
    if offset_bytes + max_bytes > server.max_attachment_bytes:
        raise WindowBeyondLimit(offset_bytes + max_bytes, server.max_attachment_bytes)
    window = io.BytesIO()
    bounds = PartWindow(max_bytes, skip_bytes=offset_bytes, source_bytes=server.max_text_part_bytes)
    read = app.mail(ref.account_id).part(ref, part_id, window, bounds)
    return window.getvalue(), read


@dataclass
class Spooled:
    """An attachment decoded into a temporary file."""

    path: Path
    read: PartRead

    @property
    def part(self) -> mime.Part:
        return self.read.part


@contextmanager
def spooled_part(
    mail: MailReading,
    ref: MessageRef,
    part_id: str,
    server: ServerSettings,
    *,
    accept: Accept | None = None,
) -> Iterator[Spooled]:
    """The attachment decoded into a private temporary file (at most ``max_attachment_bytes``), removed
    afterwards."""
    with tempfile.TemporaryDirectory(prefix="mim-attachment-") as directory:
        path = Path(directory) / "part"
        with path.open("w+b") as sink:
            bounds = PartWindow(
                server.max_attachment_bytes, accept=accept, source_bytes=server.max_text_part_bytes
            )
            read = mail.part(ref, part_id, sink, bounds)
        yield Spooled(path=path, read=read)


def attachment_blob(app: Connections, message_id: str, part_id: str) -> tuple[bytes, str]:
    """The whole decoded attachment and the content type the sender declared, for the attachment
    resource; ``limit_exceeded`` naming ``max_resource_bytes`` beyond it (imap_get_attachment reads such
    a one in windows)."""
    ref = message_ref(app, message_id)
    mail = app.mail(ref.account_id)  # an unknown account said before a malformed part id
    if not valid_part_id(part_id):
        raise InvalidPartId(part_id)
    limit = app.config.server.max_resource_bytes
    blob = io.BytesIO()
    bounds = PartWindow(
        limit, accept=within(limit, "max_resource_bytes"), source_bytes=app.config.server.max_text_part_bytes
    )
    read = mail.part(ref, part_id, blob, bounds)
    if not read.complete:
        raise too_large(read.part, limit, "max_resource_bytes")
    return blob.getvalue(), read.part.content_type

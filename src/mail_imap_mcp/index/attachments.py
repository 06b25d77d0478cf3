"""The text of a message's attachments for the index (``index_attachments = true``), bounded per message.

Which attachments are read is decided from BODYSTRUCTURE alone (:func:`attachment_plan`): documents
(:func:`~mail_imap_mcp.content.documents.declared_format`), in order, while their encoded sizes fit in
``fetch_bytes`` per message; a PDF or Office file larger than what is left is skipped (cut, it cannot be
parsed), a text or CSV one is read up to it. They are fetched with ``BODY.PEEK[<part>]<0.n>`` (never
``\\Seen``), decoded, and read by :func:`~mail_imap_mcp.content.documents.extract_text`, the same
sandboxed extraction ``imap_get_attachment`` uses, with its limits per document, but in the child of a
:class:`~mail_imap_mcp.content.sandbox_worker.SandboxWorker` that reads many documents one after another
(a fresh child per document spent nearly all its time starting); the texts of one message are kept up to
:data:`TEXT_CHARS`. An attachment that cannot be read (damaged, encrypted, over a sandbox limit, hanging
or crashing its child) is logged with its reason, counted by reason (the indexer's ``skipped_attachments``), and
skipped: the message is indexed with the rest, and the other documents are read.
"""

from __future__ import annotations

import logging
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mail_imap_mcp import mime
from mail_imap_mcp.config import ServerSettings
from mail_imap_mcp.content.documents import ExtractLimits, declared_format, extract_limits, extract_text
from mail_imap_mcp.content.errors import ExtractionError
from mail_imap_mcp.content.sandbox_worker import SandboxWorker
from mail_imap_mcp.imap.fetch import find_item

log = logging.getLogger(__name__)

#: Characters of attachment text kept per message.
TEXT_CHARS = 16_384
#: Formats read from their start: a cut one still gives its first text.
_STREAMED = frozenset({"text", "csv"})
#: Encoded bytes of attachments in flight at once (one pipelined round trip), whatever the chunk.
ROUND_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class AttachmentReading:
    """How attachments are read for the index: the sandbox's limits and the per-message bounds."""

    limits: ExtractLimits
    fetch_bytes: int
    text_chars: int = TEXT_CHARS

    @classmethod
    def of(cls, server: ServerSettings) -> AttachmentReading:
        return cls(extract_limits(server), server.index_attachment_bytes)


@dataclass(frozen=True)
class PartRead:
    """One attachment to fetch: the part and how many of its encoded bytes."""

    part: mime.Part
    size: int

    @property
    def item(self) -> str:
        return f"BODY.PEEK[{self.part.section}]<0.{self.size}>"


def attachment_plan(parts: Sequence[mime.Part], fetch_bytes: int) -> list[PartRead]:
    """The attachments of a message to read for the index, within ``fetch_bytes`` in all."""
    left, plan = fetch_bytes, []
    for part in mime.attachment_parts(list(parts)):
        fmt = declared_format(part.content_type, part.filename)
        if fmt is None or left <= 0:
            continue
        size = part.size_bytes if part.size_bytes > 0 else left
        if size > left and fmt not in _STREAMED:
            continue
        plan.append(PartRead(part, min(size, left)))
        left -= min(size, left)
    return plan


def rounds(plans: dict[int, list[PartRead]]) -> Iterator[list[tuple[list[int], list[str]]]]:
    """The ``UID FETCH`` commands of ``plans`` (one per message), grouped so that a round trip asks for
    at most :data:`ROUND_BYTES`."""
    batch: list[tuple[list[int], list[str]]] = []
    size = 0
    for uid, plan in plans.items():
        wanted = sum(read.size for read in plan)
        if batch and size + wanted > ROUND_BYTES:
            yield batch
            batch, size = [], 0
        batch.append(([uid], [read.item for read in plan]))
        size += wanted
    if batch:
        yield batch


def attachment_text(
    response: dict[bytes, Any],
    plan: Sequence[PartRead],
    reading: AttachmentReading,
    worker: SandboxWorker | None = None,
    skipped: Counter[str] | None = None,
) -> str:
    """The text of the attachments of ``plan`` from their FETCH answer, at most ``reading.text_chars``: read
    in ``worker``'s child (without one, each in a child of its own); those not read are counted in
    ``skipped`` by reason (the limit hit, or the error's code)."""
    texts: list[str] = []
    left = reading.text_chars
    with tempfile.TemporaryDirectory(prefix="mim-index-") as scratch:  # mode 0700
        for number, read in enumerate(plan):
            if left <= 0:
                break
            part = read.part
            raw = find_item(response, f"BODY[{part.section}]".encode())
            if not isinstance(raw, bytes) or not raw:
                continue
            path = Path(scratch) / str(number)
            path.write_bytes(mime.decode_transfer(raw, part.encoding))
            try:
                extracted = extract_text(
                    path, part.content_type, part.filename, reading.limits, max_chars=left, worker=worker
                )
            except (ExtractionError, OSError, ValueError) as exc:
                reason = (exc.limit or exc.code) if isinstance(exc, ExtractionError) else "unreadable"
                log.info(
                    "index: attachment %s (%s) not read (%s): %s",
                    part.section,
                    part.content_type,
                    reason,
                    exc,
                )
                if skipped is not None:
                    skipped[reason] += 1
                continue
            finally:
                path.unlink(missing_ok=True)
            text = extracted.text.strip()
            if text:
                texts.append(text)
                left -= len(text)
    return "\n".join(texts)[: reading.text_chars]

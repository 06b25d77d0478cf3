"""One MIME part of a message read as a window of its decoded bytes, whatever the backend: which part
ids exist (IMAP's section numbers, as every backend names parts), which of them are attachments, the
window written to a sink and what the read did (:class:`PartRead`). ``imap/parts.py`` fetches a part in
bounded chunks; a backend holding the message whole reads it at once."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, TypeAlias

from mail_imap_mcp.mail.part_errors import NotAnAttachment, PartNotFound

if TYPE_CHECKING:
    from mail_imap_mcp import mime

#: IMAP section numbers of leaf parts: ``2``, ``1.3``, ``2.1.4`` (no ``HEADER``/``TEXT``/``MIME`` specifiers).
PART_ID_PATTERN = r"^[1-9][0-9]{0,5}(\.[1-9][0-9]{0,5}){0,31}$"
_PART_ID = re.compile(PART_ID_PATTERN)
#: Decoded bytes handed to ``accept`` for content sniffing.
HEAD_BYTES = 4096
#: What may refuse a part once it and its first decoded bytes are known (raising), or narrow the window
#: to fewer decoded bytes (returning them); None keeps the window.
Accept: TypeAlias = "Callable[[mime.Part, bytes], int | None]"


@dataclass(frozen=True)
class PartWindow:
    """Which decoded bytes of a part a read writes: from ``skip_bytes`` on, at most ``max_bytes``;
    ``accept`` asked once the part and its first bytes are known; ``source_bytes``: how much of the
    message is parsed where the backend's structure of it cannot be trusted (0: none)."""

    max_bytes: int
    skip_bytes: int = 0
    accept: Accept | None = None
    source_bytes: int = 0


@dataclass
class PartRead:
    """What reading a part wrote to the sink."""

    part: mime.Part
    #: Decoded bytes written (from ``skip_bytes`` on).
    written: int
    #: Decoded bytes the part had before the window, plus ``written``; the part's decoded size when
    #: ``complete`` is true.
    decoded_end: int
    #: True when the part ended inside the window (nothing follows ``decoded_end``).
    complete: bool
    #: Encoded bytes the backend read, and the commands that brought them (IMAP's FETCHes; 1 from memory).
    fetched_bytes: int
    fetches: int


def valid_part_id(part_id: str) -> bool:
    return _PART_ID.match(part_id) is not None


def locate(parts: list[mime.Part], part_id: str) -> mime.Part:
    """The attachment part ``part_id`` of ``parts``; :class:`PartNotFound` or :class:`NotAnAttachment`."""
    from mail_imap_mcp.mime import attachment_parts  # loaded already by what parsed ``parts``

    attachments = attachment_parts(parts)
    available = [p.section for p in attachments]
    for part in parts:
        if part.section == part_id:
            if part not in attachments:
                raise NotAnAttachment(part, available)
            return part
    raise PartNotFound(part_id, available)


class WindowWriter:
    """Writes the ``[skip, skip + limit)`` slice of a decoded stream to a sink."""

    def __init__(self, sink: BinaryIO, skip: int, limit: int) -> None:
        self.sink = sink
        self.skip = skip
        self.limit = limit
        self.seen = 0
        self.written = 0
        self.overflow = False

    def write(self, data: bytes) -> bool:
        """Add decoded ``data``; True once bytes beyond the window were seen (the window is full)."""
        start = max(0, self.skip - self.seen)
        self.seen += len(data)
        room = self.limit - self.written
        piece = data[start : start + room]
        if piece:
            self.sink.write(piece)
            self.written += len(piece)
        if len(data) - start > room:
            self.overflow = True
        return self.overflow

    def result(self, part: mime.Part, *, complete: bool, fetched: int, fetches: int) -> PartRead:
        return PartRead(
            part=part,
            written=self.written,
            decoded_end=min(self.seen, self.skip + self.written) if self.overflow else self.seen,
            complete=complete and not self.overflow,
            fetched_bytes=fetched,
            fetches=fetches,
        )

"""A message's bytes kept out of memory: :class:`MessageFile` holds them in an anonymous temporary file (mode
0600, unlinked as it is made, so gone with the process however it ends) and hands them out a piece at a
time; a draft being sent is read, approved, transmitted and filed in Sent from one such file
(``services/send_prepare.py``), never held whole.

:func:`crlf_chunks` turns every line end of a stream of pieces into CRLF, a piece at a time.
"""

from __future__ import annotations

import hashlib
import io
import re
import tempfile
import threading
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from _hashlib import HASH as Hash

#: The most bytes handed out (or read) at once.
CHUNK_BYTES = 1024 * 1024
#: The bytes handed out at once to be sent (each piece is rewritten, so held more than once).
SEND_PIECE_BYTES = 256 * 1024
#: The most bytes a header block may have: a draft whose headers go on beyond it is not read.
HEADER_BLOCK_MAX_BYTES = 1024 * 1024
_HEADER_END = re.compile(rb"\r?\n\r?\n")
_BARE_LINE_ENDS = re.compile(rb"\r\n|\r|\n")


class HeaderBlockTooLarge(ValueError):
    """The message's header block goes on beyond :data:`HEADER_BLOCK_MAX_BYTES`."""


class MessageFile:
    """A message's bytes, written once (:meth:`write`), then read from any thread at any offset; its size
    and SHA-256 are known as it is written. ``file``: where they are kept (by default an anonymous
    temporary file; :meth:`of` keeps bytes already in memory)."""

    def __init__(self, file: BinaryIO | None = None) -> None:
        # Kept open as long as the message is: close() (or the object's end) removes it.
        self._file: BinaryIO = file if file is not None else tempfile.TemporaryFile(prefix="mim-message-")  # noqa: SIM115
        self._lock = threading.Lock()
        self._digest = hashlib.sha256()
        self.size = 0

    @classmethod
    def of(cls, raw: bytes) -> MessageFile:
        """``raw`` as a message file (its buffer shared, not copied)."""
        kept = cls(io.BytesIO(raw))
        kept._digest.update(raw)
        kept.size = len(raw)
        return kept

    def write(self, data: bytes) -> None:
        """Add ``data`` at the end."""
        with self._lock:
            self._file.seek(self.size)
            self._file.write(data)
        self._digest.update(data)
        self.size += len(data)

    def sha256(self) -> Hash:
        """The running SHA-256 of the bytes (a copy: the caller may add to it)."""
        return self._digest.copy()

    def read_at(self, offset: int, size: int) -> bytes:
        """At most ``size`` bytes from ``offset``."""
        with self._lock:
            self._file.seek(offset)
            return self._file.read(max(0, min(size, self.size - offset)))

    def chunks(self, start: int = 0, end: int | None = None, size: int = CHUNK_BYTES) -> Iterator[bytes]:
        """The bytes from ``start`` to ``end`` (the end by default), ``size`` at a time."""
        stop = self.size if end is None else min(end, self.size)
        while start < stop:
            data = self.read_at(start, min(size, stop - start))
            if not data:
                return
            start += len(data)
            yield data

    def header_end(self) -> tuple[int, int]:
        """Where the header block ends and where the body starts (both the size without a blank line).
        Raises :class:`HeaderBlockTooLarge`."""
        head = self.read_at(0, HEADER_BLOCK_MAX_BYTES + 4)
        end = _HEADER_END.search(head)
        if end is None:
            if len(head) > HEADER_BLOCK_MAX_BYTES:
                raise HeaderBlockTooLarge(f"its header block is over {HEADER_BLOCK_MAX_BYTES:,} bytes")
            return len(head), len(head)
        return end.start(), end.end()

    def close(self) -> None:
        """Let go of the bytes (the temporary file is gone)."""
        self._file.close()


def crlf_chunks(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """``chunks`` with each line end (CRLF, a bare CR or a bare LF) as CRLF, a CR at the end of a piece
    held back until the next piece says whether an LF follows it."""
    carry = b""
    for chunk in chunks:
        data = carry + chunk
        carry = data[-1:] if data.endswith(b"\r") else b""
        data = data[: len(data) - len(carry)]
        if data:  # rewritten only where a line end is not CRLF already (counted: faster than a search)
            pairs = data.count(b"\r\n")
            bare = data.count(b"\r") != pairs or data.count(b"\n") != pairs
            yield _BARE_LINE_ENDS.sub(b"\r\n", data) if bare else data
    if carry:
        yield b"\r\n"

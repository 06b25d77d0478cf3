"""Rows of PostgreSQL's binary COPY read into numpy records (index/engines/postgresql/binary_copy.py):
whatever the blocks the connection hands on (the header split, a row split across two), every row once,
in order, a few at a time; a row of another shape, or bytes left at the end, are an error."""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import psycopg
import pytest

from mail_imap_mcp.index.engines.postgresql import binary_copy
from mail_imap_mcp.index.engines.postgresql.binary_copy import HEADER, CopyMismatch, copied, record

KIND = record((("id", ">i8"), ("folder", ">i4"), ("embedding", "(4,)i1")))


def row(key: int, folder: int, embedding: bytes) -> bytes:
    return struct.pack(">hiqii", 3, 8, key, 4, folder) + struct.pack(">i", len(embedding)) + embedding


class Stream:
    """A connection whose COPY hands on ``data`` in blocks of ``sizes`` (cycled)."""

    def __init__(self, data: bytes, sizes: Sequence[int]) -> None:
        self.data, self.sizes = data, sizes

    @contextlib.contextmanager
    def copy(self, statement: str, params: Sequence[object]) -> Iterator[Iterator[bytes]]:
        yield self._blocks()

    def _blocks(self) -> Iterator[bytes]:
        at, turn = 0, 0
        while at < len(self.data):
            size = self.sizes[turn % len(self.sizes)]
            yield self.data[at : at + size]
            at, turn = at + size, turn + 1


def read(data: bytes, sizes: Sequence[int]) -> list[Any]:
    return list(copied(Stream(data, sizes), "COPY", (), KIND))  # type: ignore[arg-type]


@pytest.mark.parametrize("sizes", [[10_000], [1], [7, 3], [5, 40, 2], [KIND.itemsize]])
def test_every_row_once_in_order_whatever_the_blocks(
    sizes: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(binary_copy, "AT_ONCE", 3 * KIND.itemsize + 5)  # a few rows at a time
    rows = [(n, n % 3, bytes([n % 256, 255, 0, 127])) for n in range(1, 12)]
    chunks = read(HEADER + b"".join(row(*r) for r in rows) + b"\xff\xff", sizes)
    assert len(chunks) > 1 or max(sizes) > binary_copy.AT_ONCE  # handed on as they come
    found = np.concatenate(chunks)
    assert found["id"].tolist() == [r[0] for r in rows]
    assert found["folder"].tolist() == [r[1] for r in rows]
    assert found["embedding"].astype(np.uint8).tobytes() == b"".join(r[2] for r in rows)
    assert read(HEADER + b"\xff\xff", sizes) == []  # none


@pytest.mark.parametrize(
    "data",
    [
        HEADER + row(1, 1, bytes(4)) + row(2, 1, bytes(3)) + b"\xff\xff",  # a vector of other dimensions
        HEADER + row(1, 1, bytes(4)) + b"\xff\xff\x00",  # bytes after the end
        HEADER + row(1, 1, bytes(4)),  # no end
        b"PGCOPY\n\xff\r\n\x01" + bytes(8) + row(1, 1, bytes(4)) + b"\xff\xff",  # not its header
    ],
)
def test_a_row_of_another_shape_is_an_error_of_the_database(data: bytes) -> None:
    with pytest.raises(CopyMismatch) as raised:
        read(data, [6])
    assert isinstance(raised.value, psycopg.Error)  # the store answers it as PostgreSQL's errors

"""Rows of a ``COPY ... TO STDOUT (FORMAT binary)`` read straight into numpy arrays, a few megabytes at
a time: where every field has a fixed size (integers, a vector's bytes), each row is a record of one
numpy type (PostgreSQL's binary COPY: the count of its fields, then each field's length and value,
big-endian), with no Python object made per row. The signatures an instance holds of a million vectors
are read this way in a fraction of the time rows of text took (hex-encoded ``bytea``, one tuple each)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import psycopg

from mail_imap_mcp.index.engines.postgresql.counts import Scoped

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: The binary COPY's header (its signature, no flags, no header extension) and its end.
HEADER = b"PGCOPY\n\xff\r\n\x00" + bytes(8)
END = b"\xff\xff"
#: Bytes of rows kept before they are handed on (about 14,000 vectors of 256 dimensions: the memory a
#: first read of the signatures takes beyond them stays a few times this).
AT_ONCE = 1 << 22


class CopyMismatch(psycopg.DataError):
    """A row of the COPY is not of the record asked for (a NULL, a vector of other dimensions): the
    database answered what the index cannot read, as any error of PostgreSQL's."""


def record(fields: Sequence[tuple[str, str]]) -> np.dtype[np.void]:
    """The numpy type of a row of the binary COPY whose fields are ``(name, numpy type)``, each of a fixed
    size (``>i8`` a bigint, ``>i4`` an integer, ``(256,)i1`` 256 bytes of a ``bytea``)."""
    import numpy as np

    layout: list[tuple[str, str]] = [("fields", ">i2")]
    for name, kind in fields:
        layout += [(f"{name}_length", ">i4"), (name, kind)]
    return np.dtype(layout)


def copied(
    conn: Scoped, statement: str, params: Sequence[object], kind: np.dtype[np.void]
) -> Iterator[npt.NDArray[np.void]]:
    """The rows of ``statement`` (a ``COPY (...) TO STDOUT (FORMAT binary)``), as arrays of ``kind``
    (:func:`record`), up to :data:`AT_ONCE` bytes at a time; a row of another shape is
    :class:`CopyMismatch`."""
    pending = bytearray()
    started = False
    with conn.copy(statement, params) as copy:
        for block in copy:
            pending += block
            if not started and len(pending) >= len(HEADER):
                if pending[: len(HEADER)] != HEADER:
                    raise CopyMismatch("not a binary COPY of PostgreSQL's")
                del pending[: len(HEADER)]
                started = True
            if started and len(pending) >= AT_ONCE and len(pending) >= kind.itemsize:
                yield _taken(pending, kind)
    rows = _taken(pending, kind)
    if pending != END:
        raise CopyMismatch(f"{len(pending)} bytes at the end of a COPY of {kind.itemsize}-byte rows")
    if len(rows):
        yield rows


def _taken(pending: bytearray, kind: np.dtype[np.void]) -> npt.NDArray[np.void]:
    """The whole rows at the start of ``pending``, taken out of it, checked against ``kind``."""
    import numpy as np

    size = len(pending) // kind.itemsize * kind.itemsize
    with memoryview(pending) as view:  # copied once (a slice of a bytearray, then bytes of it: thrice)
        rows = np.frombuffer(view[:size], dtype=kind).copy()
    del pending[:size]
    names = [name for name in kind.names or () if name != "fields" and not name.endswith("_length")]
    shaped = (rows["fields"] == len(names)).all() and all(
        (rows[f"{name}_length"] == kind[name].itemsize).all() for name in names
    )
    if not shaped:
        raise CopyMismatch(f"a row of a COPY is not of {kind}")
    return rows

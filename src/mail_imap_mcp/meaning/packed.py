"""Vectors kept in six bits a component: how the SQLite engines store a passage's vector (192 bytes for
256 dimensions, three quarters of :func:`~mail_imap_mcp.meaning.vectors.quantised`'s int8 row).

A component is coded by where it falls among 64 equal steps between -:data:`CLIP` and +:data:`CLIP` times
its row's root mean square (a unit vector's components are close to normal: the shipped model's have a
kurtosis of 3.1; beyond 3.5 times lie 0.05% of them, kept at the last step), as its sign (above zero or
not) and the step its size falls in (five bits: 0, nearest zero, to 31), read back (:func:`unpacked`) as
the odd int8 ``±(2 m + 1)``, the middle of the step, so a row read back is ranked by
:func:`~mail_imap_mcp.meaning.vectors.cosines` as an int8 row is. On the meaning set's passages the
cosine with a query moves by 0.0021 (root mean square; 0.0004 for int8 rows, 0.0063 for four bits a
component, which lost a relevant message from the first ten in every run: docs/benchmarks.md).

A row is its signs first, as :func:`~mail_imap_mcp.meaning.vectors.signatures` makes them (a bit set where
a component is above zero, the first in the highest bit, in 64-bit words: 32 bytes for 256 dimensions),
then its steps, eight in five bytes (the first in the highest bits): a row's signature is its first
bytes, read without decoding anything (:func:`packed_signatures`).

A row of zeros (the passage of an empty text) is kept as bytes of zeros, which no other row makes (every
component below zero and within the first step would need each smaller than a ninth of the root mean
square of all of them), and read back as zeros.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from itertools import accumulate
from typing import TYPE_CHECKING, TypeVar, cast

import numpy as np

from mail_imap_mcp.meaning.vectors import LARGE, signatures

if TYPE_CHECKING:
    import numpy.typing as npt

    from mail_imap_mcp.meaning.vectors import Floats, Int8s, Words

    Bytes = npt.NDArray[np.uint8]

Key = TypeVar("Key")

#: Where the steps end, in root mean squares of the row.
CLIP = 3.5
#: Steps of a component's size (five bits).
STEPS = 32
#: The first step whose components are all large (:data:`~mail_imap_mcp.meaning.vectors.LARGE` times the
#: root mean square falls in the step below it).
LARGE_STEP = math.ceil(LARGE * STEPS / CLIP)


def sign_bytes(dimensions: int) -> int:
    """The bytes of a row's signs: whole 64-bit words, as a signature is held."""
    return -(-dimensions // 64) * 8


def row_bytes(dimensions: int) -> int:
    """The bytes of one packed row: its signs, then five bytes for every eight steps (the last eight
    padded)."""
    return sign_bytes(dimensions) + -(-dimensions // 8) * 5


def packed(vectors: Floats) -> Bytes:
    """Rows of floats as packed rows: their signs, then their steps."""
    rows = np.asarray(vectors, dtype=np.float32)
    count, dimensions = rows.shape
    spread = np.sqrt(np.einsum("ij,ij->i", rows, rows) / max(dimensions, 1))[:, None]
    scale = np.divide(STEPS / CLIP, spread, out=np.zeros_like(spread), where=spread > 0)
    # A component above zero is in step ceil(x) - 1 above; one at zero or below in step -ceil(x) below.
    steps = np.abs(np.ceil(rows * scale))
    steps -= rows > 0
    steps = np.clip(steps, 0, STEPS - 1).astype(np.uint8)
    pad = -dimensions % 8
    if pad:
        steps = np.pad(steps, ((0, 0), (0, pad)))
    s = [steps[:, at::8] for at in range(8)]
    fives = np.empty((count, s[0].shape[1], 5), dtype=np.uint8)
    fives[:, :, 0] = (s[0] << 3) | (s[1] >> 2)
    fives[:, :, 1] = ((s[1] & 3) << 6) | (s[2] << 1) | (s[3] >> 4)
    fives[:, :, 2] = ((s[3] & 15) << 4) | (s[4] >> 1)
    fives[:, :, 3] = ((s[4] & 1) << 7) | (s[5] << 2) | (s[6] >> 3)
    fives[:, :, 4] = ((s[6] & 7) << 5) | s[7]
    found: Bytes = np.concatenate([signatures(rows).view(np.uint8), fives.reshape(count, -1)], axis=1)
    found[spread[:, 0] == 0] = 0  # a row of zeros: bytes of zeros
    return found


def _zeros(rows: Bytes) -> npt.NDArray[np.bool_]:
    """Which packed rows are bytes of zeros (a row of zeros), read eight bytes at a time where they fit."""
    words = rows.view(np.uint64) if rows.shape[1] % 8 == 0 and rows.flags.c_contiguous else rows
    return cast("npt.NDArray[np.bool_]", ~words.any(axis=1))


def _steps(rows: Bytes, dimensions: int) -> Bytes:
    """The step (0 to 31) of each component of packed rows, one row of ``dimensions`` a row."""
    count = len(rows)
    fives = rows[:, sign_bytes(dimensions) :].reshape(count, -1, 5)
    b = [fives[:, :, at] for at in range(5)]
    steps = np.empty((count, fives.shape[1], 8), dtype=np.uint8)
    steps[:, :, 0] = b[0] >> 3
    steps[:, :, 1] = ((b[0] & 7) << 2) | (b[1] >> 6)
    steps[:, :, 2] = (b[1] >> 1) & 31
    steps[:, :, 3] = ((b[1] & 1) << 4) | (b[2] >> 4)
    steps[:, :, 4] = ((b[2] & 15) << 1) | (b[3] >> 7)
    steps[:, :, 5] = (b[3] >> 2) & 31
    steps[:, :, 6] = ((b[3] & 3) << 3) | (b[4] >> 5)
    steps[:, :, 7] = b[4] & 31
    found: Bytes = steps.reshape(count, -1)[:, :dimensions]
    return found


def unpacked(rows: Bytes, dimensions: int) -> Int8s:
    """Packed rows read back as int8 rows of ``dimensions`` (bytes of zeros: a row of zeros)."""
    signs = np.unpackbits(rows[:, : sign_bytes(dimensions)], axis=1)[:, :dimensions]  # 1: above zero
    steps = _steps(rows, dimensions)
    # The middle of step m, 2 m + 1 above zero and -(2 m + 1) below, is 2 m with its lowest bit set, or
    # every bit flipped (two's complement): 2 m xor 1, or 2 m xor 255.
    levels = steps << 1
    levels ^= (signs * 254) ^ 255
    found: Int8s = levels.view(np.int8)
    found[_zeros(rows)] = 0
    return found


def packed_signatures(rows: Bytes, dimensions: int) -> Words:
    """The signatures of packed rows (:func:`~mail_imap_mcp.meaning.vectors.signatures`): their first
    bytes."""
    return np.ascontiguousarray(rows[:, : sign_bytes(dimensions)]).view(np.uint64)


def packed_large(rows: Bytes, dimensions: int) -> Words:
    """The large components of packed rows (:func:`~mail_imap_mcp.meaning.vectors.large_bits`), from
    their steps alone: a step says a component's size against its row's root mean square, those from
    :data:`LARGE_STEP` up lie beyond :data:`~mail_imap_mcp.meaning.vectors.LARGE`, nothing else read
    back (from the rows read back, a million messages' first search read its copy in 7.5 s, not 2.7)."""
    return signatures(_steps(rows, dimensions) >= LARGE_STEP)


def unpacked_by(codes: Mapping[Key, Sequence[bytes]], dimensions: int) -> dict[Key, Int8s]:
    """Each key's packed rows (a ``bytes`` a row, as PostgreSQL keeps them) read back as int8 rows
    (:func:`unpacked`), all at once (a call a key costs numpy's 30 microseconds each)."""
    keys = [key for key, rows in codes.items() if rows]
    if not keys:
        return {}
    width = row_bytes(dimensions)
    joined = b"".join(row for key in keys for row in codes[key])
    every = unpacked(np.frombuffer(joined, dtype=np.uint8).reshape(-1, width), dimensions)
    return dict(zip(keys, runs(every, [len(codes[key]) for key in keys]), strict=True))


Scalar = TypeVar("Scalar", bound=np.generic)


def runs(rows: npt.NDArray[Scalar], counts: Iterable[int]) -> list[npt.NDArray[Scalar]]:
    """``rows`` cut into runs of ``counts`` rows in turn (views): what ``np.split`` at their ends gives,
    sliced (``np.split`` cost 0.8 ms for a nearest's 400 messages, most of reading their rows back)."""
    ends = list(accumulate(counts))
    return [rows[start:end] for start, end in zip([0, *ends[:-1]], ends, strict=True)]

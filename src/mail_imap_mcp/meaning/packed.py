"""Vectors kept in six bits a component, four to three bytes: how the SQLite engines store a passage's
vector (192 bytes for 256 dimensions, three quarters of :func:`~mail_imap_mcp.meaning.vectors.quantised`'s
int8 row).

A component is coded by where it falls among 64 equal steps between -:data:`CLIP` and +:data:`CLIP` times
its row's root mean square (a unit vector's components are close to normal: the shipped model's have a
kurtosis of 3.1; beyond 3.5 times lie 0.05% of them, kept at the last step), code ``q`` standing for the
middle of its step, read back (:func:`unpacked`) as the odd int8 ``2 q - 63``, so a row read back is
ranked by :func:`~mail_imap_mcp.meaning.vectors.cosines` as an int8 row is. On the meaning set's passages
the cosine with a query moves by 0.0021 (root mean square; 0.0005 for int8 rows, 0.0063 for four bits a
component, which lost a relevant message from the first ten where this and int8 did not:
docs/benchmarks.md). A component above zero gets a code of 32 or more and a level above zero, so a row's
signature is its vector's (:func:`~mail_imap_mcp.meaning.vectors.signatures`, a bit set where a
component is above zero), read from the codes' high bits alone (:func:`packed_signatures`).

A row of zeros (the passage of an empty text) is kept as bytes of zeros, which no other row makes (every
component at the lowest code would need each below -3.4 times the root mean square of all of them), and
read back as zeros.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

    from mail_imap_mcp.meaning.vectors import Floats, Int8s, Words

    Bytes = npt.NDArray[np.uint8]

#: Bits a component.
BITS = 6
#: Where the codes end, in root mean squares of the row.
CLIP = 3.5
_HALF = 1 << (BITS - 1)
#: The code of a component just below zero (pads a row to four components).
_BELOW_ZERO = _HALF - 1


def row_bytes(dimensions: int) -> int:
    """The bytes of one packed row: three for every four components (the last four padded)."""
    return -(-dimensions // 4) * 3


def packed(vectors: Floats) -> Bytes:
    """Rows of floats as rows of six-bit codes, four to three bytes, the first in the highest bits."""
    rows = np.asarray(vectors, dtype=np.float32)
    count, dimensions = rows.shape
    spread = np.sqrt(np.einsum("ij,ij->i", rows, rows) / max(dimensions, 1))[:, None]
    scale = np.divide(_HALF / CLIP, spread, out=np.zeros_like(spread), where=spread > 0)
    # ceil - 1: a component at zero or below gets a code below the middle, above zero one at it or above.
    codes = np.clip(np.ceil(rows * scale) - 1 + _HALF, 0, 2 * _HALF - 1).astype(np.uint32)
    pad = -dimensions % 4
    if pad:
        codes = np.concatenate([codes, np.full((count, pad), _BELOW_ZERO, dtype=np.uint32)], axis=1)
    quads = codes.reshape(count, -1, 4)
    joined = (quads[:, :, 0] << 18) | (quads[:, :, 1] << 12) | (quads[:, :, 2] << 6) | quads[:, :, 3]
    found: Bytes = np.stack([joined >> 16, joined >> 8, joined], axis=2).astype(np.uint8).reshape(count, -1)
    found[spread[:, 0] == 0] = 0  # a row of zeros: bytes of zeros
    return found


def _triples(rows: Bytes) -> tuple[Bytes, Bytes, Bytes]:
    """The first, second and third bytes of each three of packed rows (each three: four codes)."""
    triples = rows.reshape(len(rows), rows.shape[1] // 3, 3)
    return triples[:, :, 0], triples[:, :, 1], triples[:, :, 2]


def _zeros(rows: Bytes) -> npt.NDArray[np.bool_]:
    """Which packed rows are bytes of zeros (a row of zeros), read eight bytes at a time where they fit."""
    words = rows.view(np.uint64) if rows.shape[1] % 8 == 0 and rows.flags.c_contiguous else rows
    return cast("npt.NDArray[np.bool_]", ~words.any(axis=1))


def unpacked(rows: Bytes, dimensions: int) -> Int8s:
    """Packed rows read back as int8 rows of ``dimensions`` (bytes of zeros: a row of zeros)."""
    first, second, third = _triples(rows)
    codes = np.empty((len(rows), first.shape[1], 4), dtype=np.uint8)
    np.right_shift(first, 2, out=codes[:, :, 0])
    codes[:, :, 1] = ((first & 3) << 4) | (second >> 4)
    codes[:, :, 2] = ((second & 15) << 2) | (third >> 6)
    np.bitwise_and(third, 63, out=codes[:, :, 3])
    codes *= 2
    codes -= 2 * _HALF - 1  # the odd level 2 q - 63, wrapped into a byte and read as an int8
    found: Int8s = codes.reshape(len(rows), -1)[:, :dimensions].view(np.int8)
    found[_zeros(rows)] = 0
    return found


def packed_signatures(rows: Bytes) -> Words:
    """The signatures of packed rows (:func:`~mail_imap_mcp.meaning.vectors.signatures`: a bit per
    component above zero, the first in the highest bit, as 64-bit words), from the codes' high bits."""
    first, second, third = _triples(rows)
    nibbles = ((first >> 4) & 8) | ((first << 1) & 4) | ((second >> 2) & 2) | ((third >> 5) & 1)
    if nibbles.shape[1] % 2:
        nibbles = np.pad(nibbles, ((0, 0), (0, 1)))
    signs = (nibbles[:, 0::2] << 4) | nibbles[:, 1::2]
    pad = -signs.shape[1] % 8
    if pad:
        signs = np.pad(signs, ((0, 0), (0, pad)))
    return np.ascontiguousarray(signs, dtype=np.uint8).view(np.uint64)

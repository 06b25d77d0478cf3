"""Vectors kept in four bits a component, two to a byte: how the SQLite engines store a passage's vector
(128 bytes for 256 dimensions, half of :func:`~mail_imap_mcp.meaning.vectors.quantised`'s int8 row).

A component is coded by where it falls, in units of its row's root mean square, among the 16 levels of
the Lloyd-Max quantiser of a normal distribution (a unit vector's components are close to normal: the
shipped model's have a kurtosis of 3.1), the first component in a byte's high four bits. Read back
(:func:`unpacked`), each code is its level as an int8 (the level times :data:`LEVEL_SCALE`), so a row
read back is ranked by :func:`~mail_imap_mcp.meaning.vectors.cosines` as an int8 row is: the cosine with a
query moves by 0.006 (root mean square; 0.0005 for int8) on the meaning set's passages. A component above
zero gets a code of 8 or more and a level above zero, so a row's signature is its vector's
(:func:`~mail_imap_mcp.meaning.vectors.signatures`, bit set where a component is above zero), read from
the codes' high bits alone (:func:`packed_signatures`).

A row of zeros (the passage of an empty text) is kept as bytes of zeros, which no other row makes (every
component at the lowest level would need each below -2.4 times the root mean square of all of them), and
read back as zeros.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

    Floats = npt.NDArray[np.float32]
    Int8s = npt.NDArray[np.int8]
    Bytes = npt.NDArray[np.uint8]
    Words = npt.NDArray[np.uint64]

#: The positive levels of the 16-level Lloyd-Max quantiser of a standard normal distribution.
_LLOYD_MAX = np.array([0.1284, 0.3881, 0.6568, 0.9424, 1.2562, 1.6181, 2.0690, 2.7326], dtype=np.float32)
#: Where a component's magnitude passes from one level to the next (midway between them).
_EDGES = (_LLOYD_MAX[1:] + _LLOYD_MAX[:-1]) / 2
#: What each level is multiplied by to be read back as an int8 (the largest, 2.73, as 126).
LEVEL_SCALE = 46
#: Each code's level as an int8: codes 0-7 below zero (0 the lowest), 8-15 above.
LEVELS = np.round(np.concatenate([-_LLOYD_MAX[::-1], _LLOYD_MAX]) * LEVEL_SCALE).astype(np.int8)
#: Each byte's two components read back (the high four bits first), as the two bytes of a uint16.
_PAIRS = np.ascontiguousarray(np.stack([LEVELS[np.arange(256) >> 4], LEVELS[np.arange(256) & 15]], axis=1)).view(
    np.uint16
)[:, 0]
#: Each byte's two sign bits (the high four bits' in the higher bit).
_SIGNS = ((np.arange(256) >> 6) & 2 | (np.arange(256) >> 3) & 1).astype(np.uint8)


def row_bytes(dimensions: int) -> int:
    """The bytes of one packed row."""
    return -(-dimensions // 2)


def packed(vectors: Floats) -> Bytes:
    """Rows of floats as rows of four-bit codes, two a byte (an odd last component padded with a code of
    7: below zero, no sign bit; dropped when read back)."""
    rows = np.asarray(vectors, dtype=np.float32)
    count, dimensions = rows.shape
    spread = np.sqrt(np.einsum("ij,ij->i", rows, rows) / max(dimensions, 1))[:, None]
    magnitude = np.abs(rows) / np.where(spread > 0, spread, 1)
    step = np.zeros(rows.shape, dtype=np.uint8)  # 0 (nearest zero) to 7: the edges it passes
    for edge in _EDGES:
        step += magnitude > edge
    codes = np.where(rows > 0, 8 + step, 7 - step).astype(np.uint8)
    if dimensions % 2:
        codes = np.concatenate([codes, np.full((count, 1), 7, dtype=np.uint8)], axis=1)
    found: Bytes = (codes[:, 0::2] << 4) | codes[:, 1::2]
    found[spread[:, 0] == 0] = 0  # a row of zeros: bytes of zeros
    return found


def unpacked(rows: Bytes, dimensions: int) -> Int8s:
    """Packed rows read back as int8 rows of ``dimensions`` (bytes of zeros: a row of zeros)."""
    found: Int8s = _PAIRS.take(rows).view(np.int8)[:, :dimensions]
    found[~rows.any(axis=1)] = 0
    return found


def packed_signatures(rows: Bytes) -> Words:
    """The signatures of packed rows (:func:`~mail_imap_mcp.meaning.vectors.signatures`: a bit per
    component above zero, the first in the highest bit, as 64-bit words), from the codes' high bits."""
    pairs = _SIGNS[rows]
    pad = -pairs.shape[1] % 32  # four bytes of codes make a byte of signs; eight of those a word
    if pad:
        pairs = np.pad(pairs, ((0, 0), (0, pad)))
    quads = pairs.reshape(len(rows), -1, 4)
    signs = (quads[:, :, 0] << 6) | (quads[:, :, 1] << 4) | (quads[:, :, 2] << 2) | quads[:, :, 3]
    return np.ascontiguousarray(signs.astype(np.uint8)).view(np.uint64)

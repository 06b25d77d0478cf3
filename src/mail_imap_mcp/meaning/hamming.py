"""The Hamming distance of one signature to many (:func:`distances`) and the positions of the smallest
of them (:func:`smallest`): the first pass of search by meaning
(:meth:`~mail_imap_mcp.meaning.vectors.Signatures.first_pass`), in numpy, a block of signatures at a
time, the distances counted rather than sorted (they are small integers)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

    Words = npt.NDArray[np.uint64]

#: Signatures whose Hamming distance is computed at once (:func:`distances`).
HAMMING_BLOCK = 1 << 17
#: One distance in how many :func:`smallest` samples to bound those it counts.
SAMPLED = 16


def distances(bits: Words, target: Words, size: int) -> npt.NDArray[np.uint16]:
    """The Hamming distance of ``target`` (a signature) to each of the first ``size`` signatures of
    ``bits`` (word-major), a block at a time into buffers made once: every word of a block stays in the
    cache (whole columns at a time: three passes over ten megabytes a word at a million passages, four
    times as long)."""
    distance = np.empty(size, dtype=np.uint16)
    block = min(size, HAMMING_BLOCK)
    differ = np.empty(block, dtype=np.uint64)
    counted = np.empty(block, dtype=np.uint8)
    for start in range(0, size, block):
        end = min(start + block, size)
        into, xor, count = distance[start:end], differ[: end - start], counted[: end - start]
        for word in range(len(bits)):
            np.bitwise_xor(bits[word, start:end], target[word], out=xor)
            np.bitwise_count(xor, out=count)
            if word:
                np.add(into, count, out=into)
            else:
                into[:] = count
    return distance


def smallest(distance: npt.NDArray[np.uint16], keep: int, far: int) -> npt.NDArray[np.intp]:
    """The positions of the ``keep`` smallest distances below ``far`` (:func:`smallest_of`), found
    among those within a bound that a sample of every :data:`SAMPLED` th distance says holds more than
    ``keep`` (counting every distance took most of the first pass's time after the Hamming distance):
    the same positions in the same order, whatever the sample says (else found among them all)."""
    sample = np.cumsum(np.bincount(distance[::SAMPLED], minlength=far + 1)[:far]) * SAMPLED
    bound = int(np.searchsorted(sample, 2 * keep + 64 * SAMPLED))
    if bound < far - 1:
        near = np.flatnonzero(distance <= bound)
        if len(near) > keep:  # more than ``keep`` within it: the same bound, the same ties taken first
            found: npt.NDArray[np.intp] = near[smallest_of(distance[near], keep, far)]
            return found
    return smallest_of(distance, keep, far)


def smallest_of(distance: npt.NDArray[np.uint16], keep: int, far: int) -> npt.NDArray[np.intp]:
    """The positions of the ``keep`` smallest distances below ``far`` (distances are small integers:
    counted, not sorted)."""
    reached = np.cumsum(np.bincount(distance, minlength=far + 1)[:far])
    if reached[-1] <= keep:
        return np.flatnonzero(distance < far)
    bound = int(np.searchsorted(reached, keep))  # the distance at which ``keep`` are reached
    closer = np.flatnonzero(distance < bound)
    at_bound = np.flatnonzero(distance == bound)[: keep - len(closer)]
    return np.concatenate([closer, at_bound])

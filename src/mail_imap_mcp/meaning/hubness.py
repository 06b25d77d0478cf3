"""Hubness reduction for search by meaning: a message near everything is near nothing in particular.

A static model's averaged vectors crowd together where many messages say much the same (notifications,
newsletters, bookings from one template): such a message is among the nearest to many descriptions it
does not answer (a "hub"). Cross-domain similarity local scaling (CSLS; Conneau et al., "Word translation
without parallel data", 2018) ranks by a message's cosine to the query less its cosine to its own
neighbourhood: ``2 cos(q, d) - r(q) - r(d)``, where ``r(d)`` is the mean cosine of ``d`` to its
:data:`NEIGHBOURS` nearest messages. ``r(q)`` is the same for every message of one query, so the order is
that of ``cos(q, d) - r(d) / 2`` (:func:`locally_scaled`). Pure numpy: no index, no model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

    Floats = npt.NDArray[np.float32]

#: The neighbourhood of a message whose mean cosine is its density: CSLS's own choice (k = 10).
NEIGHBOURS = 10
#: How much a message's density lowers its similarity: CSLS's ``2 cos - r(d)``, halved.
DENSITY_WEIGHT = 0.5


def unit_rows(rows: Floats) -> Floats:
    """``rows`` each of length 1 (a row of zeros stays one)."""
    matrix = np.asarray(rows, dtype=np.float32)
    lengths = np.linalg.norm(matrix, axis=1, keepdims=True)
    out: Floats = np.divide(matrix, lengths, out=np.zeros_like(matrix), where=lengths > 0)
    return out


def densities(
    vectors: Floats,
    reference: Floats,
    *,
    neighbours: int = NEIGHBOURS,
    own: bool = False,
    itself: Sequence[int] | None = None,
) -> Floats:
    """Each row of ``vectors``' mean cosine to its ``neighbours`` nearest rows of ``reference`` (rows of
    length 1; fewer rows than that: all of them). A row is not its own neighbour: ``own``, ``vectors``
    are ``reference``'s rows in the same order; ``itself``, each row's place in ``reference`` (-1: not
    there)."""
    similarity = np.asarray(vectors, dtype=np.float32) @ np.asarray(reference, dtype=np.float32).T
    left_out = own
    if own:
        np.fill_diagonal(similarity, -np.inf)
    if itself is not None:
        places = np.asarray(itself, dtype=np.int64).reshape(-1)
        there = np.flatnonzero(places >= 0)
        similarity[there, places[there]] = -np.inf
        left_out = left_out or len(there) > 0
    keep = min(neighbours, similarity.shape[1] - left_out)
    if keep <= 0:
        return np.zeros(len(similarity), dtype=np.float32)
    # Sorted before the mean: rows of the same values (copies of one message) get the same sum.
    nearest = np.sort(np.partition(similarity, similarity.shape[1] - keep, axis=1)[:, -keep:], axis=1)
    found: Floats = nearest.mean(axis=1).astype(np.float32)
    return found


def locally_scaled(similarities: Floats, density: Floats, *, weight: float = DENSITY_WEIGHT) -> Floats:
    """``similarities`` (cosines to the query) less ``weight`` times each message's ``density``: CSLS's
    order."""
    scaled: Floats = (np.asarray(similarities, dtype=np.float32) - weight * density).astype(np.float32)
    return scaled


def message_vectors(messages: Sequence[Floats], dimensions: int) -> Floats:
    """One unit row per message: the mean of its passages' rows, each made of length 1 first (a
    message's vector, whatever scale its rows were stored at); a message without rows: zeros."""
    counts = np.fromiter((len(rows) for rows in messages), dtype=np.int64, count=len(messages))
    out = np.zeros((len(messages), dimensions), dtype=np.float32)
    if not counts.any():
        return out
    rows = unit_rows(
        np.concatenate([np.asarray(rows, dtype=np.float32).reshape(-1, dimensions) for rows in messages])
    )
    np.add.at(out, np.repeat(np.arange(len(messages)), counts), rows)
    return unit_rows(out)


#: A unit vector's components as whole numbers (:func:`whole_rows`): two such vectors' products are
#: whole numbers a float32 sums exactly (512 x 127 x 127 < 2 ** 24), in whatever order a product of
#: matrices takes them, so a density is the same found in a batch of the pass or among a page's candidates.
WHOLE = 127
#: Rows of a reference multiplied at once (:func:`whole_densities`): 2,048 x 512 float32 is 4 MB (1,024:
#: 0.137 CPU-ms a message of 256 against 10,000, 2,048 and 4,096: 0.119, 10,000 at once: 0.189; since the
#: products go into one buffer, one BLAS thread: 1,024 0.093-0.097, 2,048 0.091-0.094, 4,096 0.089-0.097).
REFERENCE_CHUNK = 2048


def whole_rows(messages: Sequence[Floats], dimensions: int) -> npt.NDArray[np.int8]:
    """:func:`message_vectors` as whole numbers (times :data:`WHOLE`, rounded): a quarter of the memory."""
    return np.rint(message_vectors(messages, dimensions) * WHOLE).astype(np.int8)


def whole_densities(
    mine: npt.NDArray[np.int8],
    reference: npt.NDArray[np.int8],
    itself: Sequence[int],
    *,
    neighbours: int = NEIGHBOURS,
) -> Floats:
    """:func:`densities` of rows of :func:`whole_rows` against a reference of them (``itself``: each row's
    place in ``reference``, -1 where it is not there), the reference multiplied a chunk at a time (the
    memory of a float32 copy of a chunk, not of it whole) into one buffer after the best ``neighbours``
    so far (no array made per chunk), each sum exact: the same value whatever the rows it is found beside
    or the chunk."""
    places = np.asarray(itself, dtype=np.int64).reshape(-1)
    keep = min(neighbours, len(reference) - bool((places >= 0).any()))
    if keep <= 0 or not len(mine):
        return np.zeros(len(mine), dtype=np.float32)
    rows = np.asarray(mine, dtype=np.float32)
    chunk = min(REFERENCE_CHUNK, len(reference))
    part = np.empty((chunk, reference.shape[1]), dtype=np.float32)
    # The best ``keep`` so far in the first columns, a chunk's products after them: no array made per chunk.
    joined = np.full((len(rows), keep + chunk), -np.inf, dtype=np.float32)
    for start in range(0, len(reference), chunk):
        size = min(chunk, len(reference) - start)
        np.copyto(part[:size], reference[start : start + size])
        similarity = joined[:, keep : keep + size]
        np.matmul(rows, part[:size].T, out=similarity)
        there = np.flatnonzero((places >= start) & (places < start + size))
        similarity[there, places[there] - start] = -np.inf
        joined[:, : keep + size].partition(size, axis=1)
        joined[:, :keep] = joined[:, size : size + keep]
    best = joined[:, :keep]
    found: Floats = (best.astype(np.float64).sum(axis=1) / (keep * WHOLE * WHOLE)).astype(np.float32)
    return found

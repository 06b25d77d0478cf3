"""Hubness reduction for search by meaning: a message near everything is near nothing in particular.

A static model's averaged vectors crowd together where many messages say much the same (notifications,
newsletters, bookings from one template): such a message is among the nearest to many descriptions it
does not answer (a "hub"). Cross-domain similarity local scaling (CSLS; Conneau et al., "Word translation
without parallel data", 2018) ranks by a message's cosine to the query less its cosine to its own
neighbourhood: ``2 cos(q, d) - r(q) - r(d)``, where ``r(d)`` is the mean cosine of ``d`` to its
:data:`NEIGHBOURS` nearest messages. ``r(q)`` is the same for every message of one query, so the order is
that of ``cos(q, d) - r(d) / 2`` (:func:`locally_scaled`). Pure numpy: no index, no model."""

from __future__ import annotations

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
    vectors: Floats, reference: Floats, *, neighbours: int = NEIGHBOURS, own: bool = False
) -> Floats:
    """Each row of ``vectors``' mean cosine to its ``neighbours`` nearest rows of ``reference`` (rows of
    length 1; fewer rows than that: all of them). ``own``: ``vectors`` are rows of ``reference`` in the
    same order (each row's cosine to itself left out)."""
    similarity = np.asarray(vectors, dtype=np.float32) @ np.asarray(reference, dtype=np.float32).T
    if own:
        np.fill_diagonal(similarity, -np.inf)
    available = similarity.shape[1] - (1 if own else 0)
    keep = min(neighbours, available)
    if keep <= 0:
        return np.zeros(len(similarity), dtype=np.float32)
    nearest = np.partition(similarity, similarity.shape[1] - keep, axis=1)[:, -keep:]
    found: Floats = nearest.mean(axis=1).astype(np.float32)
    return found


def locally_scaled(similarities: Floats, density: Floats, *, weight: float = DENSITY_WEIGHT) -> Floats:
    """``similarities`` (cosines to the query) less ``weight`` times each message's ``density``: CSLS's
    order."""
    scaled: Floats = (np.asarray(similarities, dtype=np.float32) - weight * density).astype(np.float32)
    return scaled

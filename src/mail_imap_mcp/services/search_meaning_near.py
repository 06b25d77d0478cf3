"""The ranking by meaning that ``about`` and ``like`` fuse with their words: the store's nearest messages
(:meth:`~mail_imap_mcp.index.vectors.VectorStore.nearest`), those pointing the vector's way at all,
ordered again with their hubness reduced (:func:`~.search_meaning_hubs.dehubbed`); for ``about``, its
vector then moved towards its first messages and the nearest sought again, reduced again
(:mod:`mail_imap_mcp.meaning.feedback`). ``like`` ranks by a message's own vectors, which say the
topic in its own words already: no feedback. On the meaning set (``scripts/meaning_recall``) the
feedback takes ``about``'s recall at 10 of the English paraphrases from 0.62 to 0.79; it costs a second
nearest (docs/benchmarks.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mail_imap_mcp.index.store import Hit
from mail_imap_mcp.index.vectors import VectorStore
from mail_imap_mcp.meaning import feedback
from mail_imap_mcp.query.tree import Query
from mail_imap_mcp.services.search_meaning_hubs import dehubbed

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: The cosine similarity a message found by meaning exceeds: the shipped model's similarities are small
#: (0.1 to 0.6 for mail on the subject asked, -0.1 to 0.15 for unrelated mail), so its ranking is what
#: counts, not a threshold; a message pointing away from the description is not near it at all.
NEAR_ENOUGH = 0.0


def by_meaning(
    vectors: VectorStore,
    model: str,
    counted: int,
    vector: npt.NDArray[np.float32],
    query: Query | None,
    folders: Sequence[str],
    limit: int,
    *,
    leave_out: tuple[str, int] | None = None,
    fed_back: bool = True,
) -> list[Hit]:
    """The ``limit`` messages of ``folders`` that ``query`` matches (None: every one) nearest ``vector``,
    hubness reduced (``counted``: messages with vectors of ``model``), without ``leave_out``; searched
    again from the vector moved towards the first of them where ``fed_back``."""
    ranked = _nearest(vectors, model, counted, vector, query, folders, limit, leave_out)
    first = [(hit.folder, hit.uid) for hit in ranked[: feedback.FEEDBACK_MESSAGES]]
    if not fed_back or not first:
        return ranked
    stored = vectors.vectors_of(first)
    moved = feedback.fed_back(vector, [stored[place] for place in first if place in stored])
    return _nearest(vectors, model, counted, moved, query, folders, limit, leave_out)


def _nearest(
    vectors: VectorStore,
    model: str,
    counted: int,
    vector: npt.NDArray[np.float32],
    query: Query | None,
    folders: Sequence[str],
    limit: int,
    leave_out: tuple[str, int] | None,
) -> list[Hit]:
    near = vectors.nearest(vector, query, folders, limit)
    kept = [hit for hit in near if (hit.folder, hit.uid) != leave_out and 1 - hit.rank > NEAR_ENOUGH]
    return dehubbed(vectors, model, counted, kept)

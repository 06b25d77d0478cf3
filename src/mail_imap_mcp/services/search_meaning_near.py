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
from dataclasses import dataclass
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


@dataclass(frozen=True)
class NearestAsk:
    """Where a ranking by meaning looks: the messages of ``folders`` that ``query`` matches (None: every
    one) in ``vectors``, ``limit`` of them, but ``leave_out``; ``counted``: the messages with vectors of
    ``model`` (the reference of their hubness, :func:`~.search_meaning_hubs.dehubbed`)."""

    vectors: VectorStore
    model: str
    counted: int
    query: Query | None
    folders: Sequence[str]
    limit: int
    leave_out: tuple[str, int] | None = None

    def nearest(self, vector: npt.NDArray[np.float32]) -> list[Hit]:
        """The messages nearest ``vector`` that point its way at all, hubness reduced."""
        near = self.vectors.nearest(vector, self.query, self.folders, self.limit)
        kept = [hit for hit in near if (hit.folder, hit.uid) != self.leave_out and 1 - hit.rank > NEAR_ENOUGH]
        return dehubbed(self.vectors, self.model, self.counted, kept)


def by_meaning(ask: NearestAsk, vector: npt.NDArray[np.float32], *, fed_back: bool = True) -> list[Hit]:
    """The messages ``ask`` looks among nearest ``vector``, hubness reduced; searched again from the
    vector moved towards the first of them where ``fed_back``."""
    ranked = ask.nearest(vector)
    first = [(hit.folder, hit.uid) for hit in ranked[: feedback.FEEDBACK_MESSAGES]]
    if not fed_back or not first:
        return ranked
    stored = ask.vectors.vectors_of(first)
    return ask.nearest(feedback.fed_back(vector, [stored[place] for place in first if place in stored]))

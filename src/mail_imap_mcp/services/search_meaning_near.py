"""The ranking by meaning that ``about`` and ``like`` fuse with their words: the store's nearest messages
(:meth:`~mail_imap_mcp.index.vectors.VectorStore.nearest`), those pointing the vector's way at all,
ordered again with their hubness reduced (:func:`~.search_meaning_hubs.dehubbed`); for ``about``, its
vector then moved towards its first messages and the nearest sought again, reduced again
(:mod:`mail_imap_mcp.meaning.feedback`). ``like`` ranks by a message's own vectors, which say the
topic in its own words already: no feedback. On the meaning set (``scripts/meaning_recall``) the
feedback takes ``about``'s recall at 10 of the English paraphrases from 0.62 to 0.79; it costs a second
nearest (docs/benchmarks.md)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from mail_imap_mcp.index.store import Hit
from mail_imap_mcp.index.vectors import Densities, Near, Nearness, NearnessStore, VectorStore
from mail_imap_mcp.meaning import feedback
from mail_imap_mcp.query.tree import Query
from mail_imap_mcp.services.search_meaning_hubs import dehubbed, stored_rows

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
    one) in ``vectors``, ``limit`` of them, but ``leave_out``."""

    vectors: VectorStore
    query: Query | None
    folders: Sequence[str]
    limit: int
    leave_out: tuple[str, int] | None = None

    @contextmanager
    def opened(self) -> Iterator[Nearness]:
        """The nearest messages of this search, on one snapshot of the store where it keeps them so
        (:class:`~mail_imap_mcp.index.vectors.NearnessStore`), else asked of it each time. Its class is
        asked, not the store: a wrapper that hands on its attributes is not the store it wraps."""
        if hasattr(type(self.vectors), "nearness"):
            with cast(NearnessStore, self.vectors).nearness(self.query, self.folders) as near:
                yield near
        else:
            yield _AskedEachTime(self)

    def ranked(self, near: Nearness, vector: npt.NDArray[np.float32]) -> list[Near]:
        """The messages nearest ``vector`` that point its way at all, hubness reduced."""
        found = near.near(vector, self.limit)
        kept = [
            one for one in found if (one.folder, one.uid) != self.leave_out and 1 - one.rank > NEAR_ENOUGH
        ]
        rows = {(one.folder, one.uid): one.rows for one in kept if one.rows is not None}
        return dehubbed(self.vectors, kept, near.densities(kept), rows)


def by_meaning(
    ask: NearestAsk, vector: npt.NDArray[np.float32], *, fed_back: bool = True, near: Nearness | None = None
) -> list[Near]:
    """The messages ``ask`` looks among nearest ``vector``, hubness reduced; searched again from the
    vector moved towards the first of them where ``fed_back`` (their rows those the first search read).
    ``near``: the search opened (:meth:`NearestAsk.opened`; None: opened for this ranking alone)."""
    if near is None:
        with ask.opened() as opened:
            return by_meaning(ask, vector, fed_back=fed_back, near=opened)
    ranked = ask.ranked(near, vector)
    first = ranked[: feedback.FEEDBACK_MESSAGES]
    if not fed_back or not first:
        return ranked
    places = [(one.folder, one.uid) for one in first]
    rows = {(one.folder, one.uid): one.rows for one in first if one.rows is not None}
    stored = stored_rows(ask.vectors, places, rows)
    return ask.ranked(near, feedback.fed_back(vector, [stored[place] for place in places if place in stored]))


class _AskedEachTime:
    """:class:`~mail_imap_mcp.index.vectors.Nearness` of a store without it: its nearest hits, asked
    each time (their rows not read)."""

    def __init__(self, ask: NearestAsk) -> None:
        self._ask = ask
        self._found: list[Hit] = []

    def near(self, vector: npt.NDArray[np.float32], limit: int) -> list[Near]:
        ask = self._ask
        hits = ask.vectors.nearest(vector, ask.query, ask.folders, limit)
        first = len(self._found)
        self._found += hits
        return [
            Near(hit.folder, hit.uid, hit.rank, hit.arrival, hit.size, None, first + n)
            for n, hit in enumerate(hits)
        ]

    def hits(self, near: Sequence[Near]) -> list[Hit]:
        return [self._found[one.key] for one in near]

    def densities(self, near: Sequence[Near]) -> Densities | None:
        return self._ask.vectors.densities_of([(one.folder, one.uid) for one in near])

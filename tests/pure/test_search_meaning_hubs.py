"""The ranking by meaning with hubness reduced (services/search_meaning_hubs.py), on a vector store of a
few messages in memory (the densities' half of the contract in memory, tests/support/densities.py): a
message from a crowd of look-alikes ranks below one as near the query that stands alone, by the densities
the pass keeps; a candidate without one has it found against the same reference, read once and kept while
a search needs it; an index without a reference, or a single message, keeps the store's order."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from mail_imap_mcp.index.densities import DensityKeeper
from mail_imap_mcp.index.store import Hit
from mail_imap_mcp.index.vectors import VectorCounts
from mail_imap_mcp.services.search_meaning_hubs import DENSITIES_KEPT, dehubbed, forget
from tests.support.densities import DensitiesInMemory

Place = tuple[str, int]


def _at(degrees: float) -> npt.NDArray[np.float32]:
    radians = np.radians(degrees)
    return np.array([[np.cos(radians), np.sin(radians), 0.0]], dtype=np.float32)


class _Vectors(DensitiesInMemory):
    """A vector store in memory: each message's rows; counts each read of them."""

    def __init__(self, rows: dict[Place, npt.NDArray[np.float32]]) -> None:
        super().__init__()
        self.vectors = rows
        self.asked: list[Place] = []

    def vector_counts(self, model: str, folders: Sequence[str] | None = None) -> VectorCounts:
        return VectorCounts(len(self.vectors), len(self.vectors))

    def vectors_of(self, places: Sequence[Place]) -> dict[Place, npt.NDArray[np.float32]]:
        self.asked += places
        return {place: self.vectors[place] for place in places if place in self.vectors}

    def vector_sample(self, limit: int) -> dict[Place, npt.NDArray[np.float32]]:
        return dict(list(self.vectors.items())[:limit])

    def found(self) -> _Vectors:
        """The pass behind the words: the reference drawn, every density found."""
        DensityKeeper(self, "m").fill(lambda: False, lambda: None)  # type: ignore[arg-type]
        self.asked.clear()
        return self


def _hit(uid: int, cosine: float) -> Hit:
    return Hit("INBOX", 1, uid, 1.0 - cosine, 0, ())


def _crowd_and_one_alone() -> _Vectors:
    """Twelve look-alikes at 39.55-40 degrees (1-12) and one message alone at -40 (20)."""
    rows = {("INBOX", uid): _at(39.5 + uid * 0.05) for uid in range(1, 13)}
    rows["INBOX", 20] = _at(-40)
    return _Vectors(rows)


def _ranked(vectors: _Vectors, near: list[Hit]) -> list[Hit]:
    return dehubbed(vectors, near, vectors.densities_of([(hit.folder, hit.uid) for hit in near]))  # type: ignore[arg-type]


def test_a_message_from_a_crowd_ranks_below_one_as_near_that_stands_alone() -> None:
    vectors = _crowd_and_one_alone().found()
    query = _at(0)[0]
    near = [_hit(uid, float(vectors.vectors["INBOX", uid][0] @ query)) for uid in (1, 2, 20)]
    assert near[0].rank < near[1].rank < near[2].rank  # the store's order: the crowd a little nearer
    assert [hit.uid for hit in _ranked(vectors, near)] == [20, 1, 2]
    assert vectors.asked == []  # the densities kept are read: no vector is


def test_a_density_not_kept_is_found_against_the_same_reference_and_kept_while_needed() -> None:
    vectors = _crowd_and_one_alone().found()
    kept = dict(vectors.densities)
    vectors.densities.clear()  # as just after the reference is drawn again
    ranked = _ranked(vectors, [_hit(1, 0.76), _hit(20, 0.76)])
    assert ranked[0].uid == 20 and vectors.asked[-2:] == [("INBOX", 1), ("INBOX", 20)]
    vectors.asked.clear()
    _ranked(vectors, [_hit(2, 0.76), _hit(1, 0.76), _hit(20, 0.76)])
    assert vectors.asked == [("INBOX", 2)]  # only the one not met before is read
    vectors.densities.update(kept)
    vectors.asked.clear()
    forget(vectors)  # type: ignore[arg-type]
    _ranked(vectors, [_hit(1, 0.76), _hit(20, 0.76)])
    assert vectors.asked == [] and DENSITIES_KEPT >= 10_000


def test_without_a_reference_or_with_one_message_the_order_is_the_stores() -> None:
    near = [_hit(1, 0.9), _hit(2, 0.5)]
    assert _ranked(_Vectors({}).found(), near) == near
    assert _ranked(_crowd_and_one_alone(), list(reversed(near))) == near  # no pass yet: by cosine
    alone = _crowd_and_one_alone().found()
    assert _ranked(alone, near[:1]) == near[:1]


def test_a_message_whose_vectors_are_gone_keeps_its_cosine() -> None:
    vectors = _crowd_and_one_alone().found()
    near = [_hit(99, 0.8), _hit(1, 0.76)]  # 99: removed since the store found it
    assert [hit.uid for hit in _ranked(vectors, near)] == [99, 1]

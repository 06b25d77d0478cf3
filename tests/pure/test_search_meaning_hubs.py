"""The ranking by meaning with hubness reduced (services/search_meaning_hubs.py), on a vector store of a
few messages in memory: a message from a crowd of look-alikes ranks below one as near the query that
stands alone; the reference is read once and again only once the index has changed by a tenth; an index
without vectors, or a single message, keeps the store's order."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from mail_imap_mcp.index.store import Hit
from mail_imap_mcp.services.search_meaning_hubs import DENSITIES_KEPT, RESAMPLE_AFTER, dehubbed

Place = tuple[str, int]


def _at(degrees: float) -> npt.NDArray[np.float32]:
    radians = np.radians(degrees)
    return np.array([[np.cos(radians), np.sin(radians), 0.0]], dtype=np.float32)


class _Vectors:
    """A vector store in memory: each message's rows; counts each sample read."""

    def __init__(self, rows: dict[Place, npt.NDArray[np.float32]]) -> None:
        self.rows = rows
        self.samples = 0
        self.asked: list[Place] = []

    def vectors_of(self, places: Sequence[Place]) -> dict[Place, npt.NDArray[np.float32]]:
        self.asked += places
        return {place: self.rows[place] for place in places if place in self.rows}

    def vector_sample(self, limit: int) -> dict[Place, npt.NDArray[np.float32]]:
        self.samples += 1
        return dict(list(self.rows.items())[:limit])


def _hit(uid: int, cosine: float) -> Hit:
    return Hit("INBOX", 1, uid, 1.0 - cosine, 0, ())


def _crowd_and_one_alone() -> _Vectors:
    """Twelve look-alikes at 39.55-40 degrees (1-12) and one message alone at -40 (20)."""
    rows = {("INBOX", uid): _at(39.5 + uid * 0.05) for uid in range(1, 13)}
    rows["INBOX", 20] = _at(-40)
    return _Vectors(rows)


def test_a_message_from_a_crowd_ranks_below_one_as_near_that_stands_alone() -> None:
    vectors = _crowd_and_one_alone()
    query = _at(0)[0]
    near = [_hit(uid, float(vectors.rows["INBOX", uid][0] @ query)) for uid in (1, 2, 20)]
    assert near[0].rank < near[1].rank < near[2].rank  # the store's order: the crowd a little nearer
    ranked = dehubbed(vectors, "m", 13, near)  # type: ignore[arg-type]
    assert [hit.uid for hit in ranked] == [20, 1, 2]


def test_the_reference_is_read_again_only_once_the_index_changed_by_a_tenth() -> None:
    vectors = _crowd_and_one_alone()
    near = [_hit(1, 0.76), _hit(20, 0.76)]
    dehubbed(vectors, "m", 1000, near)  # type: ignore[arg-type]
    dehubbed(vectors, "m", int(1000 * (1 + RESAMPLE_AFTER)), near)  # type: ignore[arg-type]
    assert vectors.samples == 1
    dehubbed(vectors, "m", int(1000 * (1 + RESAMPLE_AFTER)) + 1, near)  # type: ignore[arg-type]
    assert vectors.samples == 2
    dehubbed(vectors, "another model", 1101, near)  # type: ignore[arg-type]
    assert vectors.samples == 3


def test_a_density_found_is_kept_while_the_reference_stands() -> None:
    vectors = _crowd_and_one_alone()
    dehubbed(vectors, "m", 13, [_hit(1, 0.76), _hit(20, 0.76)])  # type: ignore[arg-type]
    vectors.asked.clear()
    ranked = dehubbed(vectors, "m", 13, [_hit(2, 0.76), _hit(1, 0.76), _hit(20, 0.76)])  # type: ignore[arg-type]
    assert vectors.asked == [("INBOX", 2)]  # only the one not met before is read
    assert ranked[0].uid == 20
    vectors.asked.clear()
    dehubbed(vectors, "m", 1000, [_hit(1, 0.76), _hit(20, 0.76)])  # type: ignore[arg-type]
    assert vectors.asked == [("INBOX", 1), ("INBOX", 20)]  # a new reference, new densities
    assert DENSITIES_KEPT >= 10_000


def test_without_vectors_or_with_one_message_the_order_is_the_stores() -> None:
    near = [_hit(1, 0.9), _hit(2, 0.5)]
    assert dehubbed(_Vectors({}), "m", 0, near) == near  # type: ignore[arg-type]
    alone = _crowd_and_one_alone()
    assert dehubbed(alone, "m", 13, near[:1]) == near[:1]  # type: ignore[arg-type]


def test_a_message_whose_vectors_are_gone_keeps_its_cosine() -> None:
    vectors = _crowd_and_one_alone()
    near = [_hit(99, 0.8), _hit(1, 0.76)]  # 99: removed since the store found it
    assert [hit.uid for hit in dehubbed(vectors, "m", 13, near)] == [99, 1]  # type: ignore[arg-type]

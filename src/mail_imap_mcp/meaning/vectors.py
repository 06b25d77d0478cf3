"""Vectors as an index keeps them and the nearest of them to a query, in numpy (the SQLite engines, and
PostgreSQL where the database has no ``pgvector``).

A passage's unit vector is kept as int8 (:func:`quantised`: each row scaled so its largest component is
127, a quarter of float32's size; the cosine is computed from it exactly as from any vector, so no scale
is kept). Its signature is the sign of each component, one bit each (:func:`signatures`: 32 bytes for 256
dimensions), and beside it which components are large (:func:`large_bits`, as many bits): the only copy
held in memory (:class:`Signatures`), refreshed by row as vectors come and go.

The nearest messages to a query are found in two passes (:func:`two_pass`): the Hamming distance between
the query's signature and every candidate's (a few milliseconds for a million passages), the best
:data:`WIDEN` times :data:`RERANK` of them ordered again by their dot product with the query where each
component is its sign times one of two sizes (its signs and sizes, weighed by the query: Hamming's many
ties broken, and a passage whose few large components point the query's way put ahead of one whose many
small ones do), then the int8 vectors of the best :data:`RERANK` passages' messages read back and ranked
by cosine, a message by its best passage. Below :data:`EXACT_MOST` candidate messages the first pass costs
more than it saves: their int8 vectors are ranked whole (:func:`exact`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from mail_imap_mcp.meaning.hamming import distances, smallest

if TYPE_CHECKING:
    import numpy.typing as npt

    Floats = npt.NDArray[np.float32]
    Int8s = npt.NDArray[np.int8]
    Words = npt.NDArray[np.uint64]
    Ids = npt.NDArray[np.int64]

#: Passages the second pass re-ranks from their int8 vectors (their messages', every passage of each).
#: 600 until the densities were found against a stored reference of 10,000 (issue 90): a sparse message
#: at the pool's edge then ranks in the first ten, and with 600 the signatures left one out that
#: pgvector found (1 of the 40 first tens of tests/integration/index/test_meaning_engines_same.py
#: apart); with 700 or 800, none. 700: 800 cost an ``about`` page at 100,000 some 2-5 ms more, past its
#: 30 ms (docs/search.md).
RERANK = 700
#: How many times the passages to re-rank the Hamming distance picks, ordered again by the query's
#: components at their signs (in memory) before the best are read back.
WIDEN = 8
#: Where a component is large, in root mean squares of its row, and how many times a small one a large
#: one counts: a normal component's sign and one of two sizes coded best (Lloyd and Max: the boundary at
#: 0.98, the sizes' middles 0.45 and 1.51). Signs alone left 11 of the meaning set's 40 first tens by
#: meaning (among 4,332 messages) apart from the exact ranking's; signs and sizes none (docs/search.md).
LARGE = 0.9816
LARGE_TIMES = 1.510 / 0.4528
#: Dimensions from which a passage's signs alone order the passages Hamming picks and no sizes are held
#: (half the memory): at 256 signs alone left 4 of the meaning set's 40 first tens apart from the exact
#: ranking's with 600 passages read back, at 512 (the multilingual model) none, with 400 or 600
#: (scripts/meaning_first_pass.py --signs-only).
SIGNS_ENOUGH = 512
#: Candidate messages up to which their int8 vectors are ranked whole, without a first pass.
EXACT_MOST = 2000

#: Groups up to which a candidate's is compared with each (:func:`_in_groups`), not looked up.
FEW_GROUPS = 8

#: The share of the candidate passages up to which a query's matches are found by asking of the nearest
#: passages' messages whether it passes them (:meth:`Signatures._passed`), beyond which by listing its
#: matches.
ASKED_MOST = 0.25

#: Which of some messages (ids, ascending) a query passes (ascending).
Passing = Callable[["Ids"], "Ids"]

#: What the second pass reads: the int8 vectors of each of some ids (a message's passages, rows of it).
ReadRows = Callable[[list[int]], Mapping[int, "Int8s"]]


def quantised(vectors: Floats) -> Int8s:
    """Rows of floats as int8, each row scaled so its largest component is 127 (a row of zeros stays
    one: the passage of an empty text)."""
    rows = np.asarray(vectors, dtype=np.float32)
    largest = np.abs(rows).max(axis=1, keepdims=True) if rows.size else np.zeros((len(rows), 1), np.float32)
    scale = np.divide(127.0, largest, out=np.zeros_like(largest), where=largest > 0)
    kept: Int8s = np.clip(np.rint(rows * scale), -127, 127).astype(np.int8)
    return kept


def signatures(rows: npt.NDArray[np.generic]) -> Words:
    """The sign bits of each row (a component above zero: 1), as 64-bit words, one row per row."""
    packed = np.packbits(np.asarray(rows) > 0, axis=1)
    pad = -packed.shape[1] % 8
    if pad:
        packed = np.pad(packed, ((0, 0), (0, pad)))
    return np.ascontiguousarray(packed).view(np.uint64)


def large_bits(rows: npt.NDArray[np.generic]) -> Words:
    """A bit for each component of each row, set where it is large (beyond :data:`LARGE` times the row's
    root mean square), laid out as :func:`signatures` lays out the signs (a row of zeros: none)."""
    floats = np.asarray(rows, dtype=np.float32)
    spread = np.sqrt(np.einsum("ij,ij->i", floats, floats) / max(floats.shape[1], 1))[:, None]
    return signatures(np.abs(floats) - LARGE * spread)


def cosines(query: Floats, rows: Int8s) -> Floats:
    """The cosine of the unit ``query`` with each int8 row (0 for a row of zeros). Summed by ``einsum``,
    not ``@``: a product of that size goes to OpenBLAS's threads, which wait for a core each under load
    (a page's time doubled at a load of 7) to save a fraction of a millisecond."""
    as_floats = rows.astype(np.float32)
    lengths = np.sqrt(np.einsum("ij,ij->i", as_floats, as_floats))
    dots = np.einsum("ij,j->i", as_floats, query)
    found: Floats = np.divide(dots, lengths, out=np.zeros_like(dots), where=lengths > 0).astype(np.float32)
    return found


def unit(vector: Floats) -> Floats:
    """``vector`` scaled to length 1 (zeros stay zeros)."""
    row = np.asarray(vector, dtype=np.float32).reshape(-1)
    length = float(np.linalg.norm(row))
    return row / length if length > 0 else row


def exact(query: Floats, rows: Mapping[int, Int8s], limit: int) -> list[tuple[int, float]]:
    """The ``limit`` ids of ``rows`` whose best row is nearest ``query`` (unit), with that cosine, best
    first (equal cosines: the higher id, the newer message, first)."""
    keys = [key for key, passages in rows.items() if len(passages)]
    if not keys or limit <= 0:
        return []
    counts = np.array([len(rows[key]) for key in keys])
    scores = cosines(query, np.concatenate([rows[key] for key in keys]))
    best = np.maximum.reduceat(scores, np.cumsum(counts) - counts)  # each message's best passage
    ids = np.array(keys, dtype=np.int64)
    order = np.lexsort((-ids, -best))[:limit]  # best first, then the higher id
    return [(int(ids[at]), float(best[at])) for at in order]


class Signatures:
    """The signatures of every stored passage, in memory, with the id (a message's) and group (its
    folder) of each, and its large components where ``sizes``: added and removed by id as the store
    changes, compacted when a quarter is gone."""

    def __init__(self, words: int, *, sizes: bool = True) -> None:
        self.words = words
        self.sizes = sizes
        self._guard = threading.RLock()
        self._empty()

    @classmethod
    def of_dimensions(cls, dimensions: int) -> Signatures:
        """Room for vectors of ``dimensions``: whole 64-bit words of signs, and sizes below
        :data:`SIGNS_ENOUGH`."""
        return cls(-(-dimensions // 64), sizes=dimensions < SIGNS_ENOUGH)

    def _empty(self) -> None:
        self._bits = np.zeros((self.words, 0), dtype=np.uint64)  # word-major: each word's column contiguous
        self._large = np.zeros((self.words, 0), dtype=np.uint64)  # the same, of the large components
        self._ids = np.zeros(0, dtype=np.int64)
        self._groups = np.zeros(0, dtype=np.int32)
        self._alive = np.zeros(0, dtype=bool)
        self._size = 0
        self._dead = 0
        self._by_id: tuple[npt.NDArray[np.intp], Ids] | None = None

    def __len__(self) -> int:
        return self._size - self._dead

    @property
    def nbytes(self) -> int:
        """The memory it holds."""
        return int(
            self._bits.nbytes
            + self._large.nbytes
            + self._ids.nbytes
            + self._groups.nbytes
            + self._alive.nbytes
        )

    def add(self, ids: Ids, groups: npt.NDArray[np.int32], words: Words, large: Words | None) -> None:
        """Passages: the id and group of each, its signature (:func:`signatures`) and its large components
        (:func:`large_bits`; None, or not kept, where it holds no sizes)."""
        count = len(ids)
        if not count:
            return
        if self.sizes and large is None:
            raise ValueError("these signatures hold sizes: each passage's large components are needed")
        with self._guard:
            self._reserve(self._size + count)
            end = self._size + count
            self._bits[:, self._size : end] = words.T
            if self.sizes and large is not None:
                self._large[:, self._size : end] = large.T
            self._ids[self._size : end] = ids
            self._groups[self._size : end] = groups
            self._alive[self._size : end] = True
            self._size = end
            self._by_id = None

    def reserve(self, passages: int) -> None:
        """Room for ``passages`` in all, made at once (a copy read whole takes no more memory than it needs)."""
        with self._guard:
            self._grow(passages)

    def _reserve(self, needed: int) -> None:
        if needed > len(self._ids):  # a quarter more: memory stays near the size
            self._grow(max(needed, len(self._ids) + len(self._ids) // 4 + 1024))

    def _grow(self, grown: int) -> None:
        if grown <= len(self._ids):
            return
        bits = np.zeros((self.words, grown), dtype=np.uint64)
        bits[:, : self._size] = self._bits[:, : self._size]
        self._bits = bits
        if self.sizes:
            large = np.zeros((self.words, grown), dtype=np.uint64)
            large[:, : self._size] = self._large[:, : self._size]
            self._large = large
        self._ids = np.resize(self._ids, grown)
        self._groups = np.resize(self._groups, grown)
        self._alive = np.resize(self._alive, grown)

    def remove(self, ids: Iterable[int]) -> None:
        """Forget every passage of ``ids``."""
        gone = np.fromiter(ids, dtype=np.int64)
        if not len(gone):
            return
        with self._guard:
            alive = self._alive[: self._size]
            hit = np.isin(self._ids[: self._size], gone) & alive
            alive[hit] = False
            self._dead += int(hit.sum())
            if self._dead * 4 > self._size:
                self._compact()

    def _compact(self) -> None:
        keep = np.flatnonzero(self._alive[: self._size])
        self._bits = np.ascontiguousarray(self._bits[:, keep])
        if self.sizes:
            self._large = np.ascontiguousarray(self._large[:, keep])
        self._ids = self._ids[keep]
        self._groups = self._groups[keep]
        self._alive = np.ones(len(keep), dtype=bool)
        self._size, self._dead = len(keep), 0
        self._by_id = None

    def clear(self) -> None:
        with self._guard:
            self._empty()

    def candidates(self, groups: Iterable[int] | None, ids: Ids | None) -> npt.NDArray[np.bool_] | None:
        """Which passages are candidates: alive, of ``groups`` (None: any) and of ``ids`` (sorted; None:
        any). None: every passage held (no mask to apply)."""
        with self._guard:
            size = self._size
            mask: npt.NDArray[np.bool_] | None = None if not self._dead else self._alive[:size].copy()
            if groups is not None:
                in_groups = _in_groups(self._groups[:size], np.fromiter(groups, dtype=np.int64))
                mask = in_groups if mask is None else mask & in_groups
            if ids is not None:
                in_ids = np.zeros(size, dtype=bool)
                in_ids[self._positions(ids)] = True
                mask = in_ids if mask is None else mask & in_ids
            return mask

    def _positions(self, ids: Ids) -> npt.NDArray[np.intp]:
        """Where the passages of ``ids`` (sorted) are: looked up in the passages ordered by id (kept until
        passages come or move), each id's run found by bisection (looking each passage up among the ids
        instead cost 90 ms for 1,333,333 passages and 25,000 ids)."""
        if self._by_id is None:
            order = np.argsort(self._ids[: self._size], kind="stable")
            self._by_id = (order, self._ids[: self._size][order])
        order, ordered = self._by_id
        first = np.searchsorted(ordered, ids, side="left")
        counts = np.searchsorted(ordered, ids, side="right") - first
        starts = np.repeat(first - np.cumsum(counts) + counts, counts)  # each run's start, once a passage
        found: npt.NDArray[np.intp] = order[starts + np.arange(int(counts.sum()))]
        return found

    def first_pass(self, query: Floats, mask: npt.NDArray[np.bool_] | None, keep: int) -> Ids:
        """The ids (each once) of the ``keep`` passages nearest ``query`` by Hamming distance among those
        ``mask`` leaves (None: every one held)."""
        found = self._first_pass(query, mask, keep, None)
        assert found is not None  # nothing asked
        return found

    def first_pass_passed(
        self, query: Floats, mask: npt.NDArray[np.bool_] | None, keep: int, passing: Passing
    ) -> Ids | None:
        """:meth:`first_pass` among the passages whose messages ``passing`` passes, asked of the nearest
        alone (:meth:`_passed`); None where it passes too few of them (its matches are best listed)."""
        return self._first_pass(query, mask, keep, passing)

    def _first_pass(
        self, query: Floats, mask: npt.NDArray[np.bool_] | None, keep: int, passing: Passing | None
    ) -> Ids | None:
        target = signatures(query.reshape(1, -1))[0]
        with self._guard:
            size = self._size
            if not size:
                return np.zeros(0, dtype=np.int64)
            distance = distances(self._bits, target, size)
            far = 64 * self.words + 1  # farther than any passage: one left out
            if mask is not None:  # putmask: a quarter of the time of ``distance[~mask] = far``
                np.putmask(distance, ~mask, far)
            elif self._dead:
                np.putmask(distance, ~self._alive[:size], far)
            ids = self._ids[:size]
            if passing is not None:
                return self._passed(query, distance, ids, keep, far, passing)
            near = smallest(distance, keep * WIDEN, far)
            if len(near) > keep:  # ordered again by the query's own components at each passage's signs
                near = near[np.argsort(-self._agreement(query, near), kind="stable")[:keep]]
            return np.unique(ids[near])

    def _passed(
        self, query: Floats, distance: npt.NDArray[np.uint16], ids: Ids, keep: int, far: int, passing: Passing
    ) -> Ids | None:
        """The messages of the ``keep`` best passages whose messages ``passing`` passes, asked in the
        order of the first pass (Hamming's nearest, ordered again by :meth:`_agreement`) until ``keep``
        pass: the first asked say the share it passes, and Hamming's nearest are taken as many more
        times as it passes fewer (as many that pass as :data:`WIDEN` times ``keep``). None where that
        share says they are more than :data:`ASKED_MOST` of the candidates: its matches are best
        listed."""
        candidates = int(np.count_nonzero(distance < far))
        asked = _Asked(passing)
        reach = keep * WIDEN
        near = smallest(distance, reach, far)
        asked.first(ids[near[np.argsort(-self._agreement(query, near), kind="stable")[:keep]]], keep)
        while True:  # the first asked: the share it passes
            reach = max(int(keep * WIDEN / max(asked.share, 1 / candidates) * 1.1) + 1, reach)
            if reach > candidates * ASKED_MOST:
                return None
            near = smallest(distance, reach, far)
            order = near[np.argsort(-self._agreement(query, near), kind="stable")]
            kept = asked.first(ids[order], keep)
            if len(kept) >= keep or len(near) >= candidates:
                return np.unique(kept[:keep])
            reach *= 2

    def _agreement(self, query: Floats, positions: npt.NDArray[np.intp]) -> Floats:
        """How far each passage at ``positions`` points the query's way by its signs and sizes alone: its
        dot product with the query, each of its components read as its sign times 1 or :data:`LARGE_TIMES`
        (times 1 alone where it holds no sizes; less a constant), a finer order than the Hamming distance, which counts every component alike.
        With ``s`` a component's sign bit and ``h`` its large bit, that sum is ``2 sum(q s) + (LARGE_TIMES
        - 1) (2 sum(q s h) - sum(q h))`` less ``sum(q)``; each sum is summed a byte of bits at a time from
        a table of the query's sums for each byte's 256 values (a look-up a byte, not a product a bit)."""
        table = _byte_sums(query)
        flat = table.ravel()
        rows = len(table)
        offsets = np.arange(0, table.size, 256)

        def summed(words: Words) -> Floats:
            at = np.ascontiguousarray(words).view(np.uint8)[:, :rows].astype(np.intp)
            at += offsets  # each byte's row of the table, flattened
            found: Floats = flat.take(at).sum(axis=1, dtype=np.float32)
            return found

        signs = self._bits[:, positions].T
        if not self.sizes:  # every component read as its sign alone
            return summed(signs)
        large = self._large[:, positions].T
        found: Floats = 2 * summed(signs) + (LARGE_TIMES - 1) * (2 * summed(signs & large) - summed(large))
        return found


def _byte_sums(query: Floats) -> Floats:
    """For each byte of a signature (:func:`signatures`: the first component in its highest bit) and
    each of its 256 values, the sum of the query's components whose bits the value sets."""
    padded = np.zeros(-(-len(query) // 8) * 8, dtype=np.float32)
    padded[: len(query)] = query
    bits = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.float32)
    table: Floats = np.einsum("jk,vk->jv", padded.reshape(-1, 8), bits)
    return table


class _Asked:
    """What a condition said of each message asked (:data:`Passing`), asked a chunk at a time."""

    def __init__(self, passing: Passing) -> None:
        self._passing = passing
        self._said: dict[int, bool] = {}

    @property
    def share(self) -> float:
        """The share of the messages asked that it passed."""
        return sum(self._said.values()) / max(len(self._said), 1)

    def first(self, messages: Ids, keep: int) -> Ids:
        """The first ``keep`` of ``messages`` (in order, a message once for each of its passages) that
        it passes, asking of as many more at a time as the share it passed so far says are needed."""
        kept: list[int] = []
        at = 0
        while len(kept) < keep and at < len(messages):
            more = int((keep - len(kept)) / max(self.share, 0.05) * 1.1) + 1 if self._said else keep
            chunk = messages[at : at + more].tolist()
            at += len(chunk)
            fresh = sorted({message for message in chunk if message not in self._said})
            if fresh:
                passed = set(self._passing(np.array(fresh, dtype=np.int64)).tolist())
                self._said.update((message, message in passed) for message in fresh)
            kept.extend(message for message in chunk if self._said[message])
        return np.array(kept, dtype=np.int64)


def _in_groups(present: npt.NDArray[np.int32], wanted: Ids) -> npt.NDArray[np.bool_]:
    """Which of ``present`` (each passage's group) are among ``wanted``: compared with each where they
    are few (a folder or two: a thirtieth of the time of a look-up in a table of every group)."""
    if len(wanted) <= FEW_GROUPS:
        found = np.zeros(len(present), dtype=bool)
        for group in wanted.tolist():
            found |= present == group
        return found
    table = np.zeros(int(max(wanted.max(initial=0), present.max(initial=0))) + 1, dtype=bool)
    table[wanted] = True
    in_groups: npt.NDArray[np.bool_] = table[present]
    return in_groups


def two_pass(
    query: Floats,
    held: Signatures,
    mask: npt.NDArray[np.bool_] | None,
    read: ReadRows,
    limit: int,
    rerank: int = RERANK,
) -> list[tuple[int, float]]:
    """The ``limit`` ids nearest ``query`` (unit): the best ``max(rerank, 2 * limit)`` passages by their
    signatures, their ids' int8 rows (``read``) ranked by cosine (:func:`exact`)."""
    chosen = held.first_pass(query, mask, max(rerank, 2 * limit))
    return exact(query, read([int(key) for key in chosen]), limit)

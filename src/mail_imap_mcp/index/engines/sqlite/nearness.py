"""The nearest messages of one page's search on the SQLite engines (:class:`~mail_imap_mcp.index.vectors.
Nearness`), on one read transaction: what the search alone decides is found once however many vectors it
is asked of (``about`` asks twice: its own and the one fed back), namely the stored model, the folders
searched, the messages its filters match (an FTS5 list, or every message of a few) and the freshness of
the signatures in memory (checked once); each message's int8 rows are read once (the second vector's
candidates are mostly the first's). Each vector's nearest come back as places with the rows read to rank
them (so the hubness reduction and the feedback read no vector again), and their texts only when asked
(:meth:`SqliteNearness.hits`: a page's hits, not every one found)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mail_imap_mcp.index.engines.sqlite import densities as stored_densities
from mail_imap_mcp.index.engines.sqlite import vectors as stored_vectors
from mail_imap_mcp.index.engines.sqlite.flag_index import flag_counts
from mail_imap_mcp.index.engines.sqlite.pages import rows_of
from mail_imap_mcp.index.engines.sqlite.query import compile_fts5
from mail_imap_mcp.index.engines.sqlite.vectors import (
    HeldSignatures,
    Model,
    passing_conditions,
    read_rows,
    stored_model,
)
from mail_imap_mcp.index.store import Hit
from mail_imap_mcp.index.vectors import Densities, Near
from mail_imap_mcp.query.tree import Query

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from mail_imap_mcp.meaning.vectors import Int8s, Passing

#: Ids named in one statement at most.
_CHUNK = 400


class SqliteNearness:
    """:class:`~mail_imap_mcp.index.vectors.Nearness` on ``db``'s read transaction (begun by the caller)."""

    def __init__(
        self, db: sqlite3.Connection, held: HeldSignatures, query: Query | None, folders: Sequence[str]
    ) -> None:
        self._db = db
        self._held = held
        self._query = query
        self._model = stored_model(db)
        stored = db.execute("SELECT name, id, messages FROM folders").fetchall()
        wanted = set(folders)
        self._names = {folder: str(name) for name, folder, _ in stored}
        self._searched = [(folder, count) for name, folder, count in stored if name in wanted]
        self._every = len(self._searched) == len(stored)
        self._fts = compile_fts5(query, flag_counts(db)) if query is not None else None
        #: The messages the filters match (None: too many to list), once listed.
        self._ids: npt.NDArray[np.int64] | None = None
        self._listed = False
        #: The int8 rows read so far on this snapshot, by row id (the second pass's candidates are
        #: mostly the first's, or the same few ranked whole: only the others are read).
        self._read: dict[int, Int8s] = {}
        #: The folder, UID, arrival and size of the messages found so far on this snapshot, by row id
        #: (the fed-back pass may find some of the first pass's again).
        self._placed: dict[int, tuple[str, int, int, int]] = {}
        #: The signatures' freshness checked on this snapshot.
        self._checked = False

    def near(self, vector: npt.NDArray[np.float32], limit: int) -> list[Near]:
        from mail_imap_mcp.meaning.vectors import unit

        model = self._model
        target = unit(vector)
        if model is None or limit <= 0 or len(target) != model.dimensions or not target.any():
            return []
        if not self._searched:
            return []
        pairs, rows = self._nearest(model, target, limit)
        places = self._places([key for key, _ in pairs])
        return [
            Near(folder, uid, 1.0 - cosine, arrival, size, rows[key], key)
            for key, cosine in pairs
            if key in places
            for folder, uid, arrival, size in [places[key]]
        ]

    def hits(self, near: Sequence[Near]) -> list[Hit]:
        return rows_of(self._db, [one.key for one in near], [one.rank for one in near])

    def densities(self, near: Sequence[Near]) -> Densities | None:
        made, found = stored_densities.stored(self._db, [one.key for one in near])
        if made is None:
            return None
        return Densities(made, {(one.folder, one.uid): found[one.key] for one in near if one.key in found})

    def _nearest(
        self, model: Model, target: npt.NDArray[np.float32], limit: int
    ) -> tuple[list[tuple[int, float]], dict[int, Int8s]]:
        """The ``limit`` (row id, cosine) nearest ``target`` and the rows read to rank them, each part
        the search alone decides found once."""
        from mail_imap_mcp.meaning.vectors import EXACT_MOST, RERANK, exact

        read = self._rows_of
        groups = None if self._every else [folder for folder, _ in self._searched]
        keep = max(RERANK, 2 * limit)
        total = sum(count for _, count in self._searched)
        fts = self._fts
        if fts is not None and fts.match is None and total > EXACT_MOST:
            # Conditions alone (flags, dates, sizes): asked of the nearest messages, as long as they pass
            # enough of them; a text to match is listed (FTS5 asked of each message reads its list whole).
            passing = passing_conditions(self._db, fts)
            chosen = self._first_pass(model, target, groups, None, keep, passing)
            if chosen is not None:
                rows = read(chosen)
                return exact(target, rows, limit), rows
        ids = self._candidates(total)
        if ids is not None and len(ids) <= EXACT_MOST:
            rows = read(ids.tolist())
            return exact(target, rows, limit), rows
        chosen = self._first_pass(model, target, groups, ids, keep, None)
        assert chosen is not None  # no condition to pass
        rows = read(chosen)
        return exact(target, rows, limit), rows

    def _rows_of(self, ids: list[int]) -> dict[int, Int8s]:
        """The int8 rows of each of ``ids`` that has vectors, read once on this snapshot."""
        assert self._model is not None
        missing = [key for key in ids if key not in self._read]
        if missing:
            self._read.update(read_rows(self._db, self._model.dimensions)(missing))
        return {key: self._read[key] for key in ids if key in self._read}

    def _candidates(self, total: int) -> npt.NDArray[np.int64] | None:
        """The row ids of the messages the filters match (None: too many to list without a text to
        match), listed once."""
        import numpy as np

        from mail_imap_mcp.meaning.vectors import EXACT_MOST

        if not self._listed:
            if self._fts is not None:
                self._ids = stored_vectors.candidate_ids(self._db, self._fts, self._searched, self._every)
            elif total <= EXACT_MOST:
                marks = ", ".join("?" for _ in self._searched)
                rows = self._db.execute(
                    f"SELECT id FROM messages WHERE folder IN ({marks})", [*dict(self._searched)]
                )
                self._ids = np.fromiter((row[0] for row in rows), dtype=np.int64)
            self._listed = True
        return self._ids

    def _first_pass(
        self,
        model: Model,
        target: npt.NDArray[np.float32],
        groups: list[int] | None,
        ids: npt.NDArray[np.int64] | None,
        keep: int,
        passing: Passing | None,
    ) -> list[int] | None:
        """:meth:`.vectors.HeldSignatures.first_pass`, the signatures' freshness checked the first time."""
        chosen = self._held.first_pass(
            self._db, model, target, groups, ids, keep, passing, checked=self._checked
        )
        self._checked = True
        return chosen

    def _places(self, keys: list[int]) -> dict[int, tuple[str, int, int, int]]:
        """The folder, UID, arrival and size of each of ``keys`` (row ids) still stored, each read once on
        this snapshot (a row id not stored is asked again: it is not found again)."""
        found = self._placed
        missing = [key for key in keys if key not in found]
        for first in range(0, len(missing), _CHUNK):
            chunk = missing[first : first + _CHUNK]
            for key, folder, uid, arrival, size in self._db.execute(
                "SELECT id, folder, uid, arrival, size FROM messages "
                f"WHERE id IN ({', '.join('?' for _ in chunk)})",
                chunk,
            ):
                found[int(key)] = (self._names[int(folder)], int(uid), int(arrival), int(size))
        return {key: found[key] for key in keys if key in found}

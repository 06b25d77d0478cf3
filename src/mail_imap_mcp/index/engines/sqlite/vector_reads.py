"""The stored vectors of some messages read back (:meth:`~mail_imap_mcp.index.vectors.VectorStore.vectors_of`
and :meth:`~mail_imap_mcp.index.vectors.VectorStore.vector_sample`), the SQLite engines' way: each message's
int8 rows (:mod:`.vectors`), as floats of the same directions."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mail_imap_mcp.index.engines.sqlite.vector_layout import IDS_PER_SECOND, KEY_BASE
from mail_imap_mcp.index.engines.sqlite.vectors import _row_ids, read_rows, stored_model

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

Place = tuple[str, int]


def vectors_of(db: sqlite3.Connection, places: Sequence[Place]) -> dict[Place, npt.NDArray[np.float32]]:
    """The rows of each of ``places`` that has vectors."""
    model = stored_model(db)
    if model is None or not places:
        return {}
    row_ids = _row_ids(db, list(places))
    rows = read_rows(db, model.dimensions)(list(row_ids.values()))
    return {place: rows[row].astype("float32") for place, row in row_ids.items() if row in rows}


def vector_sample(db: sqlite3.Connection, limit: int) -> dict[Place, npt.NDArray[np.float32]]:
    """The rows of up to ``limit`` messages spread evenly over the time they were sent (:func:`sample_ids`).
    The same messages as PostgreSQL's sample of the same mail
    (:func:`mail_imap_mcp.index.engines.postgresql.vector_reads.vector_sample`): hubness is reduced
    against one reference on every engine (issue 89)."""
    model = stored_model(db)
    if model is None or limit <= 0:
        return {}
    row_ids = sample_ids(db, limit)
    rows = read_rows(db, model.dimensions)(row_ids)
    places = _places(db, row_ids)
    return {places[row]: found.astype("float32") for row, found in rows.items() if row in places}


def sample_ids(db: sqlite3.Connection, limit: int) -> list[int]:
    """The row ids of up to ``limit`` messages with vectors spread evenly over the time they were sent: the
    first sent at or after each of ``limit`` times spread from the oldest to the newest (every one where
    there are no more), newest first."""
    model = stored_model(db)
    if model is None or limit <= 0:
        return []
    low_key, high_key = db.execute("SELECT min(key), max(key) FROM vectors").fetchone()
    if low_key is None:
        return []
    if model.messages <= limit:
        keys = [int(key) for (key,) in db.execute("SELECT key FROM vectors")]
    else:
        # A row id is its message's sent time times IDS_PER_SECOND, plus a counter; a key is KEY_BASE less it.
        first, last = (KEY_BASE - high_key) // IDS_PER_SECOND, (KEY_BASE - low_key) // IDS_PER_SECOND
        found = (
            db.execute(
                "SELECT key FROM vectors WHERE key <= ? ORDER BY key DESC LIMIT 1",
                (KEY_BASE - (first + (last - first + 1) * n // limit) * IDS_PER_SECOND,),
            ).fetchone()
            for n in range(limit)
        )
        keys = sorted({int(row[0]) for row in found if row is not None})
    return [KEY_BASE - key for key in keys]


def _places(db: sqlite3.Connection, row_ids: list[int]) -> dict[int, Place]:
    found: dict[int, Place] = {}
    for start in range(0, len(row_ids), 400):
        chunk = row_ids[start : start + 400]
        for row_id, folder, uid in db.execute(
            "SELECT m.id, f.name, m.uid FROM messages m JOIN folders f ON f.id = m.folder "
            f"WHERE m.id IN ({', '.join('?' for _ in chunk)})",
            chunk,
        ):
            found[int(row_id)] = (str(folder), int(uid))
    return found

"""The vectors of the SQLite engines (:class:`~mail_imap_mcp.index.vectors.VectorStore`), in the index
file beside the messages they belong to.

Tables (added to an index file that lacks them, so an index built before gains them; no message is
indexed again): ``vector_model`` (one row: the model the vectors were made with, their dimensions, and an
epoch drawn whenever they are all dropped), ``vectors`` (a row per message that has them: its passages'
int8 rows as one blob, :func:`~mail_imap_mcp.meaning.vectors.quantised`; a message without passages has
an empty one, so it is not made again) and ``vectors_gone`` (the messages whose vectors were removed, in
order). A trigger removes a message's vectors with the message, whatever removes it (expunged, replaced,
its folder dropped or its UIDVALIDITY changed), and another logs the removal. The rows of ``vectors``
are numbered in the order they were written (``seq``), so a copy in memory
(:class:`~mail_imap_mcp.meaning.vectors.Signatures`: the passages' signatures alone) is brought up to date
by reading the rows past the last it holds and the removals past the last it applied.
"""

from __future__ import annotations

import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mail_imap_mcp.index.engines.sqlite.pages import rows_of
from mail_imap_mcp.index.engines.sqlite.query import compile_fts5, in_places
from mail_imap_mcp.index.store import Hit, unpack_texts
from mail_imap_mcp.index.vectors import VectorCounts, VectorTodo
from mail_imap_mcp.query.tree import Query

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from mail_imap_mcp.meaning.vectors import Signatures

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vector_model(name TEXT NOT NULL, dimensions INTEGER NOT NULL, epoch TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS vectors(
    seq INTEGER PRIMARY KEY AUTOINCREMENT, message INTEGER NOT NULL UNIQUE, passages BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS vectors_gone(seq INTEGER PRIMARY KEY AUTOINCREMENT, message INTEGER NOT NULL);
CREATE TRIGGER IF NOT EXISTS vectors_with_message AFTER DELETE ON messages
    BEGIN DELETE FROM vectors WHERE message = old.id; END;
CREATE TRIGGER IF NOT EXISTS vectors_removed AFTER DELETE ON vectors
    BEGIN INSERT INTO vectors_gone(message) VALUES (old.message); END
"""
#: Removals kept in ``vectors_gone`` at most (a copy in memory further behind reads every vector again).
GONE_KEPT = 100_000
#: Rows read at once when a copy in memory is made whole (its int8 rows are dropped batch by batch).
_LOAD_BATCH = 20_000
#: Ids named in one statement at most.
_CHUNK = 400

Transaction = Callable[[], AbstractContextManager[None]]


def prepare_vectors(db: sqlite3.Connection, transaction: Transaction) -> None:
    """Add the vectors' tables and triggers to an index file that lacks them (written only then:
    opening an index another process writes waits for nobody)."""
    if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'vectors_removed'").fetchone():
        return
    with transaction():
        for statement in _SCHEMA.split(";\n"):
            db.execute(statement)


@dataclass(frozen=True)
class Model:
    """The model the stored vectors were made with."""

    name: str
    dimensions: int
    epoch: str


def stored_model(db: sqlite3.Connection) -> Model | None:
    row = db.execute("SELECT name, dimensions, epoch FROM vector_model").fetchone()
    return None if row is None else Model(str(row[0]), int(row[1]), str(row[2]))


def todo(db: sqlite3.Connection, model: str, below: int | None, limit: int) -> list[tuple[int, VectorTodo]]:
    """Up to ``limit`` messages without vectors of ``model`` (every one where the vectors are another
    model's), below the row ``below`` (None: from the newest), newest first, with their row ids."""
    recorded = stored_model(db)
    missing = "1" if recorded is None or recorded.name != model else "v.message IS NULL"
    bound = "" if below is None else "AND m.id < ?"
    rows = db.execute(
        "SELECT m.id, f.name, m.uid, m.doc FROM messages m JOIN folders f ON f.id = m.folder "
        f"LEFT JOIN vectors v ON v.message = m.id WHERE {missing} {bound} ORDER BY m.id DESC LIMIT ?",
        (limit,) if below is None else (below, limit),
    ).fetchall()
    return [(int(row_id), VectorTodo(name, uid, tuple(unpack_texts(doc)))) for row_id, name, uid, doc in rows]


def put(
    db: sqlite3.Connection, model: str, vectors: Mapping[tuple[str, int], npt.NDArray[np.float32]]
) -> None:
    """Keep each message's passages' vectors as int8 (inside the caller's transaction); the vectors of
    another model are dropped first."""
    from mail_imap_mcp.meaning.vectors import quantised

    if not vectors:
        return
    recorded = stored_model(db)
    dimensions = next((int(rows.shape[1]) for rows in vectors.values() if rows.ndim == 2), None)
    if recorded is None or recorded.name != model or (dimensions and recorded.dimensions != dimensions):
        db.execute("DELETE FROM vectors")
        db.execute("DELETE FROM vectors_gone")
        db.execute("DELETE FROM vector_model")
        db.execute(
            "INSERT INTO vector_model(name, dimensions, epoch) VALUES (?, ?, ?)",
            (model, dimensions or 0, uuid.uuid4().hex),
        )
    for (folder, uid), rows in vectors.items():
        found = db.execute(
            "SELECT m.id FROM messages m JOIN folders f ON f.id = m.folder WHERE f.name = ? AND m.uid = ?",
            (folder, uid),
        ).fetchone()
        if found is None:
            continue  # removed meanwhile
        db.execute("DELETE FROM vectors WHERE message = ?", (found[0],))
        blob = quantised(rows).tobytes() if len(rows) else b""
        db.execute("INSERT INTO vectors(message, passages) VALUES (?, ?)", (found[0], blob))
    last = db.execute("SELECT max(seq) FROM vectors_gone").fetchone()[0]
    if last is not None and last > GONE_KEPT * 2:
        db.execute("DELETE FROM vectors_gone WHERE seq <= ?", (last - GONE_KEPT,))


def counts(db: sqlite3.Connection, model: str) -> VectorCounts:
    indexed = int(db.execute("SELECT coalesce(sum(messages), 0) FROM folders").fetchone()[0])
    recorded = stored_model(db)
    if recorded is None or recorded.name != model:
        return VectorCounts(0, indexed)
    with_vectors = int(db.execute("SELECT count(*) FROM vectors").fetchone()[0])
    return VectorCounts(min(with_vectors, indexed), indexed)


def candidate_ids(
    db: sqlite3.Connection, query: Query, folders: Sequence[tuple[int, int]], every: bool
) -> list[int]:
    """The row ids of the messages of ``folders`` (id, messages) that ``query`` matches (``every``: the
    folders are every stored folder)."""
    fts = compile_fts5(query)
    ids = [folder for folder, _ in folders]
    if fts.match is not None:
        match = fts.match if every else in_places(fts.match, ids)
        sql = f"SELECT fts.rowid FROM fts CROSS JOIN messages m ON m.id = fts.rowid WHERE fts MATCH ? AND ({fts.where})"
        return [row[0] for row in db.execute(sql, [match, *fts.params])]
    sql = f"SELECT m.id FROM messages m WHERE m.folder IN ({', '.join('?' for _ in ids)}) AND ({fts.where})"
    return [row[0] for row in db.execute(sql, [*ids, *fts.params])]


def read_rows(
    db: sqlite3.Connection, dimensions: int
) -> Callable[[list[int]], dict[int, npt.NDArray[np.int8]]]:
    """The int8 rows of each of a list of messages (row ids) that has vectors."""
    import numpy as np

    def read(ids: list[int]) -> dict[int, npt.NDArray[np.int8]]:
        found: dict[int, npt.NDArray[np.int8]] = {}
        for first in range(0, len(ids), _CHUNK):
            chunk = ids[first : first + _CHUNK]
            for message, blob in db.execute(
                f"SELECT message, passages FROM vectors WHERE message IN ({', '.join('?' for _ in chunk)})",
                chunk,
            ):
                found[int(message)] = np.frombuffer(blob, dtype=np.int8).reshape(-1, dimensions)
        return found

    return read


def nearest(
    db: sqlite3.Connection,
    held: HeldSignatures,
    vector: npt.NDArray[np.float32],
    query: Query | None,
    folders: Sequence[str],
    limit: int,
) -> list[Hit]:
    """:meth:`~mail_imap_mcp.index.vectors.VectorStore.nearest` on the read transaction of ``db``."""
    import numpy as np

    from mail_imap_mcp.meaning.vectors import EXACT_MOST, RERANK, exact, unit

    model = stored_model(db)
    target = unit(vector)
    if model is None or limit <= 0 or len(target) != model.dimensions or not target.any():
        return []
    stored = db.execute("SELECT name, id, messages FROM folders").fetchall()
    wanted = set(folders)
    searched = [(folder, count) for name, folder, count in stored if name in wanted]
    if not searched:
        return []
    every = len(searched) == len(stored)
    read = read_rows(db, model.dimensions)
    ids = None
    if query is not None:
        ids = candidate_ids(db, query, searched, every)
    elif sum(count for _, count in searched) <= EXACT_MOST:
        marks = ", ".join("?" for _ in searched)
        ids = [
            row[0]
            for row in db.execute(f"SELECT id FROM messages WHERE folder IN ({marks})", [*dict(searched)])
        ]
    if ids is not None and len(ids) <= EXACT_MOST:
        pairs = exact(target, read(ids), limit)
    else:
        groups = None if every else [folder for folder, _ in searched]
        among = None if ids is None else np.unique(np.asarray(ids, dtype=np.int64))
        chosen = held.first_pass(db, model, target, groups, among, max(RERANK, 2 * limit))
        pairs = exact(target, read(chosen), limit)
    return rows_of(db, [key for key, _ in pairs], [1.0 - cosine for _, cosine in pairs])


class HeldSignatures:
    """The signatures of a file's vectors in memory (:class:`~mail_imap_mcp.meaning.vectors.Signatures`)
    and how far they are: the model's epoch, the last row and the last removal applied."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self.signatures: Signatures | None = None
        self._epoch: str | None = None
        self._row = 0
        self._gone = 0

    def first_pass(
        self,
        db: sqlite3.Connection,
        model: Model,
        target: npt.NDArray[np.float32],
        groups: list[int] | None,
        ids: npt.NDArray[np.int64] | None,
        keep: int,
    ) -> list[int]:
        """The messages of the ``keep`` passages whose signatures are nearest ``target`` among those of
        the folders ``groups`` (None: any) and the messages ``ids`` (sorted; None: any), as of ``db``'s
        snapshot."""
        with self._guard:
            held = self._refreshed(db, model)
            mask = held.candidates(groups, ids)
            return [int(key) for key in held.first_pass(target, mask, keep)]

    def _refreshed(self, db: sqlite3.Connection, model: Model) -> Signatures:
        """The signatures as of ``db``'s snapshot: the rows and removals written since the last refresh
        applied, or every row read again (another model's vectors, or removals no longer kept)."""
        from mail_imap_mcp.meaning.vectors import Signatures

        gone_first, gone_last = db.execute("SELECT min(seq), max(seq) FROM vectors_gone").fetchone()
        behind = gone_first is not None and gone_first > self._gone + 1
        if self.signatures is None or self._epoch != model.epoch or behind:
            self.signatures = Signatures(-(-model.dimensions // 64))
            self._epoch, self._row, self._gone = model.epoch, 0, int(gone_last or 0)
        elif gone_last is not None and gone_last > self._gone:
            removed = db.execute("SELECT message FROM vectors_gone WHERE seq > ?", (self._gone,))
            self.signatures.remove(int(row[0]) for row in removed)
            self._gone = int(gone_last)
        self._add_since(db, model.dimensions, self.signatures)
        return self.signatures

    def _add_since(self, db: sqlite3.Connection, dimensions: int, held: Signatures) -> None:
        from mail_imap_mcp.meaning.vectors import signatures

        for seq, messages, groups, rows in _batches(db, self._row, dimensions):
            held.add(messages, groups, signatures(rows))
            self._row = seq


def _batches(
    db: sqlite3.Connection, after: int, dimensions: int
) -> Iterator[tuple[int, npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.int8]]]:
    """The passages of the rows past ``after``, a batch at a time: the last row's seq, and each passage's
    message, folder and int8 row."""
    import numpy as np

    cursor = db.execute(
        "SELECT v.seq, v.message, m.folder, v.passages FROM vectors v JOIN messages m ON m.id = v.message "
        "WHERE v.seq > ? ORDER BY v.seq",
        (after,),
    )
    while batch := cursor.fetchmany(_LOAD_BATCH):
        blobs = [row[3] for row in batch]
        counts = np.fromiter((len(blob) // dimensions for blob in blobs), dtype=np.int64, count=len(batch))
        rows = np.frombuffer(b"".join(blobs), dtype=np.int8).reshape(-1, dimensions)
        messages = np.repeat(np.fromiter((row[1] for row in batch), dtype=np.int64, count=len(batch)), counts)
        groups = np.repeat(np.fromiter((row[2] for row in batch), dtype=np.int32, count=len(batch)), counts)
        yield int(batch[-1][0]), messages, groups, rows

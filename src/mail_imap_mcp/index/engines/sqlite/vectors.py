"""The vectors of the SQLite engines (:class:`~mail_imap_mcp.index.vectors.VectorStore`), in the index
file beside the messages they belong to.

Tables (added to an index file that lacks them, so an index built before gains them; no message is
indexed again): ``vector_model`` (one row: the model the vectors were made with, their dimensions, an
epoch drawn whenever they are all dropped, and how many messages have them), ``vectors`` (a row per
message that has them: its passages' rows as one blob, six bits a component, :mod:`.vector_layout`; a
message without passages has an empty one, so it is not made again) and
``vector_changes`` (the messages whose vectors came or went, in order, the last :data:`CHANGES_KEPT`).
Triggers remove a message's vectors with the message, whatever removes it (expunged, replaced, its folder
dropped or its UIDVALIDITY changed), count them and log each change, so a copy in memory
(:class:`~mail_imap_mcp.meaning.vectors.Signatures`: the passages' signatures alone) is brought up to
date by reading again the messages changed since the last change it applied.

A row's key is :data:`KEY_BASE` minus the message's row id: the pass gives the newest messages vectors
first, and so appends its rows at the end of the table, whose pages fill whole (keyed by the row id, a
pass newest first left them half empty: 515 bytes a message, not 273); no index on the message is needed.
"""

from __future__ import annotations

import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mail_imap_mcp.index.engines.sqlite import densities as stored_densities
from mail_imap_mcp.index.engines.sqlite.query import Fts5Query, folder_column, in_places
from mail_imap_mcp.index.engines.sqlite.vector_layout import (
    KEY_BASE,
    PACKED,
    blobs,
    int8_rows,
    signature_words,
)
from mail_imap_mcp.index.store import unpack_texts
from mail_imap_mcp.index.vectors import Densities, VectorCounts, VectorTodo

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from mail_imap_mcp.meaning.vectors import Passing, Signatures

#: Changes kept in ``vector_changes`` (trimmed at twice this); a copy in memory further behind reads
#: every vector again.
CHANGES_KEPT = 10_000
#: Rows read at once when a copy in memory is made whole (its rows are dropped batch by batch).
_LOAD_BATCH = 2_000
#: Ids named in one statement at most.
_CHUNK = 400


@dataclass(frozen=True)
class Model:
    """The model the stored vectors were made with."""

    name: str
    dimensions: int
    epoch: str
    #: Messages that have vectors, and the bytes of their rows as int8 (the passages times the dimensions).
    messages: int
    bytes: int = 0


def stored_model(db: sqlite3.Connection) -> Model | None:
    row = db.execute("SELECT name, dimensions, epoch, messages, bytes FROM vector_model").fetchone()
    return None if row is None else Model(str(row[0]), int(row[1]), str(row[2]), int(row[3]), int(row[4]))


def todo(db: sqlite3.Connection, model: str, below: int | None, limit: int) -> list[tuple[int, VectorTodo]]:
    """Up to ``limit`` messages without vectors of ``model`` (every one where the vectors are another
    model's), below the row ``below`` (None: from the newest), newest first, with their row ids."""
    recorded = stored_model(db)
    missing = "1" if recorded is None or recorded.name != model else "v.key IS NULL"
    bound = "" if below is None else "AND m.id < ?"
    rows = db.execute(
        "SELECT m.id, f.name, m.uid, m.doc FROM messages m JOIN folders f ON f.id = m.folder "
        f"LEFT JOIN vectors v ON v.key = {KEY_BASE} - m.id WHERE {missing} {bound} ORDER BY m.id DESC LIMIT ?",
        (limit,) if below is None else (below, limit),
    ).fetchall()
    return [(int(row_id), VectorTodo(name, uid, tuple(unpack_texts(doc)))) for row_id, name, uid, doc in rows]


def put(
    db: sqlite3.Connection,
    model: str,
    vectors: Mapping[tuple[str, int], npt.NDArray[np.float32]],
    densities: Densities | None = None,
) -> None:
    """Keep each message's passages' vectors, six bits a component (inside the caller's transaction,
    :mod:`.vector_layout`), and their ``densities`` where of the reference recorded (else they have
    none, :mod:`.densities`); the vectors of another model are dropped first, with the densities."""
    import numpy as np

    if not vectors:
        return
    recorded = stored_model(db)
    dimensions = next((int(rows.shape[1]) for rows in vectors.values() if rows.ndim == 2), None)
    if recorded is None or recorded.name != model or (dimensions and recorded.dimensions != dimensions):
        db.execute("DELETE FROM vectors")
        db.execute("DELETE FROM vector_changes")
        db.execute("DELETE FROM vector_model")
        stored_densities.clear(db)
        db.execute(
            "INSERT INTO vector_model(name, dimensions, epoch, messages, bytes) VALUES (?, ?, ?, 0, 0)",
            (model, dimensions or 0, uuid.uuid4().hex),
        )
    row_ids = _row_ids(db, list(vectors))
    kept = sorted(  # ascending keys (the newest first): appended at the table's end
        (KEY_BASE - row_ids[place], place)
        for place in vectors
        if place in row_ids  # else removed meanwhile
    )
    if kept:
        every = np.concatenate([vectors[place] for _, place in kept])
        made = blobs(every, [len(vectors[place]) for _, place in kept])
        db.executemany(
            "DELETE FROM vectors WHERE key = ?", [(key,) for key, _ in kept]
        )  # not REPLACE: counted
        db.executemany(
            f"INSERT INTO vectors(key, passages, layout) VALUES (?, ?, {PACKED})",
            [(key, blob) for (key, _), blob in zip(kept, made, strict=True)],
        )
        if densities is None or not stored_densities.put_values(db, densities, row_ids):
            stored_densities.forget(db, [key for key, _ in kept])
    first, last = db.execute("SELECT min(seq), max(seq) FROM vector_changes").fetchone()
    if last is not None and last - first > CHANGES_KEPT * 2:
        db.execute("DELETE FROM vector_changes WHERE seq <= ?", (last - CHANGES_KEPT,))


def _row_ids(db: sqlite3.Connection, places: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """The row id of each of ``places`` (folder, UID) the index holds."""
    found: dict[tuple[str, int], int] = {}
    by_folder: dict[str, list[int]] = {}
    for folder, uid in places:
        by_folder.setdefault(folder, []).append(uid)
    for folder, uids in by_folder.items():
        for first in range(0, len(uids), _CHUNK):
            chunk = uids[first : first + _CHUNK]
            rows = db.execute(
                "SELECT m.uid, m.id FROM messages m JOIN folders f ON f.id = m.folder WHERE f.name = ? "
                f"AND m.uid IN ({', '.join('?' for _ in chunk)})",
                [folder, *chunk],
            )
            found.update(((folder, int(uid)), int(row_id)) for uid, row_id in rows)
    return found


def counts(db: sqlite3.Connection, model: str, folders: Sequence[str] | None = None) -> VectorCounts:
    """How many messages (of ``folders``; None: every folder) have vectors of ``model``: the count the
    triggers keep where every message has them, else those of ``folders`` read (a pass is under way)."""
    indexed = int(db.execute("SELECT coalesce(sum(messages), 0) FROM folders").fetchone()[0])
    recorded = stored_model(db)
    with_vectors = 0 if recorded is None or recorded.name != model else min(recorded.messages, indexed)
    if folders is None or with_vectors == indexed:
        return VectorCounts(with_vectors, indexed)
    marks = ", ".join("?" for _ in folders)
    searched = int(
        db.execute(
            f"SELECT coalesce(sum(messages), 0) FROM folders WHERE name IN ({marks})", list(folders)
        ).fetchone()[0]
    )
    if not with_vectors:
        return VectorCounts(0, searched)
    vectored = db.execute(
        f"SELECT count(*) FROM messages m JOIN folders f ON f.id = m.folder JOIN vectors v "
        f"ON v.key = {KEY_BASE} - m.id WHERE f.name IN ({marks})",
        list(folders),
    ).fetchone()
    return VectorCounts(min(int(vectored[0]), searched), searched)


def candidate_ids(
    db: sqlite3.Connection, fts: Fts5Query, folders: Sequence[tuple[int, int]], every: bool
) -> npt.NDArray[np.int64]:
    """The row ids of the messages of ``folders`` (id, messages) that ``fts`` matches (``every``: the
    folders are every stored folder), ascending. Read as one list SQLite joins (a row to Python for each
    match took twice as long: 77,485 rows 21 ms against 10 ms)."""
    ids = [folder for folder, _ in folders]
    if fts.match is not None:
        match = fts.match if every else in_places(fts.match, ids)
        if fts.where == "1":  # text alone: FTS5's own rows, without a look-up of each message
            return _listed(db, "SELECT group_concat(rowid) FROM fts WHERE fts MATCH ?", [match])
        sql = (
            "SELECT group_concat(fts.rowid) FROM fts CROSS JOIN messages m ON m.id = fts.rowid "
            f"WHERE fts MATCH ? AND ({fts.where})"
        )
        return _listed(db, sql, [match, *fts.params])
    if every:  # every row is of one of them
        return _listed(db, f"SELECT group_concat(m.id) FROM messages m WHERE {fts.where}", fts.params)
    held = int(db.execute("SELECT coalesce(sum(messages), 0) FROM folders").fetchone()[0])
    column = folder_column(sum(count for _, count in folders), held, fts.flagged)
    marks = ", ".join("?" for _ in ids)
    sql = f"SELECT group_concat(m.id) FROM messages m WHERE {column} IN ({marks}) AND ({fts.where})"
    return _listed(db, sql, [*ids, *fts.params])


def _listed(db: sqlite3.Connection, sql: str, params: Sequence[object]) -> npt.NDArray[np.int64]:
    """The row ids ``sql`` joins into one list (``group_concat``), ascending, each once (sorted only
    where they are not: ``np.unique`` hashes them first, 80 ms for 77,485 ascending ids)."""
    import numpy as np

    joined = db.execute(sql, params).fetchone()[0]
    ids = np.fromstring(joined or "", dtype=np.int64, sep=",")
    if len(ids) > 1 and not (ids[1:] > ids[:-1]).all():  # a join's order (FTS5's own rows ascend)
        ids = np.sort(ids)
        ids = ids[np.concatenate(([True], ids[1:] != ids[:-1]))]
    return ids


def passing_conditions(db: sqlite3.Connection, fts: Fts5Query) -> Passing:
    """Which of some messages ``fts``'s conditions pass (it has no text to match): asked of each
    message's row, a few hundred at a time."""
    import numpy as np

    def passing(ids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        found = [np.zeros(0, dtype=np.int64)]
        for first in range(0, len(ids), _CHUNK):
            chunk = ids[first : first + _CHUNK].tolist()
            sql = (
                f"SELECT group_concat(m.id) FROM messages m WHERE m.id IN ({', '.join('?' for _ in chunk)}) "
                f"AND ({fts.where})"
            )
            found.append(_listed(db, sql, [*chunk, *fts.params]))
        return np.concatenate(found)

    return passing


def read_rows(
    db: sqlite3.Connection, dimensions: int
) -> Callable[[list[int]], dict[int, npt.NDArray[np.int8]]]:
    """The int8 rows of each of a list of messages (row ids) that has vectors (packed rows read back:
    :func:`~.vector_layout.int8_rows`)."""

    def read(ids: list[int]) -> dict[int, npt.NDArray[np.int8]]:
        found: dict[int, npt.NDArray[np.int8]] = {}
        for first in range(0, len(ids), _CHUNK):
            chunk = ids[first : first + _CHUNK]
            rows = db.execute(
                f"SELECT key, passages, layout FROM vectors WHERE key IN ({', '.join('?' for _ in chunk)})",
                [KEY_BASE - row_id for row_id in chunk],
            ).fetchall()
            read = int8_rows([(blob, layout) for _, blob, layout in rows], dimensions)
            found.update((KEY_BASE - int(key), part) for (key, _, _), part in zip(rows, read, strict=True))
        return found

    return read


class HeldSignatures:
    """The signatures of a file's vectors in memory (:class:`~mail_imap_mcp.meaning.vectors.Signatures`)
    and how far they are: the model's epoch and the last change applied."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self.signatures: Signatures | None = None
        self._epoch: str | None = None
        #: The last change applied (``vector_changes.seq``).
        self._changes = 0

    def first_pass(
        self,
        db: sqlite3.Connection,
        model: Model,
        target: npt.NDArray[np.float32],
        groups: list[int] | None,
        ids: npt.NDArray[np.int64] | None,
        keep: int,
        passing: Passing | None = None,
        *,
        checked: bool = False,
    ) -> list[int] | None:
        """The messages of the ``keep`` passages whose signatures are nearest ``target`` among those of
        the folders ``groups`` (None: any) and the messages ``ids`` (sorted; None: any) that ``passing``
        passes (None: too few of the nearest, :meth:`~mail_imap_mcp.meaning.vectors.Signatures.
        first_pass`), as of ``db``'s snapshot (``checked``: the changes already applied on it, by an
        earlier pass of the same search: not asked again)."""
        with self._guard:
            held = self._refreshed(db, model, checked)
            mask = held.candidates(groups, ids)
            if passing is None:
                return [int(key) for key in held.first_pass(target, mask, keep)]
            chosen = held.first_pass_passed(target, mask, keep, passing)
            return None if chosen is None else [int(key) for key in chosen]

    def _refreshed(self, db: sqlite3.Connection, model: Model, checked: bool = False) -> Signatures:
        """The signatures as of ``db``'s snapshot: the messages changed since the last refresh read again,
        or every one (another model's vectors, or changes no longer kept); as they are where ``checked``
        on this snapshot already (of the same model)."""
        from mail_imap_mcp.meaning.vectors import Signatures

        if checked and self.signatures is not None and self._epoch == model.epoch:
            return self.signatures
        # Two look-ups of the key's ends: ``min(seq), max(seq)`` in one statement scans the table
        # (1.1 ms at 18,000 changes, every nearest).
        first, last = db.execute(
            "SELECT (SELECT min(seq) FROM vector_changes), (SELECT max(seq) FROM vector_changes)"
        ).fetchone()
        behind = first is not None and first > self._changes + 1
        if self.signatures is None or self._epoch != model.epoch or behind:
            self.signatures = Signatures.of_dimensions(model.dimensions)
            self.signatures.reserve(model.bytes // max(model.dimensions, 1))  # every passage, no more
            self._epoch, self._changes = model.epoch, int(last or 0)
            self._add(db, model.dimensions, "", [])
        elif last is not None and last > self._changes:
            changed = sorted(
                {
                    int(row[0])
                    for row in db.execute(
                        "SELECT message FROM vector_changes WHERE seq > ?", (self._changes,)
                    )
                }
            )
            self.signatures.remove(changed)
            for start in range(0, len(changed), _CHUNK):
                chunk = changed[start : start + _CHUNK]
                marks = ", ".join("?" for _ in chunk)
                self._add(
                    db, model.dimensions, f"WHERE v.key IN ({marks})", [KEY_BASE - row for row in chunk]
                )
            self._changes = int(last)
        return self.signatures

    def _add(self, db: sqlite3.Connection, dimensions: int, where: str, params: list[int]) -> None:
        assert self.signatures is not None
        for messages, groups, words, large in _batches(db, dimensions, where, params, self.signatures.sizes):
            self.signatures.add(messages, groups, words, large)


def _batches(
    db: sqlite3.Connection, dimensions: int, where: str, params: list[int], sizes: bool
) -> Iterator[
    tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.uint64], npt.NDArray[np.uint64] | None]
]:
    """The passages of the vector rows ``where`` says, a batch at a time: each passage's message, folder,
    signature and large components (where ``sizes``)."""
    import numpy as np

    cursor = db.execute(
        f"SELECT {KEY_BASE} - v.key, m.folder, v.passages, v.layout FROM vectors v "
        f"JOIN messages m ON m.id = {KEY_BASE} - v.key {where}",
        params,
    )
    while batch := cursor.fetchmany(_LOAD_BATCH):
        owners, words, large = signature_words([(row[2], row[3]) for row in batch], dimensions, sizes)
        messages = np.fromiter((row[0] for row in batch), dtype=np.int64, count=len(batch))[owners]
        groups = np.fromiter((row[1] for row in batch), dtype=np.int32, count=len(batch))[owners]
        yield messages, groups, words, large

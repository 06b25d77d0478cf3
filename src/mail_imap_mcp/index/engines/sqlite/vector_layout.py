"""How the SQLite engines lay their vectors out in the index file (:mod:`.vectors`): the tables and
triggers, a message's passages as one blob, and an earlier file's rows brought to this layout.

``vectors`` keeps a row per message: its key (:data:`KEY_BASE` minus the message's row id), its passages'
rows as one blob, and the blob's ``layout``: 1, six bits a component (:mod:`mail_imap_mcp.meaning.packed`:
192 bytes a passage of 256 dimensions), or NULL, the int8 rows of a file written before
(:func:`~mail_imap_mcp.meaning.vectors.quantised`, 256 bytes). Both are read; only the first is written.
A file whose rows are int8 gains the column when opened (its triggers made again, nothing else
written), and its rows are packed in the background (:func:`repack`, by the pass behind the words), in
order of their keys from ``vector_model.repack_after`` (NULL once none is left), so a pass stopped
anywhere goes on where it stopped. A batch of rows is deleted and stored again packed, not updated in
place: the pages the int8 rows emptied go to the file's free list for what comes next (updated in place,
each page kept a quarter unused: 374 bytes a message at 100,000, not 287). A row packed keeps its
passages' signatures (the signs are the int8 row's), so copies in memory are not told of it: the
triggers log no change while ``vector_model.repacking`` is set (within :func:`repack`'s transaction).

``vector_model.bytes`` counts what the rows would take as int8 (a packed row's bytes times four
thirds): the passages are it divided by the dimensions, whatever the layout.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: Row ids per second of sent date (a row id is the sent time times this, plus a counter).
IDS_PER_SECOND = 4096
#: What a vector row's key is taken from: the key is this minus the message's row id (a row id is its sent
#: time times 4096: below this until the year 3058; a larger one makes a negative key, as good).
KEY_BASE = 1 << 47
#: ``vectors.layout`` of rows of six bits a component (NULL: int8 rows).
PACKED = 1
#: A blob's bytes counted as int8 rows (``vector_model.bytes``).
_AS_INT8 = (
    "(CASE WHEN {row}.layout IS NULL THEN length({row}.passages) ELSE length({row}.passages) * 4 / 3 END)"
)
_TRIGGERS = (
    "CREATE TRIGGER IF NOT EXISTS vectors_with_message AFTER DELETE ON messages "
    f"BEGIN DELETE FROM vectors WHERE key = {KEY_BASE} - old.id; END",
    "CREATE TRIGGER IF NOT EXISTS vectors_added AFTER INSERT ON vectors BEGIN "
    f"INSERT INTO vector_changes(message) SELECT {KEY_BASE} - new.key FROM vector_model WHERE NOT repacking; "
    f"UPDATE vector_model SET messages = messages + 1, bytes = bytes + {_AS_INT8.format(row='new')}; END",
    "CREATE TRIGGER IF NOT EXISTS vectors_removed AFTER DELETE ON vectors BEGIN "
    f"INSERT INTO vector_changes(message) SELECT {KEY_BASE} - old.key FROM vector_model WHERE NOT repacking; "
    f"UPDATE vector_model SET messages = messages - 1, bytes = bytes - {_AS_INT8.format(row='old')}; END",
)
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS vector_model("
    "name TEXT NOT NULL, dimensions INTEGER NOT NULL, epoch TEXT NOT NULL, messages INTEGER NOT NULL, "
    "bytes INTEGER NOT NULL, repack_after INTEGER, repacking INTEGER NOT NULL DEFAULT 0)",
    "CREATE TABLE IF NOT EXISTS vectors(key INTEGER PRIMARY KEY, passages BLOB NOT NULL, layout INTEGER)",
    "CREATE TABLE IF NOT EXISTS vector_changes(seq INTEGER PRIMARY KEY AUTOINCREMENT, message INTEGER NOT NULL)",
    *_TRIGGERS,
)
#: Rows packed per transaction at most (:func:`repack`).
REPACK_BATCH = 2_000

Transaction = Callable[[], AbstractContextManager[None]]


def prepare_vectors(db: sqlite3.Connection, transaction: Transaction) -> None:
    """Add the vectors' tables and triggers to an index file that lacks them, bring them from int8 rows
    to this layout (:func:`_from_int8`), or drop them where they are of a layout before that (vectors
    are made again from the file's texts). Written only then: opening an index another process writes
    waits for nobody."""
    if _layout(db) == "current":
        return
    with transaction():
        layout = _layout(db)  # made meanwhile by another connection?
        if layout == "current":
            return
        if layout == "int8":
            _from_int8(db)
            return
        for trigger in ("vectors_with_message", "vectors_added", "vectors_removed"):
            db.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        for table in ("vectors", "vector_changes", "vectors_gone", "vector_model"):
            db.execute(f"DROP TABLE IF EXISTS {table}")
        for statement in _SCHEMA:
            db.execute(statement)


def _layout(db: sqlite3.Connection) -> str:
    """``current``: the file's vectors are laid out as this version writes them; ``int8``: as the version
    before (int8 rows: no ``layout`` column, nor ``vector_model.repacking``); else ``other`` (none, or
    older)."""
    found = db.execute(
        "SELECT count(*) FROM sqlite_master WHERE name = 'vectors_removed' "
        "UNION ALL SELECT count(*) FROM pragma_table_info('vector_model') WHERE name = 'bytes' "
        "UNION ALL SELECT count(*) FROM pragma_table_info('vectors') WHERE name = 'key' "
        "UNION ALL SELECT count(*) FROM pragma_table_info('vectors') WHERE name = 'layout' "
        "UNION ALL SELECT count(*) FROM pragma_table_info('vector_model') WHERE name = 'repacking'"
    ).fetchall()
    *int8, layout, repacking = (bool(count) for (count,) in found)
    if all(int8) and layout == repacking:
        return "current" if layout else "int8"
    return "other"


def _from_int8(db: sqlite3.Connection) -> None:
    """The layout of int8 rows brought to this one: the ``layout`` column (NULL on every row: int8), the
    triggers that count packed rows, and the rows to pack from the first key."""
    db.execute("ALTER TABLE vectors ADD COLUMN layout INTEGER")
    db.execute("ALTER TABLE vector_model ADD COLUMN repack_after INTEGER")
    db.execute("ALTER TABLE vector_model ADD COLUMN repacking INTEGER NOT NULL DEFAULT 0")
    db.execute("UPDATE vector_model SET repack_after = (SELECT min(key) - 1 FROM vectors)")
    for trigger in ("vectors_added", "vectors_removed"):
        db.execute(f"DROP TRIGGER {trigger}")
    for statement in _TRIGGERS:
        db.execute(statement)


def blobs(rows: npt.NDArray[np.float32], counts: Sequence[int]) -> list[bytes]:
    """The blobs (layout :data:`PACKED`) of messages whose passages' unit rows are ``rows``, ``counts``
    of them for each message in turn."""
    from mail_imap_mcp.meaning.packed import packed, runs

    return [part.tobytes() for part in runs(packed(rows), counts)]


def int8_rows(blobs: Sequence[tuple[bytes, int | None]], dimensions: int) -> list[npt.NDArray[np.int8]]:
    """Each of some blobs (with its layout) as its passages' int8 rows, whatever the layout: read back
    together (a blob at a time, numpy's calls cost 30 microseconds each, 12 ms for a page's 400)."""
    import numpy as np

    from mail_imap_mcp.meaning.packed import runs, unpacked

    found = [np.zeros((0, dimensions), dtype=np.int8)] * len(blobs)
    for packed, at, counts, rows in _layouts(blobs, dimensions):
        read = unpacked(rows, dimensions) if packed else rows.view(np.int8)
        for place, part in zip(at, runs(read, counts.tolist()), strict=True):
            found[place] = part
    return found


def signature_words(
    blobs: Sequence[tuple[bytes, int | None]], dimensions: int, sizes: bool = True
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.uint64], npt.NDArray[np.uint64] | None]:
    """Every passage's signature and large components (:func:`~mail_imap_mcp.meaning.vectors.large_bits`;
    None unless ``sizes``) of some blobs (with their layouts), and which blob each is of."""
    import numpy as np

    from mail_imap_mcp.meaning.packed import packed_large, packed_signatures
    from mail_imap_mcp.meaning.vectors import large_bits, signatures

    owners = [np.zeros(0, dtype=np.intp)]
    words = [np.zeros((0, -(-dimensions // 64)), dtype=np.uint64)]
    large = list(words)
    for packed, at, counts, rows in _layouts(blobs, dimensions):
        words.append(packed_signatures(rows, dimensions) if packed else signatures(rows.view(np.int8)))
        if sizes:
            large.append(packed_large(rows, dimensions) if packed else large_bits(rows.view(np.int8)))
        owners.append(np.repeat(np.asarray(at, dtype=np.intp), counts))
    return np.concatenate(owners), np.concatenate(words), np.concatenate(large) if sizes else None


def _layouts(
    blobs: Sequence[tuple[bytes, int | None]], dimensions: int
) -> Iterator[tuple[bool, Sequence[int], npt.NDArray[np.int64], npt.NDArray[np.uint8]]]:
    """The blobs of each layout there is among ``blobs`` (packed or not), joined: whether packed, where
    each is among ``blobs``, its passages, and their rows (one a row; int8 rows as bytes). Blobs all
    of one layout (a file packed whole, or not yet) are joined without sorting them out."""
    import numpy as np

    from mail_imap_mcp.meaning.packed import row_bytes

    lengths = np.fromiter((len(blob) for blob, _ in blobs), dtype=np.int64, count=len(blobs))
    packed = {layout is not None for _, layout in blobs}
    for each, width in ((False, dimensions), (True, row_bytes(dimensions))):
        if each not in packed:
            continue
        if len(packed) == 1:
            at: Sequence[int] = range(len(blobs))
            joined = b"".join(blob for blob, _ in blobs)
        else:
            at = [n for n, (_, layout) in enumerate(blobs) if (layout is not None) == each]
            joined = b"".join(blobs[n][0] for n in at)
        yield each, at, lengths[list(at)] // width, np.frombuffer(joined, dtype=np.uint8).reshape(-1, width)


def repack(db: sqlite3.Connection, dimensions: int) -> int:
    """Pack up to :data:`REPACK_BATCH` int8 rows (inside the caller's transaction), the next after
    ``vector_model.repack_after`` by key; how many (0: none is left, and ``repack_after`` is NULL)."""
    import numpy as np

    limit = REPACK_BATCH
    row = db.execute("SELECT repack_after FROM vector_model").fetchone()
    if row is None or row[0] is None:
        return 0
    found = db.execute(
        "SELECT key, passages FROM vectors WHERE key > ? AND layout IS NULL ORDER BY key LIMIT ?",
        (row[0], limit),
    ).fetchall()
    if found:
        rows = [np.frombuffer(blob, dtype=np.int8).reshape(-1, dimensions) for _, blob in found]
        every = np.concatenate(rows).astype(np.float32)
        packed = blobs(every, [len(part) for part in rows])
        db.execute("UPDATE vector_model SET repacking = 1")
        db.executemany("DELETE FROM vectors WHERE key = ?", [(key,) for key, _ in found])
        db.executemany(
            f"INSERT INTO vectors(key, passages, layout) VALUES (?, ?, {PACKED})",
            [(key, blob) for (key, _), blob in zip(found, packed, strict=True)],
        )
    db.execute(
        "UPDATE vector_model SET repacking = 0, repack_after = ?",
        (found[-1][0] if len(found) == limit else None,),
    )
    return len(found)

"""Each message's density beside its vectors in the SQLite engines (:mod:`mail_imap_mcp.index.densities`):
``densities`` (a row per message that has one: its vector row's key, the reference's generation it was
found against, the density), ``density_members`` (the reference's messages, by their vector rows' keys)
and ``density_reference`` (one row: the generation, raised at each draw, the messages with vectors when it
was drawn and how many it drew; 0 drawn: none recorded). A trigger removes a message's density and
membership with the message; vectors of another model drop them all (:func:`clear`). Added to an index
file that lacks them (:func:`prepare_densities`): its messages gain densities by the pass behind the
words."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

from mail_imap_mcp.index.engines.sqlite.vector_layout import KEY_BASE
from mail_imap_mcp.index.vectors import Densities, DensityReference

Place = tuple[str, int]
Transaction = Callable[[], AbstractContextManager[None]]
#: Ids named in one statement at most.
_CHUNK = 400

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS densities(key INTEGER PRIMARY KEY, generation INTEGER NOT NULL, "
    "density REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS density_members(key INTEGER PRIMARY KEY)",
    "CREATE TABLE IF NOT EXISTS density_reference(generation INTEGER NOT NULL, counted INTEGER NOT NULL, "
    "drawn INTEGER NOT NULL)",
    "CREATE TRIGGER IF NOT EXISTS densities_with_message AFTER DELETE ON messages BEGIN "
    f"DELETE FROM densities WHERE key = {KEY_BASE} - old.id; "
    f"DELETE FROM density_members WHERE key = {KEY_BASE} - old.id; END",
)


def prepare_densities(db: sqlite3.Connection, transaction: Transaction) -> None:
    """Add the densities' tables and trigger to an index file that lacks them (written only then)."""
    if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'densities_with_message'").fetchone():
        return
    with transaction():
        for statement in _SCHEMA:
            db.execute(statement)


def generation(db: sqlite3.Connection) -> int | None:
    """The generation of the reference recorded (None: none)."""
    row = db.execute("SELECT generation FROM density_reference WHERE drawn > 0").fetchone()
    return None if row is None else int(row[0])


def reference(db: sqlite3.Connection) -> DensityReference | None:
    """The reference recorded, its members in the order of their keys (the newest first)."""
    row = db.execute("SELECT generation, counted FROM density_reference WHERE drawn > 0").fetchone()
    if row is None:
        return None
    members = db.execute(
        "SELECT f.name, m.uid FROM density_members d JOIN messages m ON m.id = "
        f"{KEY_BASE} - d.key JOIN folders f ON f.id = m.folder ORDER BY d.key"
    ).fetchall()
    return DensityReference(int(row[0]), int(row[1]), tuple((str(name), int(uid)) for name, uid in members))


def put_reference(db: sqlite3.Connection, row_ids: Sequence[int], counted: int) -> int:
    """Record the messages ``row_ids`` as the reference (inside the caller's transaction); its generation."""
    db.execute("DELETE FROM density_members")
    db.executemany(
        "INSERT OR IGNORE INTO density_members(key) VALUES (?)", [(KEY_BASE - row,) for row in row_ids]
    )
    row = db.execute("SELECT generation FROM density_reference").fetchone()
    made = (0 if row is None else int(row[0])) + 1
    db.execute("DELETE FROM density_reference")
    db.execute(
        "INSERT INTO density_reference(generation, counted, drawn) VALUES (?, ?, ?)",
        (made, counted, len(row_ids)),
    )
    return made


def clear(db: sqlite3.Connection) -> None:
    """Drop every density and the reference (inside the caller's transaction): the vectors are made again.
    The generation stays, so none found before is taken for one of the next reference."""
    db.execute("DELETE FROM densities")
    db.execute("DELETE FROM density_members")
    db.execute("UPDATE density_reference SET drawn = 0, counted = 0")


def put_values(db: sqlite3.Connection, densities: Densities, row_ids: dict[Place, int]) -> bool:
    """Keep ``densities`` of the messages of ``row_ids`` (inside the caller's transaction) where their
    generation is the reference's; whether it is."""
    if generation(db) != densities.generation:
        return False
    db.executemany(
        "INSERT OR REPLACE INTO densities(key, generation, density) VALUES (?, ?, ?)",
        [
            (KEY_BASE - row_ids[place], densities.generation, float(value))
            for place, value in densities.values.items()
            if place in row_ids
        ],
    )
    return True


def forget(db: sqlite3.Connection, keys: Sequence[int]) -> None:
    """Drop the densities of the vector rows ``keys`` (their vectors were made again without one)."""
    db.executemany("DELETE FROM densities WHERE key = ?", [(key,) for key in keys])


def todo(db: sqlite3.Connection, made: int, after: int | None, limit: int) -> list[tuple[int, Place]]:
    """Up to ``limit`` messages with vectors and no density of the generation ``made``, after the vector
    row key ``after`` (None: from the first), in the order of their keys (the newest first), with them."""
    rows = db.execute(
        "SELECT v.key, f.name, m.uid FROM vectors v LEFT JOIN densities d ON d.key = v.key "
        f"JOIN messages m ON m.id = {KEY_BASE} - v.key JOIN folders f ON f.id = m.folder "
        "WHERE (d.key IS NULL OR d.generation != ?) AND v.key > ? ORDER BY v.key LIMIT ?",
        (made, -(1 << 62) if after is None else after, limit),
    ).fetchall()
    return [(int(key), (str(name), int(uid))) for key, name, uid in rows]


def stored(db: sqlite3.Connection, row_ids: Sequence[int]) -> tuple[int | None, dict[int, float]]:
    """The reference's generation (None: none) and the densities of it of the messages ``row_ids``."""
    made = generation(db)
    found: dict[int, float] = {}
    if made is None:
        return None, found
    for first in range(0, len(row_ids), _CHUNK):
        chunk = row_ids[first : first + _CHUNK]
        found.update(
            (KEY_BASE - int(key), float(value))
            for key, value in db.execute(
                f"SELECT key, density FROM densities WHERE generation = ? AND key IN ({', '.join('?' for _ in chunk)})",
                [made, *(KEY_BASE - row for row in chunk)],
            )
        )
    return made, found

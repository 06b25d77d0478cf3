"""The stored vectors of some messages read back (:meth:`~mail_imap_mcp.index.vectors.VectorStore.vectors_of`
and :meth:`~mail_imap_mcp.index.vectors.VectorStore.vector_sample`) from PostgreSQL: each passage's codes
(either layout, :mod:`.vectors`) read back as the SQLite engines read theirs, int8 rows as floats: the
same rows on every engine, so hubness and the feedback are reckoned alike (issue 89)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mail_imap_mcp.index.engines.postgresql.counts import Scoped
from mail_imap_mcp.index.engines.postgresql.vectors import Layout, VectorMeta, vector_meta

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

Place = tuple[str, int]
#: Each row's codes as the query reads them.
_EMBEDDING = {Layout.TABLE: "v.embedding", Layout.PGVECTOR: "v.codes"}
_JOINED = "FROM vectors v JOIN messages m ON m.id = v.message JOIN folders f ON f.id = m.folder"


def vectors_of(conn: Scoped, places: Sequence[Place]) -> dict[Place, npt.NDArray[np.float32]]:
    """The rows of each of ``places`` that has vectors."""
    meta = vector_meta(conn)
    if meta is None or not meta.current or not places:
        return {}
    rows = conn.execute(
        f"SELECT f.name, m.uid, {_EMBEDDING[meta.layout]} {_JOINED} "
        "JOIN unnest(%s::text[], %s::bigint[]) AS p(folder, uid) ON p.folder = f.name AND p.uid = m.uid",
        ([folder for folder, _ in places], [uid for _, uid in places]),
    ).fetchall()
    return _grouped(meta, rows)


#: The row ids of up to a number of messages with vectors (given twice) spread evenly over the time they
#: were sent: the first sent at or after each of that many times spread from the oldest to the newest,
#: equal times in the order stored.
_CHOSEN = (
    "WITH bounds AS (SELECT min(m.sent) AS first, max(m.sent) AS last FROM messages m "
    "WHERE EXISTS (SELECT 1 FROM vectors v WHERE v.message = m.id)), "
    "chosen AS (SELECT DISTINCT s.id FROM bounds, generate_series(0, %s - 1) AS g(n), "
    "LATERAL (SELECT m.id FROM messages m WHERE m.sent >= bounds.first "
    "+ (bounds.last - bounds.first + 1) * g.n / %s "
    "AND EXISTS (SELECT 1 FROM vectors v WHERE v.message = m.id) ORDER BY m.sent, m.id LIMIT 1) s) "
)


def vector_sample(conn: Scoped, limit: int) -> dict[Place, npt.NDArray[np.float32]]:
    """The rows of up to ``limit`` messages spread evenly over the time they were sent (:func:`sample_ids`'s,
    every message's where there are no more): the SQLite engines' sample of the same mail
    (:func:`mail_imap_mcp.index.engines.sqlite.vector_reads.vector_sample`)."""
    meta = vector_meta(conn)
    if meta is None or not meta.current or limit <= 0:
        return {}
    if _few(conn, limit):
        return _grouped(
            meta, conn.execute(f"SELECT f.name, m.uid, {_EMBEDDING[meta.layout]} {_JOINED}").fetchall()
        )
    rows = conn.execute(
        f"{_CHOSEN}SELECT f.name, m.uid, {_EMBEDDING[meta.layout]} {_JOINED} "
        "WHERE v.message IN (SELECT id FROM chosen)",
        (limit, limit),
    ).fetchall()
    return _grouped(meta, rows)


def sample_ids(conn: Scoped, limit: int) -> list[int]:
    """The row ids of the messages of :func:`vector_sample`, their vectors not read."""
    meta = vector_meta(conn)
    if meta is None or not meta.current or limit <= 0:
        return []
    if _few(conn, limit):
        return [int(row[0]) for row in conn.execute("SELECT DISTINCT message FROM vectors")]
    return [int(row[0]) for row in conn.execute(f"{_CHOSEN}SELECT id FROM chosen", (limit, limit))]


def _few(conn: Scoped, limit: int) -> bool:
    """Whether no more than ``limit`` messages have vectors."""
    counted = conn.execute("SELECT count(DISTINCT message) FROM vectors").fetchone()
    return counted is None or int(counted[0]) <= limit


def _grouped(meta: VectorMeta, rows: list[tuple[Any, ...]]) -> dict[Place, npt.NDArray[np.float32]]:
    from mail_imap_mcp.meaning.packed import unpacked_by

    found: dict[Place, list[bytes]] = {}
    for folder, uid, codes in rows:
        found.setdefault((str(folder), int(uid)), []).append(bytes(codes))
    return {place: rows.astype("float32") for place, rows in unpacked_by(found, meta.dimensions).items()}

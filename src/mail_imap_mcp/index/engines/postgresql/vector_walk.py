"""The walk of pgvector's HNSW index for a search by meaning (the ``pgvector`` layout of
:mod:`.vectors`): a query's candidates by the index, with its conditions applied to the rows the walk
yields, sought exactly without the index where the walk finds fewer messages than asked; then ranked as
every engine ranks them, by their codes (:func:`~.vector_copy.read_codes`,
:func:`~mail_imap_mcp.meaning.vectors.exact`), not by pgvector's half floats, whose cosines differ in
the third decimal: the walk only gathers, :data:`CANDIDATES_PER_MESSAGE` times the messages asked, so
the nearest by the codes are among them with room to spare."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mail_imap_mcp.index.engines.postgresql.counts import Scoped
from mail_imap_mcp.index.engines.postgresql.query import PgQuery
from mail_imap_mcp.index.engines.postgresql.vectors import VectorMeta, halfvec_type, walkable

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: The oldest pgvector with iterative index scans.
ITERATIVE_FROM = (0, 8)
#: Rows of the HNSW walk asked for at first per message wanted (a message has a few passages), and at
#: most (pgvector's ``ef_search`` bound).
ROWS_PER_MESSAGE = 4
MAX_WALK = 1000
#: Candidates gathered per message asked, ranked by their codes (the half floats' order differs from
#: the codes' near the end of the list: twice as many, so the codes' nearest are among them).
CANDIDATES_PER_MESSAGE = 2
#: The planner's ways a walk of the HNSW index is kept from (see :func:`nearest_pgvector`).
_NOT_FOR_THE_WALK = (
    "enable_sort",
    "enable_material",
    "enable_hashjoin",
    "enable_mergejoin",
    "enable_bitmapscan",
)
#: Vectors an iterative walk visits at most before a narrow query's matches are ranked exactly instead.
WALKED_AT_MOST = 10_000


def nearest_pgvector(
    conn: Scoped,
    meta: VectorMeta,
    version: tuple[int, ...],
    vector: npt.NDArray[np.float32],
    query: PgQuery,
    folders: Sequence[str],
    limit: int,
) -> list[tuple[int, float]]:
    """The ``limit`` messages nearest ``vector`` that ``query`` matches in ``folders``, each by its
    nearest passage, as ``(row id, 1 - cosine)``, nearest first: gathered by the HNSW index (iterative
    scans where pgvector has them), or, where that finds fewer, exactly without it, then ranked by their
    codes."""
    from mail_imap_mcp.index.engines.postgresql.vector_copy import read_codes
    from mail_imap_mcp.meaning.vectors import exact, unit

    asked, limit = limit, limit * CANDIDATES_PER_MESSAGE  # the candidates gathered
    vector = unit(vector)
    target = str(vector.astype("float32").tolist())
    condition = f"f.name = ANY(%s) AND ({query.where})"
    params: list[object] = [list(folders), *query.params]
    distance = f"v.embedding OPERATOR({_quoted(meta.extension)}.<=>) %s::{halfvec_type(meta)}"
    wanted = max(limit * ROWS_PER_MESSAGE, 40)
    walk = min(wanted, MAX_WALK)
    iterative = version >= ITERATIVE_FROM
    rows: list[tuple[Any, ...]] = []
    if walkable(conn):  # else the first vectors are still being made: exactly, as a narrow query
        with conn.conn.transaction():  # the settings are the walk's alone
            # The walk is the HNSW index's, each vector's message then looked up by its key: without
            # a sort, a materialised or hashed join to choose, the planner takes that way (with few
            # rows or no statistics it sorted a folder's every match instead, the exact way below, or
            # joined each vector against all of them).
            conn.execute(
                "SELECT set_config('hnsw.ef_search', %s, true), "
                + ", ".join(f"set_config('{name}', 'off', true)" for name in _NOT_FOR_THE_WALK),
                (str(walk),),
            )
            if iterative:
                conn.execute(
                    "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
                    "set_config('hnsw.max_scan_tuples', %s, true)",
                    (str(WALKED_AT_MOST),),
                )
            rows = conn.execute(
                f"SELECT v.message, {distance} {_JOINED} WHERE {condition} ORDER BY {distance} LIMIT %s",
                # An iterative scan goes on past ``ef_search`` until the rows asked (``about`` asks for
                # 200 messages' candidates: 1,600 rows), or max_scan_tuples, are found.
                [target, *params, target, wanted if iterative else walk],
            ).fetchall()
    found = _best_per_message(rows, limit)
    if len(found) < limit:  # the walk's bound came before enough messages matched: exact, unindexed
        rows = conn.execute(
            f"SELECT v.message, min({distance}) {_JOINED} WHERE {condition} GROUP BY v.message "
            "ORDER BY 2, 1 DESC LIMIT %s",
            [target, *params, limit],
        ).fetchall()
        found = _best_per_message(rows, limit)
    pairs = exact(vector, read_codes(conn, meta, [message for message, _ in found]), asked)
    return [(message, 1.0 - cosine) for message, cosine in pairs]


_JOINED = "FROM vectors v JOIN messages m ON m.id = v.message JOIN folders f ON f.id = m.folder"


def _quoted(name: str | None) -> str:
    assert name is not None
    return '"' + name.replace('"', '""') + '"'


def _best_per_message(rows: list[tuple[Any, ...]], limit: int) -> list[tuple[int, float]]:
    """Each message once, by its nearest passage, nearest first (a relaxed walk's order is re-sorted)."""
    best: dict[int, float] = {}
    for message, distance in rows:
        value = float(distance)
        if not math.isnan(value) and value < best.get(int(message), math.inf):
            best[int(message)] = value
    return sorted(best.items(), key=lambda item: (item[1], -item[0]))[:limit]

"""Search by meaning where the database has no pgvector (:class:`~.vectors.Layout` ``table``): each
instance keeps a quantised copy of the index's vectors in memory (a byte a dimension and a scale per
vector, the message's row id beside it), brings it up to date by row id before each search (the rows
stored since: writers take turns on the index's lock, so row ids grow in the order they are committed),
ranks every vector here, and asks the database which of the nearest messages the query matches, nearer
ones first, widening until enough do. A message no longer indexed is found so and dropped from the copy;
a table made again (another model's vectors) is read again whole. Where the nearest many are checked and
too few match (a narrow query), the matches are read from the database and ranked among themselves."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mail_imap_mcp.index.engines.postgresql.counts import Scoped
from mail_imap_mcp.index.engines.postgresql.query import PgQuery
from mail_imap_mcp.index.engines.postgresql.vectors import VectorMeta

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: Vectors ranked first per message wanted, and the widening of each further round.
FIRST_PER_MESSAGE = 4
WIDENING = 8
#: Messages checked against the query before its matches are read and ranked among themselves.
CHECKED_AT_MOST = 20_000
#: Vectors scored at once (bounds the memory of a search), and read at once into the copy.
_SCORED_AT_ONCE = 16_384
_READ_AT_ONCE = 50_000


def quantised(rows: npt.NDArray[np.float32]) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """Each row as bytes and its scale (``row ~ codes * scale``)."""
    import numpy as np

    scales = np.abs(rows).max(axis=1) / 127.0 if len(rows) else np.zeros(0, dtype=np.float32)
    scales = np.where(scales > 0, scales, 1.0).astype(np.float32)
    codes = np.clip(np.rint(rows / scales[:, None]), -127, 127).astype(np.int8)
    return codes, scales


def similarities(
    codes: npt.NDArray[np.int8], scales: npt.NDArray[np.float32], vector: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """The cosine similarity of each quantised row with the unit ``vector``."""
    import numpy as np

    scores = np.empty(len(codes), dtype=np.float32)
    for start in range(0, len(codes), _SCORED_AT_ONCE):
        part = codes[start : start + _SCORED_AT_ONCE].astype(np.float32)
        scores[start : start + len(part)] = (part @ vector) * scales[start : start + len(part)]
    return scores


class RankedCopy:
    """One index's vectors in this instance (see the module's text)."""

    def __init__(self) -> None:
        import numpy as np

        self._lock = threading.Lock()
        self._generation = -1
        self._last = 0
        self._messages = np.zeros(0, dtype=np.int64)
        self._codes = np.zeros((0, 0), dtype=np.int8)
        self._scales = np.zeros(0, dtype=np.float32)

    def refresh(self, conn: Scoped, meta: VectorMeta) -> None:
        """Read the vectors stored since the last refresh (all of them where the table was made again)."""
        import numpy as np

        with self._lock:
            if meta.generation != self._generation:
                self._generation, self._last = meta.generation, 0
                self._messages = np.zeros(0, dtype=np.int64)
                self._codes = np.zeros((0, meta.dimensions), dtype=np.int8)
                self._scales = np.zeros(0, dtype=np.float32)
            messages, codes, scales = [self._messages], [self._codes], [self._scales]
            while rows := conn.execute(
                "SELECT id, message, embedding FROM vectors WHERE id > %s ORDER BY id LIMIT %s",
                (self._last, _READ_AT_ONCE),
            ).fetchall():
                halves = np.frombuffer(b"".join(bytes(row[2]) for row in rows), dtype="<f2")
                read = quantised(halves.reshape(len(rows), meta.dimensions).astype(np.float32))
                messages.append(np.array([row[1] for row in rows], dtype=np.int64))
                codes.append(read[0])
                scales.append(read[1])
                self._last = int(rows[-1][0])
            if len(messages) > 1:
                self._messages = np.concatenate(messages)
                self._codes = np.concatenate(codes)
                self._scales = np.concatenate(scales)

    def forget(self, messages: Sequence[int]) -> None:
        """Drop the vectors of ``messages`` (no longer indexed)."""
        import numpy as np

        if not messages:
            return
        with self._lock:
            kept = ~np.isin(self._messages, np.array(messages, dtype=np.int64))
            self._messages, self._codes, self._scales = (
                self._messages[kept],
                self._codes[kept],
                self._scales[kept],
            )

    def scored(
        self, vector: npt.NDArray[np.float32]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Each vector's message and its similarity with ``vector``."""
        with self._lock:
            messages, codes, scales = self._messages, self._codes, self._scales
        return messages, similarities(codes, scales, vector)


def _nearest_first(
    messages: npt.NDArray[np.int64], scores: npt.NDArray[np.float32], count: int
) -> list[tuple[int, float]]:
    """The ``count`` best-scored vectors' messages, each once (by its best), best first."""
    import numpy as np

    count = min(count, len(scores))
    if count <= 0:
        return []
    top = np.argpartition(-scores, count - 1)[:count]
    top = top[np.argsort(-scores[top], kind="stable")]
    seen: dict[int, float] = {}
    for index in top.tolist():
        seen.setdefault(int(messages[index]), float(scores[index]))
    return list(seen.items())


def nearest_in_copy(
    conn: Scoped,
    copy: RankedCopy,
    meta: VectorMeta,
    vector: npt.NDArray[np.float32],
    query: PgQuery,
    folders: Sequence[str],
    limit: int,
) -> list[tuple[int, float]]:
    """The ``limit`` messages nearest ``vector`` that ``query`` matches in ``folders``, as ``(row id,
    1 - cosine similarity)``, nearest first (see the module's text)."""
    copy.refresh(conn, meta)
    messages, scores = copy.scored(vector)
    condition = f"f.name = ANY(%s) AND ({query.where})"
    found: list[tuple[int, float]] = []
    checked: set[int] = set()
    ranked = limit * FIRST_PER_MESSAGE
    while len(found) < limit and len(checked) < CHECKED_AT_MOST:
        candidates = [(m, s) for m, s in _nearest_first(messages, scores, ranked) if m not in checked]
        if candidates:
            rows = conn.execute(
                f"SELECT m.id, {condition} FROM messages m JOIN folders f ON f.id = m.folder "
                "WHERE m.id = ANY(%s)",
                [list(folders), *query.params, [m for m, _ in candidates]],
            ).fetchall()
            matching = {int(row_id) for row_id, matches in rows if matches}
            present = {int(row[0]) for row in rows}
            copy.forget([m for m, _ in candidates if m not in present])
            checked.update(m for m, _ in candidates)
            found += [(m, 1.0 - s) for m, s in candidates if m in matching]
        if ranked >= len(scores):
            return found[:limit]
        ranked *= WIDENING
    if len(found) >= limit:
        return found[:limit]
    return _ranked_among_matches(conn, messages, scores, condition, [list(folders), *query.params], limit)


def _ranked_among_matches(
    conn: Scoped,
    messages: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float32],
    condition: str,
    params: list[object],
    limit: int,
) -> list[tuple[int, float]]:
    """A narrow query's matches, read from the database, ranked among themselves."""
    import numpy as np

    rows = conn.execute(
        f"SELECT m.id FROM messages m JOIN folders f ON f.id = m.folder WHERE {condition}", params
    ).fetchall()
    among = np.isin(messages, np.array([int(row[0]) for row in rows], dtype=np.int64))
    best = _nearest_first(messages[among], scores[among], int(among.sum()))
    return [(m, 1.0 - s) for m, s in best[:limit]]

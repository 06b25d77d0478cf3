"""Search by meaning where the database has no pgvector (:class:`~.vectors.Layout` ``table``), as the
SQLite engines search (:mod:`mail_imap_mcp.meaning.vectors`): each passage's vector is kept in the table
in their form, six bits a component (:mod:`mail_imap_mcp.meaning.packed`), and each instance holds their
signatures (a bit a dimension, the codes' first bytes) in its memory, brought up to date by row id before a search (the rows stored since:
writers take turns on the index's lock, so row ids grow in the order they are committed; the whole table
again once it was made again for another model). A search ranks the codes of its candidates read
back from the table: every one where the query's matches (or the folders' messages) are few, else those
of the passages nearest by their signatures first (two passes). A message found gone when its rows are
read is forgotten."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from mail_imap_mcp.index.engines.postgresql.binary_copy import copied, record
from mail_imap_mcp.index.engines.postgresql.counts import Scoped
from mail_imap_mcp.index.engines.postgresql.query import PgQuery
from mail_imap_mcp.index.engines.postgresql.vectors import Layout, SearchState, VectorMeta

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from mail_imap_mcp.meaning.vectors import Passing, Signatures

#: The candidates of a first pass: the folders' ids and the sorted messages' row ids (None: any).
Among = tuple["list[int] | None", "npt.NDArray[np.int64] | None"]
#: The rows stored since the last read (binary, :mod:`.binary_copy`): each vector's row id, its
#: message's and that message's folder, and its codes (:mod:`mail_imap_mcp.meaning.packed`).
_REFRESH = (
    "COPY (SELECT v.id, v.message, m.folder, v.embedding FROM vectors v JOIN messages m ON m.id = v.message "
    "WHERE v.id > %s) TO STDOUT (FORMAT binary)"
)


class HeldSignatures:
    """The signatures of one index's vectors in this instance, and the last row and table they are of."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._signatures: Signatures | None = None
        self._generation = -1
        self._last = 0

    def first_pass(
        self,
        conn: Scoped,
        state: SearchState,
        target: npt.NDArray[np.float32],
        keep: int,
        among: Among,
        passing: Passing | None = None,
    ) -> list[int] | None:
        """Messages of the ``keep`` passages nearest ``target`` by their signatures, of those ``among``
        leaves as candidates and ``passing`` passes (refreshed from the table first; None: it passes too
        few of the nearest, :meth:`~mail_imap_mcp.meaning.vectors.Signatures.first_pass`)."""
        with self._guard:
            held = self._refreshed(conn, state)
            mask = held.candidates(*among)
            if passing is None:
                return [int(key) for key in held.first_pass(target, mask, keep)]
            chosen = held.first_pass_passed(target, mask, keep, passing)
            return None if chosen is None else [int(key) for key in chosen]

    def forget(self, messages: Sequence[int]) -> None:
        """Drop the signatures of ``messages`` (no longer indexed)."""
        with self._guard:
            if self._signatures is not None and messages:
                self._signatures.remove(messages)

    def _refreshed(self, conn: Scoped, state: SearchState) -> Signatures:
        """The signatures, with those of the rows stored since the last refresh added (every row where
        the table was made again, or none was read yet): one COPY, its rows in any order (a row stored
        meanwhile has a higher id than any read, so the highest read is where the next refresh starts),
        none where the table's sequence gave no row id since the highest read. A refresh broken off
        midway is forgotten whole (its rows are not in order)."""
        from mail_imap_mcp.meaning.packed import packed_large, packed_signatures, row_bytes
        from mail_imap_mcp.meaning.vectors import Signatures

        meta = state.meta
        assert meta is not None  # the table's layout is known
        if self._signatures is None or self._generation != meta.generation:
            self._signatures = Signatures.of_dimensions(meta.dimensions)
            self._generation, self._last = meta.generation, 0
        held, last = self._signatures, self._last
        if last and state.last_row == last:  # nothing stored since
            return held
        kind = record(
            (
                ("id", ">i8"),
                ("message", ">i8"),
                ("folder", ">i4"),
                ("embedding", f"({row_bytes(meta.dimensions)},)u1"),
            )
        )
        try:
            if not last:  # room for them all at once, not grown a quarter at a time (each time a copy)
                held.reserve(int(conn.execute("SELECT count(*) FROM vectors").fetchone()[0]))  # type: ignore[index]
            for rows in copied(conn, _REFRESH, (last,), kind):
                held.add(
                    rows["message"].astype("int64"),
                    rows["folder"].astype("int32"),
                    packed_signatures(rows["embedding"], meta.dimensions),
                    packed_large(rows["embedding"], meta.dimensions) if held.sizes else None,
                )
                last = max(last, int(rows["id"].max()))
        except BaseException:
            self._signatures = None
            raise
        self._last = last
        return held


def read_codes(conn: Scoped, meta: VectorMeta, ids: Sequence[int]) -> dict[int, npt.NDArray[np.int8]]:
    """The int8 rows of each of ``ids`` (messages' row ids) that has vectors, read back from their codes
    (either layout: the one form every engine ranks, :func:`~mail_imap_mcp.meaning.packed.unpacked_by`;
    read as binary: a ``bytea`` as text is hex, twice the bytes to send and decode)."""
    from mail_imap_mcp.meaning.packed import unpacked_by

    column = "codes" if meta.layout is Layout.PGVECTOR else "embedding"
    found: dict[int, list[bytes]] = {}
    for message, code in conn.execute(
        f"SELECT message, {column} FROM vectors WHERE message = ANY(%s)", (list(ids),), binary=True
    ):
        found.setdefault(int(message), []).append(bytes(code))
    return unpacked_by(found, meta.dimensions)


def nearest_in_table(
    conn: Scoped,
    held: HeldSignatures,
    state: SearchState,
    vector: npt.NDArray[np.float32],
    query: PgQuery,
    folders: Sequence[str],
    limit: int,
) -> list[tuple[int, float]]:
    """The ``limit`` messages nearest ``vector`` that ``query`` matches in ``folders``, as ``(row id,
    1 - cosine similarity)``, nearest first (see the module's text)."""
    import numpy as np

    from mail_imap_mcp.meaning.vectors import EXACT_MOST, RERANK, exact, unit

    meta = state.meta
    assert meta is not None  # the table's layout is known
    target = unit(vector)
    wanted = set(folders)
    searched = [(folder, count) for name, folder, count in state.folders if name in wanted]
    if not searched:
        return []
    groups = None if len(searched) == len(state.folders) else [folder for folder, _ in searched]
    keep = max(RERANK, 2 * limit)
    broad = sum(count for _, count in searched) > EXACT_MOST
    if query.where != "TRUE" and broad:  # asked of the nearest messages while it passes enough of them
        passing = _passing(conn, query)
        found = _ranked(
            conn,
            held,
            meta,
            target,
            lambda: held.first_pass(conn, state, target, keep, (groups, None), passing),
            limit,
        )
        if found is not None:
            return found
    ids: list[int] | None = None
    if query.where != "TRUE":  # the query's matches
        rows = conn.execute(
            f"SELECT m.id FROM messages m WHERE m.folder = ANY(%s) AND ({query.where})",
            [[folder for folder, _ in searched], *query.params],
        )
        ids = [int(row[0]) for row in rows]
    elif not broad:
        rows = conn.execute(
            "SELECT id FROM messages WHERE folder = ANY(%s)", ([folder for folder, _ in searched],)
        )
        ids = [int(row[0]) for row in rows]
    if ids is not None and len(ids) <= EXACT_MOST:
        pairs = exact(target, read_codes(conn, meta, ids), limit)
        return [(message, 1.0 - cosine) for message, cosine in pairs]
    among = None if ids is None else np.unique(np.asarray(ids, dtype=np.int64))
    found = _ranked(
        conn, held, meta, target, lambda: held.first_pass(conn, state, target, keep, (groups, among)), limit
    )
    assert found is not None  # no condition to pass
    return found


def _passing(conn: Scoped, query: PgQuery) -> Passing:
    """Which of some messages ``query`` matches, asked of each message's row."""
    import numpy as np

    def passing(ids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        rows = conn.execute(
            f"SELECT m.id FROM messages m WHERE m.id = ANY(%s) AND ({query.where}) ORDER BY m.id",
            [ids.tolist(), *query.params],
        )
        return np.fromiter((row[0] for row in rows), dtype=np.int64)

    return passing


def _ranked(
    conn: Scoped,
    held: HeldSignatures,
    meta: VectorMeta,
    target: npt.NDArray[np.float32],
    first_pass: Callable[[], list[int] | None],
    limit: int,
) -> list[tuple[int, float]] | None:
    """The ``limit`` of the messages ``first_pass`` chooses nearest ``target`` by their int8 rows (None:
    it chose none, see :meth:`HeldSignatures.first_pass`). A message found gone (removed since its
    signatures were read, by any instance: the copy learns of new rows alone) is forgotten and the
    first pass made again without it, so those left fill the page."""
    from mail_imap_mcp.meaning.vectors import exact

    while True:
        chosen = first_pass()
        if chosen is None:
            return None
        read = read_codes(conn, meta, chosen)
        gone = [message for message in chosen if message not in read]
        if not gone:
            break
        held.forget(gone)
    pairs = exact(target, read, limit)
    return [(message, 1.0 - cosine) for message, cosine in pairs]

"""The index in PostgreSQL: one schema per index (:mod:`.schema`), reached through the engine's
connection pool (:mod:`.engine`), shared by every instance of a team deployment.

Every change is one transaction that first takes the index's advisory lock (``pg_advisory_xact_lock``),
so two instances, or two syncs of one, write one at a time as SQLite's writers do, waiting at most
:data:`~.store.WRITER_WAIT_S` (:class:`~.store.IndexBusy`). A message's words are the SQLite index's
(:mod:`..sqlite.tokens`), made in Python and stored as ``tsvector`` input (:func:`terms_of`), never
through PostgreSQL's text search parser. A ranked page orders every match by ``ts_rank`` (subject A,
sender B, body C, the rest D), then newest first; every other order is the server's, as SQLite's is.
PostgreSQL out of reach is :class:`~.store.IndexWriteFailed` for the sync (tried again) and
:class:`~.store.IndexUnusable` for a search (the server answers, with a warning); nothing is lost.
"""

from __future__ import annotations

import contextlib
import functools
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, Unpack

import psycopg
import psycopg.errors
from psycopg_pool import ConnectionPool, PoolTimeout

from mail_imap_mcp.index.engines.postgresql import vector_reads, vector_walk
from mail_imap_mcp.index.engines.postgresql import vectors as pg_vectors
from mail_imap_mcp.index.engines.postgresql.density_store import DensityStore
from mail_imap_mcp.index.engines.postgresql.failures import failure_of
from mail_imap_mcp.index.engines.postgresql.pages import page_of, rows_of
from mail_imap_mcp.index.engines.postgresql.query import WEIGHTS, PgCompiler, PgQuery, lexeme
from mail_imap_mcp.index.engines.sqlite.tokens import Tokenizer
from mail_imap_mcp.index.store import (
    TEXT_COLUMNS,
    WRITER_WAIT_S,
    FolderState,
    Hit,
    HitPage,
    IndexedMessage,
    IndexUnusable,
    PageAsk,
    flag_bits,
    label_key,
    pack_texts,
)
from mail_imap_mcp.index.vectors import Densities, VectorCounts, VectorTodo
from mail_imap_mcp.query.tree import Query

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from mail_imap_mcp.index.engines.postgresql.vector_copy import HeldSignatures

#: PostgreSQL's bounds of a ``tsvector``: the last position, and positions kept per lexeme.
_LAST_POSITION = 16383
_POSITIONS_KEPT = 256
#: Longest lexeme kept, in bytes (PostgreSQL's bound is 2,047).
_LEXEME_BYTES = 2000
_WRITING = "mail-imap-mcp index"

Connection = psycopg.Connection[tuple[Any, ...]]
#: Where a statement names one of the index's tables (qualified with its schema by :class:`Scoped`).
_TABLE = re.compile(
    r"\b(FROM|JOIN|INTO|UPDATE)\s+(messages|folders|counted|counts|flag_counts|vectors|unvectored|meta|densities|density_members)\b"
)


class Scoped:
    """A connection of the pool whose statements name the tables of one index's schema: no search path
    is set, so a statement is one round trip and a pooled connection serves every index."""

    def __init__(self, conn: Connection, schema: str) -> None:
        self.conn = conn
        self.schema = schema
        self._schema = '"' + schema.replace('"', '""') + '"'

    def _qualified(self, statement: str) -> str:
        return _TABLE.sub(lambda m: f"{m.group(1)} {self._schema}.{m.group(2)}", statement)

    def execute(
        self, statement: str, params: Sequence[object] | None = None, *, binary: bool = False
    ) -> psycopg.Cursor[tuple[Any, ...]]:
        return self.conn.execute(self._qualified(statement), params, binary=binary)

    @contextlib.contextmanager
    def copy(self, statement: str, params: Sequence[object]) -> Iterator[psycopg.Copy]:
        """A ``COPY``, its ``params`` bound in the statement's text (COPY takes none of its own)."""
        with self.conn.cursor() as cursor, cursor.copy(self._qualified(statement), params) as copy:
            yield copy

    def executemany(self, statement: str, rows: Sequence[Sequence[object]]) -> None:
        with self.conn.cursor() as cursor:
            cursor.executemany(self._qualified(statement), rows)


def terms_of(tokenizer: Tokenizer, texts: Sequence[str]) -> str:
    """The ``tsvector`` input of a message's text columns: each word as its column's lexeme, with its
    positions (phrases) and its column's weight."""
    parts: list[str] = []
    position = 1
    for column, text in zip(TEXT_COLUMNS, texts, strict=True):
        found: dict[str, list[int]] = {}
        for word in tokenizer.words(text):
            at = found.setdefault(word, [])
            if len(at) < _POSITIONS_KEPT and (not at or at[-1] < _LAST_POSITION):
                at.append(min(position, _LAST_POSITION))
            position += 1
        weight = WEIGHTS[column]
        parts.extend(
            f"{lexeme(column, word)}:{','.join(f'{p}{weight}' for p in at)}"
            for word, at in found.items()
            if len(word.encode()) <= _LEXEME_BYTES
        )
    return " ".join(parts)


def writer_lock(schema: str) -> str:
    """The name of the advisory lock the writers of the index in ``schema`` take turns on."""
    return f"{_WRITING}:{schema}"


def _label_keys(names: Iterable[str]) -> str:
    keys = [label_key(name) for name in names]
    return "\n" + "\n".join(keys) + "\n" if keys else ""


S = TypeVar("S", bound="PostgresStore")
P = ParamSpec("P")
R = TypeVar("R")


def translated(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """A store's ``method`` whose errors of PostgreSQL leave it as the index's (:func:`failure_of`)."""

    @functools.wraps(method)
    def run(store: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(store, *args, **kwargs)
        except (psycopg.Error, PoolTimeout) as exc:
            raise failure_of(store.schema, exc) from exc

    return run


class PostgresStore(DensityStore):
    """:class:`~mail_imap_mcp.index.store.IndexStore` and :class:`~mail_imap_mcp.index.vectors.VectorStore`
    in the schema ``schema`` of the pool's database."""

    def __init__(self, pool: ConnectionPool[Connection], schema: str, tokenizer: Tokenizer) -> None:
        self.pool = pool
        self.schema = schema
        self.tokenizer = tokenizer
        self.compiler = PgCompiler(tokenizer)
        self._writer_wait_ms = int(WRITER_WAIT_S * 1000)
        self._searches = ThreadPoolExecutor(max_workers=2, thread_name_prefix=f"pg-{schema}")
        self._held: HeldSignatures | None = None
        self._held_made = threading.Lock()

    def _read(self, work: Callable[[Scoped], R]) -> R:
        """``work`` on a connection of the pool, each statement on its own (as SQLite's readers)."""
        with self.pool.connection() as conn:
            return work(Scoped(conn, self.schema))

    def _write(self, work: Callable[[Scoped], R]) -> R:
        """``work`` in one transaction that holds the index's advisory lock (writers take turns)."""
        with self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT set_config('lock_timeout', %s, true)", (f"{self._writer_wait_ms}ms",))
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (writer_lock(self.schema),))
            return work(Scoped(conn, self.schema))

    @translated
    def folders(self) -> dict[str, FolderState]:
        return self._read(_folders)

    @translated
    def start_folder(self, name: str, uidvalidity: int) -> FolderState:
        def work(conn: Scoped) -> FolderState:
            known = _folders(conn).get(name)
            if known is not None and known.uidvalidity == uidvalidity:
                return known
            conn.execute("DELETE FROM folders WHERE name = %s", (name,))
            fresh = FolderState(name, uidvalidity)
            _save(conn, fresh)
            return fresh

        return self._write(work)

    @translated
    def put(self, state: FolderState, messages: Sequence[IndexedMessage]) -> None:
        terms = [terms_of(self.tokenizer, message.texts) for message in messages]

        def work(conn: Scoped) -> None:
            folder = _save(conn, state)
            uids = [message.uid for message in messages]
            conn.execute("DELETE FROM messages WHERE folder = %s AND uid = ANY(%s)", (folder, uids))
            shown = [message.global_id for message in messages if message.global_id is not None]
            if shown:  # shown in another folder before: one row, this one
                conn.execute("DELETE FROM messages WHERE global_id = ANY(%s::numeric[])", (shown,))
            conn.executemany(
                "INSERT INTO messages(folder, uid, sent, arrival_day, size, flag_bits, keywords, "
                "has_attachment, filenames, doc, global_id, labels, label_keys, attachments_read, arrival, "
                "terms) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::tsvector)",
                [
                    (
                        folder,
                        message.uid,
                        message.sent,
                        message.arrival_day,
                        message.size,
                        *flag_bits(message.flags),
                        message.has_attachment,
                        "\n".join(message.filenames),
                        pack_texts(message.texts, message.kept),
                        message.global_id,
                        "\n".join(message.labels),
                        _label_keys(message.labels),
                        message.attachments_read,
                        message.arrival,
                        words,
                    )
                    for message, words in zip(messages, terms, strict=True)
                ],
            )
            _count(conn, folder)

        self._write(work)

    @translated
    def update(
        self,
        state: FolderState,
        *,
        flags: dict[int, tuple[str, ...]],
        removed: Iterable[int],
        labels: dict[int, tuple[str, ...]] | None = None,
    ) -> None:
        gone = list(removed)

        def work(conn: Scoped) -> None:
            folder = _save(conn, state)
            if labels:
                conn.execute(
                    "UPDATE messages m SET labels = c.labels, label_keys = c.label_keys "
                    "FROM unnest(%s::bigint[], %s::text[], %s::text[]) AS c(uid, labels, label_keys) "
                    "WHERE m.folder = %s AND m.uid = c.uid",
                    (
                        list(labels),
                        ["\n".join(names) for names in labels.values()],
                        [_label_keys(names) for names in labels.values()],
                        folder,
                    ),
                )
            if flags:  # one statement: the flag counts' trigger runs once for all (schema version 6)
                changed = [flag_bits(now) for now in flags.values()]
                conn.execute(
                    "UPDATE messages m SET flag_bits = c.flag_bits, keywords = c.keywords "
                    "FROM unnest(%s::bigint[], %s::integer[], %s::text[]) AS c(uid, flag_bits, keywords) "
                    "WHERE m.folder = %s AND m.uid = c.uid",
                    (list(flags), [bits for bits, _ in changed], [words for _, words in changed], folder),
                )
            if gone:
                conn.execute("DELETE FROM messages WHERE folder = %s AND uid = ANY(%s)", (folder, gone))
            _count(conn, folder)

        self._write(work)

    def _folder_rows(self, folder: str, columns: str, tail: str = "") -> list[tuple[Any, ...]]:
        return self._read(
            lambda conn: conn.execute(
                f"SELECT {columns} FROM messages WHERE folder = (SELECT id FROM folders WHERE name = %s) {tail}",
                (folder,),
            ).fetchall()
        )

    @translated
    def uids(self, folder: str) -> list[int]:
        return [int(row[0]) for row in self._folder_rows(folder, "uid", "ORDER BY uid")]

    @translated
    def unread_attachments(self, folder: str) -> list[int]:
        rows = self._folder_rows(
            folder, "uid", "AND has_attachment AND NOT attachments_read ORDER BY uid DESC"
        )
        return [int(row[0]) for row in rows]

    @translated
    def flags_of(self, folder: str) -> dict[int, tuple[int, str]]:
        rows = self._folder_rows(folder, "uid, flag_bits, keywords")
        return {int(uid): (int(bits), str(keywords)) for uid, bits, keywords in rows}

    @translated
    def drop_folder(self, name: str) -> None:
        self._write(lambda conn: conn.execute("DELETE FROM folders WHERE name = %s", (name,)))

    @translated
    def count(self) -> int:
        return self._read(lambda conn: int(conn.execute("SELECT count(*) FROM messages").fetchone()[0]))  # type: ignore[index]

    def search(self, query: Query, **ask: Unpack[PageAsk]) -> HitPage:
        return PendingSearch(self._page_of(self.compiler.compile(query), ask)).result()

    def start_search(self, query: Query, **ask: Unpack[PageAsk]) -> PendingSearch:
        """:meth:`search` begun on a thread of its own (the search's freshness round trip runs meanwhile)."""
        return PendingSearch(self._searches.submit(self._page_of, self.compiler.compile(query), ask))

    def _page_of(self, query: PgQuery, ask: PageAsk) -> HitPage:
        return self._read(lambda conn: page_of(conn, query, ask, writer_lock(self.schema)))

    @translated
    def vector_model(self) -> str | None:
        meta = self._read(pg_vectors.vector_meta)
        return None if meta is None else meta.model

    @translated
    def vectors_todo(self, model: str, limit: int) -> list[VectorTodo]:
        return self._read(lambda conn: pg_vectors.todo(conn, model, limit))

    @translated
    def put_vectors(
        self,
        model: str,
        vectors: Mapping[tuple[str, int], npt.NDArray[np.float32]],
        densities: Densities | None = None,
    ) -> None:
        if self._write(lambda conn: pg_vectors.put(conn, model, vectors, densities)):
            self._read(self._build_walk)

    def _build_walk(self, conn: Scoped) -> None:
        meta = pg_vectors.vector_meta(conn)
        if meta is not None and meta.layout is pg_vectors.Layout.PGVECTOR:
            pg_vectors.build_walk(conn, meta)

    @translated
    def vector_counts(self, model: str, folders: Sequence[str] | None = None) -> VectorCounts:
        return self._read(lambda conn: pg_vectors.counts(conn, model, folders))

    @translated
    def vector_layout(self) -> str:
        """Which layout the index's vectors are in (pgvector, or a table ranked in each instance)."""
        return self._read(pg_vectors.describe)

    @translated
    def vectors_of(self, places: Sequence[tuple[str, int]]) -> dict[tuple[str, int], npt.NDArray[np.float32]]:
        return self._read(lambda conn: vector_reads.vectors_of(conn, places))

    @translated
    def vector_sample(self, limit: int) -> dict[tuple[str, int], npt.NDArray[np.float32]]:
        return self._read(lambda conn: vector_reads.vector_sample(conn, limit))

    def nearest(
        self, vector: npt.NDArray[np.float32], query: Query | None, folders: Sequence[str], limit: int
    ) -> list[Hit]:
        compiled = PgQuery(None, "TRUE", ()) if query is None else self.compiler.compile(query)
        try:
            return self._read(lambda conn: self._nearest(conn, vector, compiled, folders, limit))
        except (psycopg.Error, PoolTimeout) as exc:
            raise IndexUnusable(f"PostgreSQL could not answer ({exc})") from exc

    def _nearest(
        self,
        conn: Scoped,
        vector: npt.NDArray[np.float32],
        query: PgQuery,
        folders: Sequence[str],
        limit: int,
    ) -> list[Hit]:
        import numpy as np

        from mail_imap_mcp.index.engines.postgresql.vector_copy import HeldSignatures, nearest_in_table

        state = pg_vectors.search_state(conn)
        meta = state.meta
        target = np.asarray(vector, dtype=np.float32).reshape(-1)
        if meta is None or not folders or limit <= 0 or len(target) != meta.dimensions or not target.any():
            return []
        if meta.layout is pg_vectors.Layout.PGVECTOR:
            extension = pg_vectors.pgvector(conn, create=False)
            if extension is None:  # dropped by an administrator since: nothing to rank with
                return []
            found = vector_walk.nearest_pgvector(conn, meta, extension[1], target, query, folders, limit)
        else:
            with self._held_made:
                held = self._held = self._held or HeldSignatures()
            found = nearest_in_table(conn, held, state, target, query, folders, limit)
        return rows_of(conn, [row_id for row_id, _ in found], [distance for _, distance in found])

    def wait_for_writers(self, seconds: float) -> None:
        self._writer_wait_ms = max(int(seconds * 1000), 1)

    def close(self) -> None:
        """The pool stays the engine's: only this store's search threads end."""
        self._searches.shutdown(wait=False, cancel_futures=True)


class PendingSearch:
    """A search under way (:meth:`PostgresStore.start_search`), or done."""

    def __init__(self, page: Future[HitPage] | HitPage) -> None:
        self._page = page

    def result(self) -> HitPage:
        """The page (waiting for it); PostgreSQL out of reach is :class:`IndexUnusable`: the server answers."""
        try:
            return self._page.result() if isinstance(self._page, Future) else self._page
        except (psycopg.Error, PoolTimeout) as exc:
            raise IndexUnusable(f"PostgreSQL could not answer ({exc})") from exc

    def cancel(self) -> None:
        if isinstance(self._page, Future):
            self._page.cancel()


def _folders(conn: Scoped) -> dict[str, FolderState]:
    rows = conn.execute(
        "SELECT name, uidvalidity, uidnext, highestmodseq, messages, complete FROM folders"
    ).fetchall()
    return {
        str(r[0]): FolderState(str(r[0]), int(r[1]), int(r[2]), int(r[3]), int(r[4]), bool(r[5]))
        for r in rows
    }


def _save(conn: Scoped, state: FolderState) -> int:
    row = conn.execute(
        "INSERT INTO folders(name, uidvalidity, uidnext, highestmodseq, messages, complete) "
        "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (name) DO UPDATE SET uidvalidity = excluded.uidvalidity, "
        "uidnext = excluded.uidnext, highestmodseq = excluded.highestmodseq, messages = excluded.messages, "
        "complete = excluded.complete RETURNING id",
        (state.name, state.uidvalidity, state.uidnext, state.highestmodseq, state.messages, state.complete),
    ).fetchone()
    assert row is not None
    return int(row[0])


def _count(conn: Scoped, folder: int) -> None:
    """Set the folder's ``messages`` to what it holds, from its kept flag counts (the triggers counted the
    change in this transaction; counting the folder's rows cost every change of a large folder)."""
    conn.execute(
        "UPDATE folders SET messages = "
        "(SELECT coalesce(sum(messages), 0) FROM flag_counts WHERE folder = %s) WHERE id = %s",
        (folder, folder),
    )

"""Ranking every match of a text query, on several cores: the matches are split by row id into shards,
each shard is ranked on a read connection of its own in a thread, and the shards' best are merged.

FTS5 scores one match at a time (BM25, about a microsecond each), so a word found in most of 100,000
messages costs tens of milliseconds on one core; SQLite lets go of Python's lock while it works, so
shards ranked in threads run at once. Row ids follow sent dates (:meth:`SqliteStore._free_id
<mail_imap_mcp.index.engines.sqlite.store.SqliteStore._free_id>`), and the shards' bounds are quantiles of the
row ids of every stored message, so each shard holds about as many matches. Every shard returns its own
best ``offset + limit`` by the page's order (rank, then newest row id first), so the merge is exact: the
page is the one a single ``ORDER BY`` over every match would give. A query of fewer than
:data:`SHARD_MATCHES` matches is ranked in one thread: handing work to threads costs more than it saves.
"""

from __future__ import annotations

import contextlib
import heapq
import os
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Generic, TypeVar

from mail_imap_mcp.index.engines.sqlite.query import Fts5Query

#: Shards a ranked query is split into (and threads ranking them): one for every two cores, at most four,
#: leaving cores to the server's other work (the freshness round trip runs meanwhile). On a machine of
#: two virtual cores (where the benchmarks run) two threads ranking halves took longer than one thread
#: ranking the whole: the cores did not run that work in parallel.
SHARDS = max(1, min(4, (os.cpu_count() or 1) // 2))
#: Matches below which a query is ranked whole in one thread (threads would cost more than they save).
SHARD_MATCHES = 20_000
#: Matches from which a query whose every word is in more than half the messages is listed newest first
#: (:func:`weighs_nothing`).
UNWEIGHTED_MATCHES = 20_000
#: Stored messages per shard at least.
MESSAGES_PER_SHARD = 5_000
#: How much the number of stored messages may change before the shards' bounds are computed again.
BOUNDS_DRIFT = 0.05

T = TypeVar("T")
_LAST_ROW_ID = 2**63 - 1
#: One shard's best rows: (rank, row id) pairs in the page's order.
Ranked = list[tuple[float, int]]
#: Work a page's task leaves to run after its page is handed over, on the same read transaction (None:
#: none).
Then = Callable[[], None] | None


class ReadConnections:
    """Read connections to one index file, each used by one thread at a time (a pool that grows to the
    threads that ask, closed together)."""

    def __init__(self, path: Path, timeout_s: float) -> None:
        self._path = path
        self._timeout_s = timeout_s
        self._idle: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        self._all: list[sqlite3.Connection] = []
        self._guard = threading.Lock()
        self._closed = False

    @contextlib.contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        try:
            db = self._idle.get_nowait()
        except queue.Empty:
            db = self._open()
        try:
            yield db
        finally:
            if db.in_transaction:
                db.rollback()
            self._idle.put(db)

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(
            self._path, timeout=self._timeout_s, isolation_level=None, check_same_thread=False
        )
        db.execute("PRAGMA query_only = ON")
        with self._guard:
            if self._closed:
                db.close()
                raise sqlite3.ProgrammingError("the index is closed")
            self._all.append(db)
        return db

    def interrupt(self) -> None:
        """Stop every statement running on these connections (they raise ``interrupted``)."""
        with self._guard:
            for db in self._all:
                db.interrupt()

    def close(self) -> None:
        with self._guard:
            self._closed = True
            connections, self._all = self._all, []
        for db in connections:
            with contextlib.suppress(sqlite3.Error):
                db.close()


class Ranker:
    """Ranks the matches of a query in shards on :class:`ReadConnections` (see the module's text)."""

    def __init__(self, readers: ReadConnections, shards: int = SHARDS) -> None:
        self._readers = readers
        self._shards = shards
        # Two pools: a page waits for its shards, so shards never queue behind pages (one pool of both
        # deadlocked when pages filled it). Shards wait for nothing.
        self._pages = ThreadPoolExecutor(max_workers=2, thread_name_prefix="index-page")
        self._pool = ThreadPoolExecutor(max_workers=max(shards - 1, 1), thread_name_prefix="index-shard")
        self._bounds: tuple[int, list[int]] = (-1, [])
        self._bounds_guard = threading.Lock()

    def bounds(self, stored: int) -> list[int]:
        """The row ids that split the stored messages into shards of about equal size (``stored``: how
        many there are, from the folders' counts); empty: one shard."""
        shards = min(self._shards, stored // MESSAGES_PER_SHARD)
        if shards <= 1:
            return []
        with self._bounds_guard:
            known, bounds = self._bounds
            if len(bounds) == shards - 1 and abs(stored - known) <= known * BOUNDS_DRIFT:
                return bounds
        with self._readers.connection() as db:
            bounds = []
            for shard in range(1, shards):
                row = db.execute(
                    "SELECT id FROM messages ORDER BY id LIMIT 1 OFFSET ?", (stored * shard // shards,)
                ).fetchone()
                if row is not None and (not bounds or row[0] > bounds[-1]):
                    bounds.append(int(row[0]))
        with self._bounds_guard:
            self._bounds = (stored, bounds)
        return bounds

    def rank(
        self,
        db: sqlite3.Connection,
        shard_sql: str,
        params: Sequence[object],
        *,
        matches: int,
        stored: int,
        best: int,
    ) -> Ranked:
        """The best ``best`` (rank, row id) pairs of ``matches`` matches, in the page's order: ``shard_sql``
        selects ``(rank, row id)`` of the matches whose row id is between its last two parameters
        (appended here, with ``best``, the LIMIT), ordered by rank and newest row id first. Ranked on
        ``db`` alone when the matches are few (threads would cost more than they save), else in shards,
        this thread ranking the first."""
        bounds = self.bounds(stored) if matches >= SHARD_MATCHES else []
        if not bounds:
            return _ranked(db, shard_sql, [*params, 0, _LAST_ROW_ID, best])
        lows = [0, *bounds]
        highs = [*(bound - 1 for bound in bounds), _LAST_ROW_ID]
        others = [
            self._pool.submit(self._shard, partial(_ranked, sql=shard_sql, params=[*params, low, high, best]))
            for low, high in zip(lows[1:], highs[1:], strict=True)
        ]
        first = _ranked(db, shard_sql, [*params, lows[0], highs[0], best])
        merged = heapq.merge(
            first, *(shard.result() for shard in others), key=lambda pair: (pair[0], -pair[1])
        )
        return [pair for _, pair in zip(range(best), merged, strict=False)]

    def _shard(self, task: Callable[[sqlite3.Connection], T]) -> T:
        with self._readers.connection() as db:
            return task(db)

    def submit(self, task: Callable[[sqlite3.Connection], tuple[T, Then]]) -> Started[T]:
        """``task`` on a read connection, in a thread of the pages' pool, in one read transaction (one
        snapshot: a page's count, ranking and rows agree whatever a writer commits meanwhile). Its value
        is the result as soon as it returns; the work it returns with it then runs on the same
        transaction (what the page's cursor needs later, off its critical path)."""
        started = Started[T]()

        def run() -> None:
            if not started.future.set_running_or_notify_cancel():
                return
            with self._readers.connection() as db:
                try:
                    if not started.bind(db):
                        raise sqlite3.OperationalError("interrupted")
                    db.execute("BEGIN")
                    value, then = task(db)
                except BaseException as exc:
                    started.future.set_exception(exc)
                    started.bind(None)
                    _end(db)
                    return
                started.future.set_result(value)
                try:
                    if then is not None:
                        then()
                except sqlite3.Error:
                    pass  # its own future says so to whoever waits for it
                finally:
                    started.bind(None)
                    _end(db)

        queued = self._pages.submit(run)
        queued.add_done_callback(lambda ran: started.future.cancel() if ran.cancelled() else None)
        return started

    def close(self) -> None:
        self._readers.interrupt()
        self._pages.shutdown(wait=True, cancel_futures=True)
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._readers.close()


class Started(Generic[T]):
    """A task begun on the pages' pool: its result, or stopped (SQLite interrupts its statement)."""

    def __init__(self) -> None:
        self.future: Future[T] = Future()
        self._guard = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._cancelled = False

    def bind(self, db: sqlite3.Connection | None) -> bool:
        """The connection the task runs on now (None: done); False when it was cancelled already."""
        with self._guard:
            self._db = db
            return not self._cancelled

    def result(self) -> T:
        return self.future.result()

    def cancel(self) -> None:
        """Not needed: not run when not begun, its statement interrupted when running."""
        with self._guard:
            self._cancelled = True
            self.future.cancel()
            if self._db is not None:
                self._db.interrupt()


def weighs_nothing(query: Fts5Query, matches: int, stored: int, in_most: Callable[[str], bool]) -> bool:
    """Whether the ``matches`` are listed newest first instead of scored: from :data:`UNWEIGHTED_MATCHES`
    of them, where every phrase of the query is in more than half the ``stored`` messages (``in_most``:
    whether a phrase alone matches more than half). BM25's IDF is then at or below zero for each (FTS5
    floors it at a millionth, so only word counts and lengths still order them), and scoring each match
    (tens of milliseconds for words in most of 100,000 messages) buys an order BM25 itself calls
    meaningless. A conjunction of words (no OR) is such a query once its matches are more than half the
    messages (each word matches them all); in an OR of words each word is walked up to half the
    messages (a few milliseconds each at 100,000): the words of an ``about`` of common words took
    122.7 ms of CPU scored (issue 89)."""
    if query.match is None or matches < UNWEIGHTED_MATCHES:
        return False
    if query.conjunctive:
        return matches * 2 > stored
    return bool(query.phrases) and all(in_most(phrase) for phrase in query.phrases)


def weighs_nothing_uncounted(
    query: Fts5Query, stored: int, outside: int, in_most: Callable[[str], bool]
) -> bool | None:
    """:func:`weighs_nothing` of an OR of words without counting its matches (None: they must be
    counted to tell): each word in more than half the ``stored`` messages, of which ``outside`` are in
    folders not searched, matches at least the rest of that half where nothing else is asked."""
    at_least = stored // 2 + 1 - outside
    if query.conjunctive or query.where != "1" or at_least < UNWEIGHTED_MATCHES:
        return None
    return weighs_nothing(query, at_least, stored, in_most)


def _end(db: sqlite3.Connection) -> None:
    if db.in_transaction:
        with contextlib.suppress(sqlite3.Error):  # a read: nothing to lose; the pool rolls back
            db.execute("COMMIT")


def _ranked(db: sqlite3.Connection, sql: str, params: list[object]) -> Ranked:
    return [(float(rank), int(row_id)) for rank, row_id in db.execute(sql, params)]

"""The store of the ``sqlite+tantivy`` engine: the SQLite index (:class:`~..sqlite.store.SqliteStore`,
everything it keeps and answers today) with a Tantivy index of the text beside it (:mod:`.text`)
that ranks relevance pages without scoring every match.

**Writes.** Every write is SQLite's transaction first, then one Tantivy commit of the rows it added and
removed (a bulk build's chunks: one commit per batch of them, :meth:`~.text.TextIndex.apply`).
The SQLite file counts its row changes itself (a table of one row and triggers on ``messages``,
whoever writes: a store of the plain SQLite engine too) under an epoch drawn when the table was made;
this connection's temporary triggers log which rows changed, read in the same transaction. The Tantivy
commit records the count it reached (:class:`~.text.Generation`). A crash between the two
commits, a write of another process, or a Tantivy write refused leaves the two counts apart: the open (or
the next write) rebuilds the Tantivy index from the texts SQLite keeps, and until then every search
compares the counts in its snapshot and ranks with FTS5 where they differ, so an answer is never stale.

**Ranked pages** (``relevance`` with text to rank): Tantivy's best ``offset + limit`` (or ``keep``) by
its BM25 (a sum over the columns, each column's weight a boost), equal scores by newest row id first,
as SQLite's order breaks them (:mod:`.topk`); the page's total from Tantivy's count. A query with
parts that are not text (flags, dates, negations: :class:`~.query.RankedText` ``filtered``) takes
Tantivy's best in growing rounds and keeps those SQLite's condition passes, until the page is certain
(the last kept has a better score than anything not yet read) or :data:`~.topk.READ_MOST` are
read; past that (a condition that passes few of the matches) FTS5 ranks it, logged, and the total is
FTS5's count. Every other page (by date, arrival or UID, no
text, a later page's ``places``) is SQLite's own.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TypeVar, Unpack

from mail_imap_mcp.index.engines.sqlite.errors import translated
from mail_imap_mcp.index.engines.sqlite.pages import page_task, places_of, rows_of
from mail_imap_mcp.index.engines.sqlite.query import Fts5Query, in_places
from mail_imap_mcp.index.engines.sqlite.ranking import Then
from mail_imap_mcp.index.engines.sqlite.store import BUSY_TIMEOUT_S, PendingSearch, SqliteStore
from mail_imap_mcp.index.engines.tantivy.query import RankedText, compile_tantivy, in_folders
from mail_imap_mcp.index.engines.tantivy.text import Change, Generation, open_text_index, text_dir
from mail_imap_mcp.index.engines.tantivy.topk import Newest, Passing, best_matches
from mail_imap_mcp.index.store import (
    FolderState,
    HitPage,
    IndexedMessage,
    IndexWriteFailed,
    PageAsk,
    Place,
    done,
    unpack_texts,
)
from mail_imap_mcp.query.tree import Query

log = logging.getLogger("mail_imap_mcp.index")

_CHUNK = 400
T = TypeVar("T")

_GENERATION_SCHEMA = """
CREATE TABLE IF NOT EXISTS ranked_generation(epoch TEXT NOT NULL, count INTEGER NOT NULL);
CREATE TRIGGER IF NOT EXISTS ranked_generation_added AFTER INSERT ON messages
    BEGIN UPDATE ranked_generation SET count = count + 1; END;
CREATE TRIGGER IF NOT EXISTS ranked_generation_removed AFTER DELETE ON messages
    BEGIN UPDATE ranked_generation SET count = count + 1; END
"""
_CHANGE_LOG = """
CREATE TEMP TABLE IF NOT EXISTS ranked_changes(
    seq INTEGER PRIMARY KEY, row_id INTEGER NOT NULL, folder INTEGER NOT NULL, uid INTEGER, added INTEGER);
CREATE TEMP TRIGGER IF NOT EXISTS ranked_changes_added AFTER INSERT ON main.messages
    BEGIN INSERT INTO ranked_changes(row_id, folder, uid, added) VALUES (new.id, new.folder, new.uid, 1); END;
CREATE TEMP TRIGGER IF NOT EXISTS ranked_changes_removed AFTER DELETE ON main.messages
    BEGIN INSERT INTO ranked_changes(row_id, folder, uid, added) VALUES (old.id, old.folder, NULL, 0); END
"""


class TantivyStore(SqliteStore):
    """:class:`~.store.IndexStore` of one SQLite file and the Tantivy index beside it."""

    def __init__(self, path: Path, *, identity: str | None = None) -> None:
        super().__init__(path, identity=identity)
        try:
            # Written only where missing: opening an index another process is writing waits for nobody.
            if not self._db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ranked_generation'"
            ).fetchone():
                with self._transaction():
                    for statement in _GENERATION_SCHEMA.split(";\n"):
                        self._db.execute(statement)
                    if self._db.execute("SELECT count(*) FROM ranked_generation").fetchone()[0] == 0:
                        self._db.execute(
                            "INSERT INTO ranked_generation(epoch, count) VALUES (?, 0)", (uuid.uuid4().hex,)
                        )
            for statement in _CHANGE_LOG.split(";\n"):  # TEMP: this connection's own, no lock on the file
                self._db.execute(statement)
            self.text = open_text_index(text_dir(path))
            self._kept = KeptPlaces()
        except BaseException:
            super().close()
            raise
        with self.text.writing:
            self._catch_up(self._generation(self._db))

    # -- writes -------------------------------------------------------------------------------------

    @staticmethod
    def _generation(db: sqlite3.Connection) -> Generation:
        epoch, count = db.execute("SELECT epoch, count FROM ranked_generation").fetchone()
        return Generation(str(epoch), int(count))

    def _written(self, write: Callable[[], T], messages: Sequence[IndexedMessage] = ()) -> T:
        """``write`` (a write of the SQLite store) in one transaction, then its rows in Tantivy."""
        with self.text.writing:
            return self._write_both(write, messages)

    def _write_both(self, write: Callable[[], T], messages: Sequence[IndexedMessage]) -> T:
        with self._transaction():
            before = self._generation(self._db)
            done = write()
            rows = self._db.execute(
                "SELECT row_id, folder, uid, added FROM ranked_changes ORDER BY seq"
            ).fetchall()
            self._db.execute("DELETE FROM ranked_changes")
            after = self._generation(self._db)
        if self.text.expected() != before:  # behind already (another process wrote, or a commit was lost)
            self._catch_up(after)
            return done
        if not rows:  # no message added or removed (flags, a folder's state): nothing of the text changed.
            # A commit for nothing took 0.3 s under load, twice per folder of each sync, under its lock.
            return done
        texts = {message.uid: message.texts for message in messages}
        changes = [
            Change(row_id, folder, self._texts_of(row_id, texts.get(uid)) if added else None)
            for row_id, folder, uid, added in rows
        ]
        try:
            self.text.apply(changes, after)
        except IndexWriteFailed as exc:  # SQLite has the write: searches rank with FTS5 until caught up
            log.warning("the ranked text index could not be written (%s); FTS5 ranks until it is", exc)
        return done

    def _texts_of(self, row_id: int, known: Sequence[str] | None) -> Sequence[str]:
        if known is not None:
            return known
        row = self._db.execute("SELECT doc FROM messages WHERE id = ?", (row_id,)).fetchone()
        return unpack_texts(row[0]) if row is not None else ()

    def _catch_up(self, generation: Generation) -> None:
        """Rebuild the Tantivy index from SQLite's texts when it does not record ``generation``."""
        _, recorded = self.text.searcher()
        if recorded == generation:
            return
        log.log(
            logging.INFO if recorded is None else logging.WARNING,
            "the ranked text index %s is behind its SQLite file (%s, not %s): it is built again",
            self.text.directory,
            recorded,
            generation,
        )
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        try:
            db.execute("BEGIN")  # one snapshot: the rows and the generation they make
            now = self._generation(db)
            count = self.text.rebuild(_stored_rows(db), now)
            log.info("the ranked text index %s holds %d messages", self.text.directory, count)
        except IndexWriteFailed as exc:
            log.warning("the ranked text index could not be rebuilt (%s); FTS5 ranks until it is", exc)
        finally:
            db.close()

    @translated
    def start_folder(self, name: str, uidvalidity: int) -> FolderState:
        return self._written(lambda: super(TantivyStore, self).start_folder(name, uidvalidity))

    @translated
    def put(self, state: FolderState, messages: Sequence[IndexedMessage]) -> None:
        self._written(lambda: super(TantivyStore, self).put(state, messages), messages)

    @translated
    def update(
        self,
        state: FolderState,
        *,
        flags: dict[int, tuple[str, ...]],
        removed: Iterable[int],
        labels: dict[int, tuple[str, ...]] | None = None,
    ) -> None:
        self._written(
            lambda: super(TantivyStore, self).update(state, flags=flags, removed=removed, labels=labels)
        )

    @translated
    def drop_folder(self, name: str) -> None:
        self._written(lambda: super(TantivyStore, self).drop_folder(name))

    # -- ranked pages -------------------------------------------------------------------------------

    def search(self, query: Query, **ask: Unpack[PageAsk]) -> HitPage:
        return self.start_search(query, **ask).result()

    def start_search(self, query: Query, **ask: Unpack[PageAsk]) -> PendingSearch:
        task = self._ranked_task(query, ask)
        if task is None:
            return super().start_search(query, **ask)
        started = self._ranker.submit(task)
        return PendingSearch(started.result, started.cancel)

    def _ranked_task(
        self, query: Query, ask: PageAsk
    ) -> Callable[[sqlite3.Connection], tuple[HitPage, Then]] | None:
        """The page as Tantivy ranks it, None where SQLite's own page is the answer."""
        fts = self.compiled(query)
        if ask["order"] != "relevance" or ask.get("places") is not None or fts.match is None:
            return None
        ranked = compile_tantivy(query, self.text.schema, self.text.tokenizer)
        if ranked.text is None:
            return None
        return lambda db: self._ranked_page(db, query, fts, ranked, ask)

    def _ranked_page(
        self, db: sqlite3.Connection, query: Query, fts: Fts5Query, ranked: RankedText, ask: PageAsk
    ) -> tuple[HitPage, Then]:
        stored = db.execute("SELECT name, id, messages FROM folders").fetchall()
        folders, offset, limit = list(ask["folders"]), ask["offset"], ask["limit"]
        keep = ask.get("keep", 0)
        wanted = set(folders)
        searched = [folder for name, folder, _ in stored if name in wanted]
        if not searched:
            return HitPage([], 0, folders, places=done([]) if keep else None), None
        searcher, recorded = self.text.searcher()
        if recorded != self._generation(db):
            log.info("the ranked text index is behind its SQLite file: FTS5 ranks this page")
            return page_task(stored, self._ranker, fts, ask)(db)
        text = (
            ranked.text
            if len(searched) == len(stored)
            else in_folders(ranked.text, self.text.schema, searched)
        )
        condition = _condition(db, fts) if ranked.filtered else None

        def best_of(best: int) -> list[tuple[float, int]] | None:
            return best_matches(searcher, self.text.schema, text, best, condition, _newest(db))

        pairs = best_of(offset + limit)
        if pairs is None:
            log.info("the query's conditions pass few of its best matches: FTS5 ranks this page")
            return page_task(stored, self._ranker, fts, ask)(db)
        if ranked.filtered:
            total = _count(db, fts, stored, searched)
        else:
            total = searcher.search(text, 1, count=True).count
        chosen = pairs[offset : offset + limit]
        hits = rows_of(db, [row for _, row in chosen], [-score for score, _ in chosen])
        found = HitPage(hits, total, folders)
        if not keep:
            return found, None
        kept: Future[list[Place]] = Future()
        found.places = kept
        if keep <= len(pairs) or len(pairs) < offset + limit:  # the page's ranking holds them all
            kept.set_result(places_of(db, [row for _, row in pairs[:keep]]))
            return found, None
        # The same search on the same snapshot keeps the same places: found once (conditions on flags
        # are not in the generation, so a filtered search finds its own).
        same = None if ranked.filtered else (recorded, tuple(stored), tuple(folders), repr(query), keep)
        if same is not None:
            earlier = self._kept.claim(same, kept)
            if earlier is not None:
                found.places = earlier
                return found, None

        def keep_places() -> None:
            """The first ``keep`` matches' places, ranked again after the page is handed over, by the
            same searcher on the same snapshot (the page pays for its own 20 alone: the best 2,000 read
            their runs of equal scores whole, ten times the page's cost at a million messages)."""
            try:
                first = best_of(keep)
                if first is None:  # later pages go by offset, ranked as this one
                    raise LookupError("the query's conditions pass few of its best matches")
                kept.set_result(places_of(db, [row for _, row in first[:keep]]))
            except BaseException as exc:
                kept.set_exception(exc)
                raise

        return found, keep_places

    def close(self) -> None:
        try:
            self.text.close()
        finally:
            super().close()


class KeptPlaces:
    """The places the last few ranked first pages keep, by their search and snapshot, so that the same
    search again (an agent asking twice, pages back to back) reuses them instead of ranking its best
    2,000 again after its page: that work holds Python's lock in rounds, and the next call waits on it."""

    #: Searches remembered (the newest).
    MOST = 8

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._kept: OrderedDict[Hashable, Future[list[Place]]] = OrderedDict()

    def claim(self, same: Hashable, kept: Future[list[Place]]) -> Future[list[Place]] | None:
        """The places kept (or being found) for ``same``; else None, ``kept`` now standing for it."""
        with self._guard:
            earlier = self._kept.get(same)
            if earlier is not None and not (earlier.done() and earlier.exception() is not None):
                self._kept.move_to_end(same)
                return earlier
            self._kept[same] = kept
            while len(self._kept) > self.MOST:
                self._kept.popitem(last=False)
            return None


def _condition(db: sqlite3.Connection, fts: Fts5Query) -> Passing:
    """Which of a list of row ids the query's conditions (beyond its ranked text) pass."""

    def passing(ids: list[int]) -> set[int]:
        found: set[int] = set()
        for first in range(0, len(ids), _CHUNK):
            chunk = ids[first : first + _CHUNK]
            found.update(
                row[0]
                for row in db.execute(
                    f"SELECT m.id FROM messages m WHERE m.id IN ({', '.join('?' for _ in chunk)}) "
                    f"AND ({fts.where})",
                    [*chunk, *fts.params],
                )
            )
        return found

    return passing


def _newest(db: sqlite3.Connection) -> Newest:
    """The lowest row id of the newest ``n`` stored rows, from the page's snapshot (0: fewer)."""

    def bound(n: int) -> int:
        row = db.execute("SELECT id FROM messages ORDER BY id DESC LIMIT 1 OFFSET ?", (n - 1,)).fetchone()
        return 0 if row is None else int(row[0])

    return bound


def _count(
    db: sqlite3.Connection, fts: Fts5Query, stored: Sequence[tuple[str, int, int]], searched: list[int]
) -> int:
    """How many messages of the ``searched`` folders the query matches (FTS5's count, as SQLite's page)."""
    assert fts.match is not None
    match = fts.match if len(searched) == len(stored) else in_places(fts.match, searched)
    sql = f"SELECT count(*) FROM fts CROSS JOIN messages m ON m.id = fts.rowid WHERE fts MATCH ? AND ({fts.where})"
    return int(db.execute(sql, [match, *fts.params]).fetchone()[0])


def _stored_rows(db: sqlite3.Connection) -> Iterator[tuple[int, int, Sequence[str]]]:
    for row_id, folder, doc in db.execute("SELECT id, folder, doc FROM messages"):
        yield int(row_id), int(folder), unpack_texts(doc)

"""The index in SQLite FTS5 (Python's own ``sqlite3``): one database file per account.

Tables: ``folders`` (each indexed folder's sync state), ``messages`` (a row per message: its place, the
facts a query filters on, and its text columns compressed, to cut snippets from and to delete its
terms again) and ``fts``, a contentless FTS5 table of the text columns (the terms only: the text is
kept once, compressed, in ``messages``). Every change is one transaction (``BEGIN IMMEDIATE``), the
journal is WAL, so a process killed at any point leaves the last batch committed or not at all, and a
second process on the same file waits for the first one's transaction (SQLite's locking) instead of
corrupting it. ``application_id`` marks the file as this index, and a table records the account it
indexes (:mod:`.schema`); a file without the mark, of another schema version or account, or
damaged is :class:`IndexUnusable` (:mod:`.location` moves it aside). Every other error of SQLite (a
full disk, an I/O error) is :class:`IndexWriteFailed`: the file is kept (:mod:`.errors`).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Unpack

from mail_imap_mcp.index.engines.sqlite import densities as stored_densities
from mail_imap_mcp.index.engines.sqlite import vector_reads
from mail_imap_mcp.index.engines.sqlite.errors import Transaction, failure_of, translated
from mail_imap_mcp.index.engines.sqlite.flag_index import flag_counts, prepare_flags, recount
from mail_imap_mcp.index.engines.sqlite.nearness import SqliteNearness
from mail_imap_mcp.index.engines.sqlite.pages import page_task
from mail_imap_mcp.index.engines.sqlite.query import Fts5Query, compile_fts5, label_keys, place_token
from mail_imap_mcp.index.engines.sqlite.ranking import SHARDS, Ranker, ReadConnections, Then
from mail_imap_mcp.index.engines.sqlite.schema import FTS_COLUMNS, prepare
from mail_imap_mcp.index.engines.sqlite.vector_layout import IDS_PER_SECOND, prepare_vectors, repack
from mail_imap_mcp.index.engines.sqlite.vectors import (
    HeldSignatures,
    _row_ids,
    counts,
    put,
    stored_model,
    todo,
)
from mail_imap_mcp.index.store import (
    WRITER_WAIT_S,
    FolderState,
    Hit,
    HitPage,
    IndexedMessage,
    IndexUnusable,
    IndexWriteFailed,
    PageAsk,
    flag_bits,
    pack_texts,
    unpack_texts,
)
from mail_imap_mcp.index.vectors import Densities, DensityReference, VectorCounts, VectorTodo
from mail_imap_mcp.query.tree import Query

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

BUSY_TIMEOUT_S = WRITER_WAIT_S
_FTS_VALUES = ", ".join("?" for _ in FTS_COLUMNS)


class SqliteStore:
    """:class:`~mail_imap_mcp.index.store.IndexStore` in one SQLite file."""

    def __init__(self, path: Path, *, shards: int = SHARDS, identity: str | None = None) -> None:
        """The index at ``path``; ``identity`` (the account's, :func:`.location.account_identity`): the
        one the file must record, recorded where it records none."""
        self.path = path
        try:
            self._db = sqlite3.connect(
                path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            prepare(self._db, path, self._transaction, identity)
            prepare_vectors(self._db, self._transaction)
            stored_densities.prepare_densities(self._db, self._transaction)
            prepare_flags(self._db, self._transaction)
        except sqlite3.Error as exc:
            self._close_quietly()
            raise failure_of(path, exc) from exc
        except (IndexWriteFailed, IndexUnusable):  # IndexBusy: another process's lock
            self._close_quietly()
            raise
        self._readers = ReadConnections(path, BUSY_TIMEOUT_S)
        self._ranker = Ranker(self._readers, shards)
        self._held = HeldSignatures()
        #: The row below which :meth:`vectors_todo` of a model goes on (none: from the newest).
        self._todo_below: dict[str, int] = {}
        #: The vector row key after which :meth:`densities_todo` of a generation goes on.
        self._densities_after: dict[int, int] = {}

    def _close_quietly(self) -> None:
        with contextlib.suppress(sqlite3.Error, AttributeError):
            self._db.close()

    def _transaction(self) -> Transaction:
        return Transaction(self._db, self.path)

    @translated
    def folders(self) -> dict[str, FolderState]:
        rows = self._db.execute(
            "SELECT name, uidvalidity, uidnext, highestmodseq, messages, complete FROM folders"
        ).fetchall()
        return {row[0]: FolderState(row[0], row[1], row[2], row[3], row[4], bool(row[5])) for row in rows}

    def _folder_id(self, name: str) -> int | None:
        row = self._db.execute("SELECT id FROM folders WHERE name = ?", (name,)).fetchone()
        return None if row is None else int(row[0])

    @translated
    def start_folder(self, name: str, uidvalidity: int) -> FolderState:
        with self._transaction():
            known = self.folders().get(name)
            if known is not None and known.uidvalidity == uidvalidity:
                return known
            if known is not None:
                self._drop(name)
            fresh = FolderState(name, uidvalidity)
            self._save(fresh)
            return fresh

    def _save(self, state: FolderState) -> int:
        self._db.execute(
            "INSERT INTO folders(name, uidvalidity, uidnext, highestmodseq, messages, complete) "
            "VALUES(?, ?, ?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET uidvalidity = excluded.uidvalidity, "
            "uidnext = excluded.uidnext, highestmodseq = excluded.highestmodseq, "
            "messages = excluded.messages, complete = excluded.complete",
            (
                state.name,
                state.uidvalidity,
                state.uidnext,
                state.highestmodseq,
                state.messages,
                state.complete,
            ),
        )
        folder = self._folder_id(state.name)
        assert folder is not None
        return folder

    def _forget(self, row_id: int, folder: int, doc: bytes) -> None:
        """Take a message's terms out of the FTS5 table (a contentless table is told the old text)."""
        self._db.execute(
            f"INSERT INTO fts(fts, rowid, {', '.join(FTS_COLUMNS)}) VALUES('delete', ?, {_FTS_VALUES})",
            (row_id, *unpack_texts(doc), place_token(folder)),
        )
        self._db.execute("DELETE FROM messages WHERE id = ?", (row_id,))

    def _free_id(self, sent: int) -> int:
        """A row id in the order of sent dates (:data:`IDS_PER_SECOND` per second), so that FTS5, which
        walks its matches by row id, walks them by date: the newest matches first without a sort."""
        base = max(sent, 0) * IDS_PER_SECOND
        row = self._db.execute(
            "SELECT max(id) FROM messages WHERE id BETWEEN ? AND ?", (base, base + IDS_PER_SECOND - 1)
        ).fetchone()
        candidate = base if row[0] is None else row[0] + 1
        while self._db.execute("SELECT 1 FROM messages WHERE id = ?", (candidate,)).fetchone():
            candidate += 1  # more than IDS_PER_SECOND messages sent in one second: the next free one
        return int(candidate)

    @translated
    def put(self, state: FolderState, messages: Sequence[IndexedMessage]) -> None:
        with self._transaction():
            folder = self._save(state)
            for message in messages:
                old = self._db.execute(
                    "SELECT id, doc FROM messages WHERE folder = ? AND uid = ?", (folder, message.uid)
                ).fetchone()
                if old is not None:
                    self._forget(old[0], folder, old[1])
                if message.global_id is not None:  # shown in another folder before: one row, this one
                    for row_id, shown_in, doc in self._db.execute(
                        "SELECT id, folder, doc FROM messages WHERE global_id = ?", (message.global_id,)
                    ).fetchall():
                        self._forget(row_id, shown_in, doc)
                bits, keywords = flag_bits(message.flags)
                row_id = self._free_id(message.sent)
                self._db.execute(
                    "INSERT INTO messages(id, folder, uid, sent, arrival_day, size, flag_bits, keywords, "
                    "has_attachment, filenames, doc, global_id, labels, label_keys, attachments_read, arrival) "
                    "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        row_id,
                        folder,
                        message.uid,
                        message.sent,
                        message.arrival_day,
                        message.size,
                        bits,
                        keywords,
                        message.has_attachment,
                        "\n".join(message.filenames),
                        pack_texts(message.texts, message.kept),
                        message.global_id,
                        "\n".join(message.labels),
                        label_keys(message.labels),
                        message.attachments_read,
                        message.arrival,
                    ),
                )
                self._db.execute(
                    f"INSERT INTO fts(rowid, {', '.join(FTS_COLUMNS)}) VALUES(?, {_FTS_VALUES})",
                    (row_id, *message.texts, place_token(folder)),
                )
            recount(self._db, folder)

    @translated
    def update(
        self,
        state: FolderState,
        *,
        flags: dict[int, tuple[str, ...]],
        removed: Iterable[int],
        labels: dict[int, tuple[str, ...]] | None = None,
    ) -> None:
        with self._transaction():
            folder = self._save(state)
            for uid, names in (labels or {}).items():
                self._db.execute(
                    "UPDATE messages SET labels = ?, label_keys = ? WHERE folder = ? AND uid = ?",
                    ("\n".join(names), label_keys(names), folder, uid),
                )
            for uid, now in flags.items():
                bits, keywords = flag_bits(now)
                self._db.execute(
                    "UPDATE messages SET flag_bits = ?, keywords = ? WHERE folder = ? AND uid = ?",
                    (bits, keywords, folder, uid),
                )
            for uid in removed:
                old = self._db.execute(
                    "SELECT id, doc FROM messages WHERE folder = ? AND uid = ?", (folder, uid)
                ).fetchone()
                if old is not None:
                    self._forget(old[0], folder, old[1])
            recount(self._db, folder)

    @translated
    def uids(self, folder: str) -> list[int]:
        rows = self._db.execute(
            "SELECT uid FROM messages WHERE folder = (SELECT id FROM folders WHERE name = ?) ORDER BY uid",
            (folder,),
        )
        return [row[0] for row in rows]

    @translated
    def unread_attachments(self, folder: str) -> list[int]:
        unread = "has_attachment AND NOT attachments_read"
        query = (
            f"SELECT uid FROM messages WHERE folder = (SELECT id FROM folders WHERE name = ?) AND {unread}"
        )
        return [row[0] for row in self._db.execute(query + " ORDER BY uid DESC", (folder,))]

    @translated
    def flags_of(self, folder: str) -> dict[int, tuple[int, str]]:
        rows = self._db.execute(
            "SELECT uid, flag_bits, keywords FROM messages WHERE folder = (SELECT id FROM folders WHERE name = ?)",
            (folder,),
        )
        return {row[0]: (row[1], row[2]) for row in rows}

    def _drop(self, name: str) -> None:
        folder = self._folder_id(name)
        if folder is None:
            return
        for row_id, doc in self._db.execute(
            "SELECT id, doc FROM messages WHERE folder = ?", (folder,)
        ).fetchall():
            self._forget(row_id, folder, doc)
        self._db.execute("DELETE FROM folders WHERE id = ?", (folder,))

    @translated
    def drop_folder(self, name: str) -> None:
        with self._transaction():
            self._drop(name)

    @translated
    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM messages").fetchone()[0])

    def search(self, query: Query, **ask: Unpack[PageAsk]) -> HitPage:
        return self.start_search(query, **ask).result()

    def start_search(self, query: Query, **ask: Unpack[PageAsk]) -> PendingSearch:
        """Start :meth:`search` in a thread on a read connection and return at once (the search's
        freshness round trip runs meanwhile); :meth:`PendingSearch.result` is the page."""
        started = self._ranker.submit(self._page_task(self.compiled(query), ask))
        return PendingSearch(started.result, started.cancel)

    def compiled(self, query: Query) -> Fts5Query:
        """``query`` compiled for this file: a flag few messages have or lack asked of its index."""
        try:
            counts = flag_counts(self._db)
        except sqlite3.Error as exc:
            raise failure_of(self.path, exc) from exc
        return compile_fts5(query, counts)

    def _page_task(
        self, query: Fts5Query, ask: PageAsk
    ) -> Callable[[sqlite3.Connection], tuple[HitPage, Then]]:
        try:
            stored = self._db.execute("SELECT name, id, messages FROM folders").fetchall()
        except sqlite3.Error as exc:
            raise failure_of(self.path, exc) from exc
        return page_task(stored, self._ranker, query, ask)

    # -- vectors (VectorStore, :mod:`.vectors`) ----------------------------------------------------

    @translated
    def vector_model(self) -> str | None:
        model = stored_model(self._db)
        return None if model is None else model.name

    @translated
    def vectors_todo(self, model: str, limit: int) -> list[VectorTodo]:
        below = self._todo_below.get(model)
        found = todo(self._db, model, below, limit)
        if not found and below is not None:  # the oldest reached: again from the newest
            found = todo(self._db, model, None, limit)
        # A full list: the next goes on below it (not past the same rows again); else from the newest.
        self._todo_below = {model: found[-1][0]} if len(found) == limit else {}
        return [message for _, message in found]

    @translated
    def put_vectors(
        self,
        model: str,
        vectors: Mapping[tuple[str, int], npt.NDArray[np.float32]],
        densities: Densities | None = None,
    ) -> None:
        with self._transaction():
            put(self._db, model, vectors, densities)

    @translated
    def density_reference(self) -> DensityReference | None:
        return stored_densities.reference(self._db)

    @translated
    def draw_density_reference(self, limit: int, counted: int) -> int | None:
        with self._transaction():
            row_ids = vector_reads.sample_ids(self._db, limit)
            return stored_densities.put_reference(self._db, row_ids, counted) if row_ids else None

    @translated
    def densities_todo(self, generation: int, limit: int) -> list[tuple[str, int]]:
        after = self._densities_after.get(generation)
        found = stored_densities.todo(self._db, generation, after, limit)
        if not found and after is not None:  # the last reached: again from the newest
            found = stored_densities.todo(self._db, generation, None, limit)
        self._densities_after = {generation: found[-1][0]} if len(found) == limit else {}
        return [place for _, place in found]

    @translated
    def put_densities(self, densities: Densities) -> bool:
        with self._transaction():
            return stored_densities.put_values(
                self._db, densities, _row_ids(self._db, list(densities.values))
            )

    @translated
    def densities_of(self, places: Sequence[tuple[str, int]]) -> Densities | None:
        row_ids = _row_ids(self._db, list(places))
        made, found = stored_densities.stored(self._db, list(row_ids.values()))
        if made is None:
            return None
        return Densities(made, {place: found[row] for place, row in row_ids.items() if row in found})

    @translated
    def repack_vectors(self) -> int:
        """Bring a batch of a file's int8 rows to six bits a component (:func:`.vector_layout.repack`):
        how many (0: none is left)."""
        model = stored_model(self._db)
        if model is None:
            return 0
        with self._transaction():
            return repack(self._db, model.dimensions)

    @translated
    def vector_counts(self, model: str, folders: Sequence[str] | None = None) -> VectorCounts:
        return counts(self._db, model, folders)

    @translated
    def vectors_of(self, places: Sequence[tuple[str, int]]) -> dict[tuple[str, int], npt.NDArray[np.float32]]:
        return vector_reads.vectors_of(self._db, places)

    @translated
    def vector_sample(self, limit: int) -> dict[tuple[str, int], npt.NDArray[np.float32]]:
        return vector_reads.vector_sample(self._db, limit)

    def nearest(
        self, vector: npt.NDArray[np.float32], query: Query | None, folders: Sequence[str], limit: int
    ) -> list[Hit]:
        """The nearest messages (:class:`.nearness.SqliteNearness`) as hits."""
        with self.nearness(query, folders) as near:
            return near.hits(near.near(vector, limit))

    @contextlib.contextmanager
    def nearness(self, query: Query | None, folders: Sequence[str]) -> Iterator[SqliteNearness]:
        """The nearest messages of a search on a read connection, in one snapshot, in the caller's thread:
        a hop to the pages' pool and back cost two waits for a core, most of a page's time under load
        (its words' search runs in that pool meanwhile)."""
        try:
            with self._readers.connection() as db:
                db.execute("BEGIN")
                yield SqliteNearness(db, self._held, query, folders)
        except sqlite3.Error as exc:
            raise failure_of(self.path, exc) from exc

    @translated
    def wait_for_writers(self, seconds: float) -> None:
        self._db.execute(f"PRAGMA busy_timeout = {max(int(seconds * 1000), 1)}")

    def close(self) -> None:
        self._ranker.close()
        self._close_quietly()


class PendingSearch:
    """A search under way (:meth:`SqliteStore.start_search`)."""

    def __init__(self, finish: Callable[[], HitPage], cancel: Callable[[], object] | None = None) -> None:
        self._finish = finish
        self._cancel = cancel

    def result(self) -> HitPage:
        """The page (waiting for it); an unreadable file is :class:`IndexUnusable`."""
        try:
            return self._finish()
        except sqlite3.Error as exc:  # the page cannot be read: the server answers
            raise IndexUnusable(str(exc)) from exc

    def cancel(self) -> None:
        """Not needed after all (the index changed before it was taken)."""
        if self._cancel is not None:
            self._cancel()

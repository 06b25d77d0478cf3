"""The Tantivy index beside an SQLite index file (engine ``sqlite+tantivy``): the terms of each message's
text columns, for ranked pages that score only what can still enter the page (Tantivy's top-k skips
blocks of postings whose best possible score cannot, block-max WAND; the result is the one scoring every
match gives).

A directory ``<index file>.tantivy`` holds one document per message row of the SQLite file: its row id
and folder id (indexed, fast fields) and one text field per column of :data:`~.store.TEXT_COLUMNS`, fed
the SQLite index's own words (:class:`~..sqlite.tokens.Tokenizer`) joined by spaces and split again by
Tantivy's ``whitespace`` tokenizer: the same words as FTS5's, positions kept for phrases. Nothing else of
a message is here (no stored text, no flags): SQLite keeps it.

A file beside Tantivy's own, ``generation.json``, records the SQLite generation the index matches
(:class:`Generation`: an epoch drawn when the SQLite side was made, and a count of the row changes since)
and the Tantivy commit it was recorded for (the ``opstamp`` of Tantivy's ``meta.json``, which a merge
keeps): written after each commit, so a crash between the two leaves the index behind (rebuilt), never
ahead. No document of the index carries it: Tantivy's BM25 counts a deleted document until a merge purges
it, so a document replaced at each commit moved every score whenever a merge ended (issue 89 item 17).

A bulk build's chunks are committed in batches (:meth:`TextIndex.apply`): a commit per batch, not per
chunk of 250 rows; until it is made the recorded generation is the one before the batch.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tantivy

from mail_imap_mcp.index.engines.sqlite.tokens import Tokenizer
from mail_imap_mcp.index.engines.tantivy.query import FOLDER_FIELD, ID_FIELD
from mail_imap_mcp.index.store import TEXT_COLUMNS, IndexWriteFailed

log = logging.getLogger("mail_imap_mcp.index")

#: The layout of the directory (a directory of another layout is built again: layout 1 kept the generation
#: in a document of the index).
LAYOUT = 2
#: Tantivy's writer memory (one thread): it writes a segment when full.
WRITER_HEAP_BYTES = 24_000_000
#: A write of at least this many rows (a chunk of a bulk build: the sync writes 250 at a time) leaves its
#: Tantivy commit to the batch (:meth:`TextIndex.apply`); a smaller one commits at once, as do the rows
#: pending before it.
BATCH_FROM_ROWS = 100
#: A batch is committed once it holds this many rows, or has waited :data:`BATCH_SECONDS` since its first,
#: or :data:`SETTLE_SECONDS` passed without a write, or a search or :meth:`TextIndex.close` reads it.
BATCH_ROWS = 100_000
BATCH_SECONDS = 15.0
SETTLE_SECONDS = 1.0
#: The file beside Tantivy's that records the generation of its last commit.
RECORD = "generation.json"


@dataclass(frozen=True)
class Generation:
    """Which state of the SQLite file an index matches: the file's ``epoch`` (drawn when its table of
    generations was made) and its count of message rows added and removed since."""

    epoch: str
    count: int


@dataclass(frozen=True)
class Change:
    """A message row added (``texts``: its columns) or removed from the SQLite file."""

    row_id: int
    folder: int
    texts: Sequence[str] | None


def text_dir(index_file: Path) -> Path:
    """The directory of the Tantivy index beside the SQLite file ``index_file``."""
    return index_file.with_name(index_file.name + ".tantivy")


def _schema() -> Any:
    builder = tantivy.SchemaBuilder()
    builder.add_unsigned_field(ID_FIELD, indexed=True, fast=True)
    builder.add_unsigned_field(FOLDER_FIELD, indexed=True, fast=True)
    for column in TEXT_COLUMNS:
        builder.add_text_field(column, tokenizer_name="whitespace", index_option="position")
    return builder.build()


#: The schema of every Tantivy index of this layout.
SCHEMA = _schema()


def _term(field: str, value: int) -> Any:
    """The documents whose unsigned ``field`` is ``value`` (a term of the schema's type: deleting by a
    bare term of the binding took a Python int as signed, which deleted nothing)."""
    return tantivy.Query.term_query(SCHEMA, field, value)


class TextIndex:
    """The Tantivy index of one SQLite file: its searcher, the generation it matches, and its writer
    (taken at the first write, held until :meth:`close`: one process writes it at a time). The stores of
    one file in a process share one (:func:`open_text_index`): Tantivy allows one writer per directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.tokenizer = Tokenizer()
        #: Held by a store across a write's SQLite transaction and its Tantivy commit, so that two
        #: stores of the file in this process commit in the same order on both sides.
        self.writing = threading.RLock()
        self._users = 0
        self._guard = threading.Lock()
        self._writer: Any = None
        #: The generation the writer's uncommitted documents make (None: nothing pending), how many
        #: rows changed since the last commit, when the first and the last of them came.
        self._pending: Generation | None = None
        self._pending_rows = 0
        self._pending_since = self._last_write = 0.0
        self._settle: threading.Timer | None = None
        self._closed = False
        #: Serialises the reader's reloads (each reads the newest commit on disk), the state of the
        #: directory's ``meta.json`` and :data:`RECORD` the last one read, and the searcher it made with
        #: the generation that commit matches.
        self._reloading = threading.Lock()
        self._reloaded: tuple[object, ...] | None = None
        self._current: tuple[Any, Generation | None] = (None, None)
        self.schema = SCHEMA
        # An index without a record of its generation, refused by this layout's schema, is layout 1's: its
        # rebuild is the planned upgrade (said at INFO), not damage (said as a WARNING).
        earlier_layout = (directory / "meta.json").exists() and not (directory / RECORD).exists()
        try:
            self._index = self._open()
        except (OSError, ValueError) as exc:  # damaged, or of another layout: built again
            if earlier_layout:
                log.info(
                    "the ranked text index %s is of an earlier layout; it is built again once", directory
                )
            else:
                log.warning("the ranked text index %s was unreadable (%s); it is built again", directory, exc)
            shutil.rmtree(directory, ignore_errors=True)
            self._index = self._open()
        self._reload()

    def _open(self) -> Any:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        index = tantivy.Index(self.schema, path=str(self.directory), reuse=True)
        # Reloaded by this object alone: Tantivy's own watcher thread reloads on every change of meta.json
        # unsynchronised with an explicit reload, and the slower of two reloads publishes last, so a
        # reader could go back to the commit before ours (a search missed a batch, a write rebuilt all).
        # (Layout 1's schema differs: Tantivy refuses it, a ValueError.)
        index.config_reader(reload_policy="Manual")
        record = self._read(RECORD)
        if record is not None and record.get("layout") != LAYOUT:
            raise ValueError(f"layout {record.get('layout')}, not {LAYOUT}")
        return index

    def _read(self, name: str) -> dict[str, Any] | None:
        """The JSON object of the directory's file ``name`` (None: missing or unreadable)."""
        try:
            found = json.loads((self.directory / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return found if isinstance(found, dict) else None

    def _opstamp(self) -> int | None:
        """The opstamp of the commit ``meta.json`` names (a merge keeps it; each commit raises it)."""
        meta = self._read("meta.json")
        return meta.get("opstamp") if meta is not None else None

    def searcher(self) -> tuple[Any, Generation | None]:
        """A searcher of every change applied (a batch pending is committed first), and the generation it
        matches (None: none recorded)."""
        if self._pending is not None:
            with self._guard:
                try:
                    self._commit_pending()
                except (OSError, ValueError, RuntimeError) as exc:  # behind: FTS5 ranks until caught up
                    log.warning("the ranked text index %s could not commit (%s)", self.directory, exc)
                    self._drop_writer()
        return self.committed()

    def committed(self) -> tuple[Any, Generation | None]:
        """A searcher of the last commit, and the generation it matches (None: none recorded)."""
        if self._meta_state() != self._reloaded:  # another process committed, or a merge ended
            self._reload()
        return self._current

    def expected(self) -> Generation | None:
        """The generation the index reaches with the batch pending (the last commit's without one): what
        the next write's SQLite state must have started from."""
        # Read once: a commit of another thread (the settle timer's) clears it after its reload, and
        # between two reads it made a write see None, find the index behind and rebuild all of it.
        pending = self._pending
        return pending if pending is not None else self.committed()[1]

    def _meta_state(self) -> tuple[object, ...]:
        """Which ``meta.json`` (Tantivy replaces it at each commit and merge) and :data:`RECORD` the
        directory holds."""
        state: list[object] = []
        for name in ("meta.json", RECORD):
            try:
                found = (self.directory / name).stat()
            except OSError:
                state.append(None)
            else:
                state.append((found.st_ino, found.st_mtime_ns, found.st_size))
        return tuple(state)

    def _reload(self) -> None:
        """Load the newest commit on disk into the reader, one reload at a time, with the generation
        recorded for that commit (None: none, or recorded for another commit)."""
        with self._reloading:
            state = self._meta_state()
            for _ in range(3):  # a commit between the two reads of its opstamp: which one was loaded?
                before = self._opstamp()
                self._index.reload()
                searcher = self._index.searcher()
                if before is not None and self._opstamp() == before:
                    record = self._read(RECORD)
                    if record is not None and record.get("opstamp") == before:
                        self._current = searcher, Generation(str(record["epoch"]), int(record["count"]))
                    else:
                        self._current = searcher, None
                    break
            else:
                self._current = searcher, None
            self._reloaded = state

    def apply(self, changes: Sequence[Change], generation: Generation) -> None:
        """Remove and add the rows of ``changes`` (in their order) and record ``generation``: committed at
        once for a small write, batched for a chunk of a bulk build (:data:`BATCH_FROM_ROWS`), so that a
        commit (a segment, its merges, a reload) is paid per batch, not per chunk
        (:class:`IndexWriteFailed` when Tantivy refuses: its last commit stays, the batch is dropped).

        Until a batch is committed the index records the generation before it, so searches of other
        processes rank with FTS5; a process killed with a batch pending leaves the index behind, and the
        next open rebuilds it (as after a crash between the two commits)."""
        with self._guard:
            writer = self._take_writer()
            try:
                for change in changes:
                    if change.texts is None:
                        writer.delete_documents_by_query(_term(ID_FIELD, change.row_id))
                    else:  # a new row id (SQLite's ids are not reused while a row holds them)
                        writer.add_document(self.document(change.row_id, change.folder, change.texts))
                now = time.monotonic()
                if self._pending is None:
                    self._pending_since = now
                self._pending, self._last_write = generation, now
                self._pending_rows += len(changes)
                if (
                    len(changes) < BATCH_FROM_ROWS
                    or self._pending_rows >= BATCH_ROWS
                    or now - self._pending_since >= BATCH_SECONDS
                ):
                    self._commit_pending()
                elif self._settle is None:
                    self._arm(SETTLE_SECONDS)
            except (OSError, ValueError, RuntimeError) as exc:
                self._drop_writer()
                raise IndexWriteFailed(f"{self.directory}: {exc}") from exc

    def _arm(self, seconds: float) -> None:
        self._settle = threading.Timer(seconds, self._settled)
        self._settle.daemon = True
        self._settle.start()

    def _settled(self) -> None:
        """The timer's: commit the batch once no write came for :data:`SETTLE_SECONDS`."""
        with self._guard:
            self._settle = None
            if self._pending is None or self._closed:
                return
            quiet = time.monotonic() - self._last_write
            if quiet < SETTLE_SECONDS:
                self._arm(SETTLE_SECONDS - quiet)
                return
            try:
                self._commit_pending()
            except (OSError, ValueError, RuntimeError) as exc:
                log.warning("the ranked text index %s could not commit (%s)", self.directory, exc)
                self._drop_writer()

    def _commit_pending(self) -> None:
        """Commit the batch pending, if any (under :attr:`_guard`)."""
        if self._pending is None or self._writer is None:
            return
        self._commit(self._writer, self._pending)

    def rebuild(self, rows: Iterable[tuple[int, int, Sequence[str]]], generation: Generation) -> int:
        """Every document replaced by those of ``rows`` (row id, folder id, texts), recorded as
        ``generation``; how many there are."""
        with self._guard:
            writer = self._take_writer()
            count = 0
            self._pending, self._pending_rows = None, 0  # deleted with the rest
            try:
                # Not delete_all_documents(): it sets the writer's opstamps back, and a later commit could
                # then carry the opstamp :data:`RECORD` names for an earlier one. Segments left with no
                # document are dropped at the commit, so no deleted document is counted.
                writer.delete_documents_by_query(tantivy.Query.all_query())
                for row_id, folder, texts in rows:
                    writer.add_document(self.document(row_id, folder, texts))
                    count += 1
                self._commit(writer, generation)
            except (OSError, ValueError, RuntimeError) as exc:
                self._drop_writer()
                raise IndexWriteFailed(f"{self.directory}: {exc}") from exc
            return count

    def document(self, row_id: int, folder: int, texts: Sequence[str]) -> Any:
        """The document of one message row."""
        document = tantivy.Document()
        document.add_unsigned(ID_FIELD, row_id)
        document.add_unsigned(FOLDER_FIELD, folder)
        for column, text in zip(TEXT_COLUMNS, texts, strict=True):
            if text:
                words = self.tokenizer.words(text)
                if words:
                    document.add_text(column, " ".join(words))
        return document

    def _take_writer(self) -> Any:
        if self._writer is None:
            try:
                self._writer = self._index.writer(WRITER_HEAP_BYTES, 1)
            except ValueError as exc:  # another process holds the directory's lock
                raise IndexWriteFailed(
                    f"{self.directory} is being written by another process: {exc}"
                ) from exc
        return self._writer

    def _drop_writer(self) -> None:
        self._pending, self._pending_rows = None, 0
        writer, self._writer = self._writer, None
        if writer is not None:
            try:
                writer.rollback()
            except (OSError, ValueError, RuntimeError) as exc:
                log.debug("rolling back %s: %s", self.directory, exc)

    def _commit(self, writer: Any, generation: Generation) -> None:
        opstamp = writer.commit()
        # Recorded after the commit: a crash between the two leaves the index behind, never ahead.
        record = {"layout": LAYOUT, "opstamp": opstamp, "epoch": generation.epoch, "count": generation.count}
        written = self.directory / f".{RECORD}.{os.getpid()}.{threading.get_ident()}"
        written.write_text(json.dumps(record), encoding="utf-8")
        os.replace(written, self.directory / RECORD)
        self._reload()
        # Reloaded before the batch stops counting as pending: a reader of another thread (expected(),
        # searcher(), which take no lock) that sees nothing pending then gets this commit's searcher.
        # The other order let a search miss the batch and a write rebuild the whole index for nothing.
        self._pending, self._pending_rows = None, 0

    def close(self) -> None:
        """One store less uses it; the last one lets go of the writer (and its lock), waiting for its
        merges."""
        with _open_guard:
            self._users -= 1
            if self._users > 0:
                return
            _open.pop(self.directory, None)
        with self._guard:
            self._closed = True
            if self._settle is not None:
                self._settle.cancel()
            try:
                self._commit_pending()
            except (OSError, ValueError, RuntimeError) as exc:  # left behind: the next open rebuilds it
                log.warning("the ranked text index %s could not commit (%s)", self.directory, exc)
                self._drop_writer()
            writer, self._writer = self._writer, None
            if writer is not None:
                try:
                    writer.wait_merging_threads()
                except (OSError, ValueError, RuntimeError) as exc:
                    log.debug("closing the writer of %s: %s", self.directory, exc)
        self.tokenizer.close()


_open: dict[Path, TextIndex] = {}
_open_guard = threading.Lock()


def open_text_index(directory: Path) -> TextIndex:
    """The Tantivy index in ``directory``, shared by every store of it in this process (each closes it
    once)."""
    key = directory.expanduser().resolve()
    with _open_guard:
        found = _open.get(key)
        if found is None:
            found = _open[key] = TextIndex(key)
        found._users += 1
        return found

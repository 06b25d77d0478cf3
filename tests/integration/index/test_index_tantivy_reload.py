"""The ``sqlite+tantivy`` engine's reader and its batch pending, read while another thread commits
(issue 80's loaded run: the top-20 property failed once with an empty searcher and a whole rebuild).

* ``expected()`` reads the batch pending once: the settle timer's commit, between two reads, made a write
  see nothing pending, find the index behind its SQLite file and rebuild all of it;
* the reader is reloaded by the index alone (Tantivy's watcher thread, unsynchronised with our reload,
  could publish the commit before ours last), and still sees the commits of another process."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest
import tantivy

from mail_imap_mcp.index.engines.tantivy import text as tantivy_text
from mail_imap_mcp.index.engines.tantivy.store import TantivyStore
from mail_imap_mcp.index.engines.tantivy.text import Change, Generation, TextIndex, text_dir
from mail_imap_mcp.index.store import TEXT_COLUMNS, IndexedMessage
from mail_imap_mcp.query.tree import Contains


class CommittedBetweenReads(TextIndex):
    """A text index whose batch pending is committed, as by the settle timer's thread, right after the
    first read of it once :attr:`armed`: the two threads' steps in one chosen order."""

    armed = False

    @property  # type: ignore[override]
    def _pending(self) -> Generation | None:
        found: Generation | None = self.__dict__["pending"]
        if self.armed and found is not None:
            self.__dict__["reads"] = self.__dict__.get("reads", 0) + 1
            if self.__dict__["reads"] == 2 and self._guard.locked():  # the write's own, under the lock
                self.armed = False
            elif self.__dict__["reads"] == 2:  # the timer's commit lands between the first read and this one
                self.armed = False
                with self._guard:
                    self._commit_pending()
                found = self.__dict__["pending"]
        return found

    @_pending.setter
    def _pending(self, value: Generation | None) -> None:
        self.__dict__["pending"] = value


def message(uid: int, body: str) -> IndexedMessage:
    texts = tuple(body if column == "body" else "" for column in TEXT_COLUMNS)
    return IndexedMessage(uid, 2000 + uid, 20260101, 10, (), False, texts)


def test_a_write_as_the_settle_timer_commits_the_batch_finds_the_index_caught_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: ``expected()`` read the batch pending twice, without the lock; the timer's commit in
    between made it answer None, and the next chunk of a sync rebuilt the whole index (minutes at a
    million messages)."""
    monkeypatch.setattr(tantivy_text, "SETTLE_SECONDS", 600.0)
    monkeypatch.setattr(tantivy_text, "BATCH_SECONDS", 600.0)
    monkeypatch.setattr(tantivy_text, "TextIndex", CommittedBetweenReads)
    store = TantivyStore(tmp_path / "timer.sqlite3")
    try:
        assert isinstance(store.text, CommittedBetweenReads)
        state = store.start_folder("F", 1)
        store.put(state, [message(uid, f"apple {uid % 7}") for uid in range(1, 251)])  # batched
        generation = store._generation(store._db)
        assert store.text.committed()[1] != generation  # pending
        caplog.set_level(logging.INFO, logger="mail_imap_mcp.index")
        caplog.clear()
        store.text.armed = True
        store.put(state, [message(uid, "pear") for uid in range(251, 501)])  # the next chunk, as it commits
        store.text.armed = False
        assert "built again" not in caplog.text
        assert store.text.expected() == store._generation(store._db)
    finally:
        store.close()


def test_the_reader_is_reloaded_by_the_index_alone_and_sees_another_process_commit(tmp_path: Path) -> None:
    """Regression: Tantivy's watcher thread reloaded the reader on each new ``meta.json``, unsynchronised
    with the reload after our commit; the slower published last, so a searcher could show the commit
    before ours (the loaded run's empty top 20). The index reloads alone; another writer's commit (as of
    another process) is still seen by the next read."""
    directory = tmp_path / "x.sqlite3.tantivy"
    text = TextIndex(directory)
    try:
        body = tuple("apple" if column == "body" else "" for column in TEXT_COLUMNS)
        text.apply([Change(1, 1, body)], Generation("e", 1))
        assert text.committed()[1] == Generation("e", 1)
        text._drop_writer()  # lets another writer take the directory's lock
        other = TextIndex(directory)  # as another process's: its own reader and writer
        other.apply([Change(2, 1, body)], Generation("e", 2))
        other.close()
        searcher, generation = text.committed()
        assert generation == Generation("e", 2)
        assert searcher.num_docs == 2  # the two messages: the generation is no document
    finally:
        text.close()


def layout_1_index(directory: Path) -> None:
    """A Tantivy index of layout 1: its generation in a ``meta`` document (replaced at each commit)."""
    builder = tantivy.SchemaBuilder()
    builder.add_unsigned_field("id", indexed=True, fast=True)
    builder.add_unsigned_field("folder", indexed=True, fast=True)
    builder.add_unsigned_field("meta", indexed=True)
    builder.add_text_field("epoch", stored=True, tokenizer_name="raw")
    builder.add_unsigned_field("generation", stored=True)
    builder.add_unsigned_field("layout", stored=True)
    for column in TEXT_COLUMNS:
        builder.add_text_field(column, tokenizer_name="whitespace", index_option="position")
    directory.mkdir()
    writer = tantivy.Index(builder.build(), path=str(directory), reuse=True).writer(15_000_000, 1)
    meta = tantivy.Document()
    meta.add_unsigned("meta", 1)
    meta.add_unsigned("layout", 1)
    writer.add_document(meta)
    writer.commit()
    writer.wait_merging_threads()


@pytest.mark.parametrize("left", ["layout 1", "no record of the last commit"])
def test_an_index_of_layout_1_or_without_its_record_is_built_again_at_open(
    tmp_path: Path, left: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Layout 2 keeps the generation out of the index (issue 89 item 17): an index of layout 1, or one
    whose last commit was not recorded (a crash between the commit and its record), is built again from
    the SQLite file at the next open, and ranks its messages; layout 1's rebuild, a planned upgrade, is
    no warning."""
    path = tmp_path / "ranked.sqlite3"
    store = TantivyStore(path)
    store.put(store.start_folder("F", 1), [message(uid, f"apple {uid}") for uid in range(1, 11)])
    store.close()
    if left == "layout 1":
        shutil.rmtree(text_dir(path))
        layout_1_index(text_dir(path))
    else:
        (text_dir(path) / tantivy_text.RECORD).unlink()
    caplog.set_level(logging.INFO)
    store = TantivyStore(path)
    assert not [record for record in caplog.records if record.levelno >= logging.WARNING]
    try:
        searcher, generation = store.text.committed()
        assert generation == store._generation(store._db)
        assert searcher.num_docs == 10
        page = store.search(Contains("body", "apple"), folders=["F"], order="relevance", limit=20, offset=0)
        assert page.total == 10 and not page.unweighted
    finally:
        store.close()


def test_a_rebuild_commits_a_later_opstamp_than_every_commit_before(tmp_path: Path) -> None:
    """``generation.json`` names its commit by Tantivy's opstamp: a rebuild (every document replaced) must
    not set the opstamps back (``delete_all_documents`` did), or a reader could take an earlier commit's
    record for a later commit's documents."""
    directory = tmp_path / "x.sqlite3.tantivy"
    text = TextIndex(directory)
    try:
        body = tuple("apple" if column == "body" else "" for column in TEXT_COLUMNS)
        for row in range(1, 4):
            text.apply([Change(row, 1, body)], Generation("e", row))
        before = json.loads((directory / "meta.json").read_text())["opstamp"]
        text.rebuild([(1, 1, body)], Generation("e", 9))
        assert json.loads((directory / "meta.json").read_text())["opstamp"] > before
        searcher, generation = text.committed()
        assert generation == Generation("e", 9) and searcher.num_docs == 1
    finally:
        text.close()

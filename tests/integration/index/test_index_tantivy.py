"""The ``sqlite+tantivy`` engine (issue 51): relevance pages ranked by a Tantivy index beside the SQLite
file, on real files.

* its top 20 (and the next 20) is exactly the first of every match scored by the same scorer (Tantivy's
  own BM25 with a limit as large as the matches, where nothing can be skipped), equal scores by newest
  row id first, for random corpora and query trees (text alone and text with conditions SQLite checks);
* it finds the same messages as the SQLite engine for every query tree, and the same words (accents,
  case, addresses, syntax of both engines' languages);
* the two indexes stay one: a write of another process (the plain SQLite engine) or a process killed
  while it writes leaves the Tantivy index behind its file; searches then rank with FTS5 (never a stale
  answer) and the next open rebuilds it from the file's texts;
* through the MCP server against Dovecot, a ranked page comes from Tantivy.

The index suite (test_index_search.py, test_index_query_language.py, test_index_concurrent.py) runs on
this engine too (``index_engine``)."""

from __future__ import annotations

import itertools
import logging
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.index.engine import IndexEngine
from mail_imap_mcp.index.engines.sqlite.engine import SqliteEngine
from mail_imap_mcp.index.engines.sqlite.store import SqliteStore
from mail_imap_mcp.index.engines.tantivy import store as ranked_store
from mail_imap_mcp.index.engines.tantivy import text as tantivy_text
from mail_imap_mcp.index.engines.tantivy import topk as tantivy_topk
from mail_imap_mcp.index.engines.tantivy.engine import TantivyEngine
from mail_imap_mcp.index.engines.tantivy.query import ID_FIELD, compile_tantivy, in_folders
from mail_imap_mcp.index.engines.tantivy.store import TantivyStore
from mail_imap_mcp.index.engines.tantivy.text import TextIndex, text_dir
from mail_imap_mcp.index.store import TEXT_COLUMNS, IndexedMessage, IndexStore, Unsupported
from mail_imap_mcp.query.tree import AllOf, AnyOf, Contains, HasFlag, Not, Query
from tests.support.clients.index_clients import index_file, indexed_client
from tests.support.engine_words import HOSTILE, assert_same_words
from tests.support.mail.mailgen import plain_message
from tests.support.patience import eventually, patient
from tests.support.servers.matrix import MatrixServer
from tests.support.shared.index_fts5 import messages, trees

ACCOUNT = AccountConfig.model_validate({"host": "imap.example.org", "username": "u", "password_env": "X"})
#: Few words, repeated: many messages score alike, so ties at a page's edge are common.
VOCABULARY = ("alpha", "beta", "gamma", "delta", "omega", "kappa")
FLAGS = ("\\Seen", "\\Flagged")


def texts(subject: str, body: str) -> tuple[str, ...]:
    return tuple(subject if c == "subject" else body if c == "body" else "" for c in TEXT_COLUMNS)


@st.composite
def corpora(draw: st.DrawFn) -> list[IndexedMessage]:
    """20-250 messages of the few words, some flagged, sent in the same few seconds (row ids close)."""
    rng = draw(st.randoms(use_true_random=True))
    found = []
    for uid in range(1, draw(st.integers(20, 250)) + 1):
        subject = " ".join(rng.choices(VOCABULARY, k=rng.randint(0, 3)))
        body = " ".join(rng.choices(VOCABULARY, k=rng.randint(0, 12)))
        flags = tuple(flag for flag in FLAGS if rng.random() < 0.4)
        found.append(IndexedMessage(uid, 1_000 + uid % 7, 20260101, 100, flags, False, texts(subject, body)))
    return found


def ranked_trees() -> st.SearchStrategy[Query]:
    word = st.builds(Contains, st.sampled_from(["text", "subject", "body"]), st.sampled_from(VOCABULARY))
    text = st.one_of(
        word,
        st.builds(lambda parts: AnyOf(tuple(parts)), st.lists(word, min_size=2, max_size=3)),
        st.builds(lambda parts: AllOf(tuple(parts)), st.lists(word, min_size=2, max_size=2)),
    )
    flag = st.builds(HasFlag, st.sampled_from(["seen", "flagged"]), st.booleans())
    return st.one_of(text, st.builds(lambda t, f: AllOf((t, f)), text, flag))


@pytest.fixture(scope="module")
def tantivy_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TantivyStore]:
    store = TantivyStore(tmp_path_factory.mktemp("tantivy") / "ranked.sqlite3")
    yield store
    store.close()


_example_folders = itertools.count()


def every_match_scored(store: TantivyStore, query: Query, folder: str) -> list[int]:
    """The UIDs of ``query``'s matches in ``folder``, every match scored by Tantivy (a limit as large as
    the index: nothing skipped), kept where SQLite's own answer has them, by score then newest row id."""
    db = sqlite3.connect(store.path)
    try:
        folder_id, uid_of = db.execute("SELECT id FROM folders WHERE name = ?", (folder,)).fetchone()[0], {}
        uid_of = dict(db.execute("SELECT id, uid FROM messages WHERE folder = ?", (folder_id,)).fetchall())
    finally:
        db.close()
    plain = SqliteStore.search(store, query, folders=[folder], order="date", limit=10_000, offset=0)
    matching = {hit.uid for hit in plain.hits}
    ranked = compile_tantivy(query, store.text.schema, store.text.tokenizer)
    searcher, _ = store.text.searcher()
    text = in_folders(ranked.text, store.text.schema, [folder_id])
    hits = searcher.search(text, searcher.num_docs + 1, count=False).hits
    rows = searcher.fast_field_values(ID_FIELD, [address for _, address in hits])
    scored = sorted(
        zip((score for score, _ in hits), rows, strict=True), key=lambda pair: (-pair[0], -pair[1])
    )
    return [uid_of[row] for _, row in scored if uid_of[row] in matching]


@pytest.mark.parametrize("walk_after", [tantivy_topk._WALK_AFTER, 0])  # 0: a run at the edge is looked into
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(corpus=corpora(), query=ranked_trees())
def test_property_the_top_20_is_every_match_scored_first_20_in_order(
    tantivy_store: TantivyStore, walk_after: int, corpus: list[IndexedMessage], query: Query
) -> None:
    # Other examples' folders are in the index: the page is this folder's alone.
    folder = f"Example {next(_example_folders)}"
    tantivy_store.put(tantivy_store.start_folder(folder, 1), corpus)
    expected = every_match_scored(tantivy_store, query, folder)
    with mock.patch.object(tantivy_topk, "_WALK_AFTER", walk_after):
        first = tantivy_store.search(query, folders=[folder], order="relevance", limit=20, offset=0, keep=60)
        second = tantivy_store.search(query, folders=[folder], order="relevance", limit=20, offset=20)
    assert [hit.uid for hit in first.hits] == expected[:20], query
    assert [hit.uid for hit in second.hits] == expected[20:40], query
    assert [place.uid for place in first.places.result(timeout=patient(10))] == expected[:60]
    assert first.total == len(expected)
    assert not first.unweighted
    ranks = [hit.rank for hit in first.hits]
    assert ranks == sorted(ranks) and all(rank < 0 for rank in ranks)  # Tantivy's scores, best first


def every_score(store: TantivyStore, query: Query) -> dict[int, float]:
    """The score Tantivy gives each match of ``query``, by row id (every match scored)."""
    searcher, _ = store.text.searcher()
    text = compile_tantivy(query, store.text.schema, store.text.tokenizer).text
    hits = searcher.search(text, searcher.num_docs + 1, count=False).hits
    rows = searcher.fast_field_values(ID_FIELD, [address for _, address in hits])
    return {int(row): float(score) for (score, _), row in zip(hits, rows, strict=True)}


def test_the_scores_are_the_messages_own_whatever_the_commits_before(tmp_path: Path) -> None:
    """Issue 89 item 17: a commit that changes no message, or the same messages written again at once,
    leaves every score and the page as they were (Tantivy's BM25 counts a deleted document until a merge
    purges it, so a document replaced at each commit moved the scores whenever a merge ended)."""
    store = TantivyStore(tmp_path / "ranked.sqlite3")
    try:
        rng = random.Random(17)
        for folder in ("A", "B"):  # two commits of fewer rows than a batch: each commits at once
            corpus = [
                IndexedMessage(
                    uid,
                    1_000 + uid,
                    20260101,
                    100,
                    (),
                    False,
                    texts(
                        " ".join(rng.choices(VOCABULARY, k=rng.randint(0, 3))),
                        " ".join(rng.choices(VOCABULARY, k=rng.randint(0, 12))),
                    ),
                )
                for uid in range(1, 61)
            ]
            store.put(store.start_folder(folder, 1), corpus)
        query = AnyOf((Contains("text", "alpha"), Contains("subject", "beta"), Contains("body", "kappa")))
        scores = every_score(store, query)
        page = store.search(query, folders=["A", "B"], order="relevance", limit=20, offset=0)
        _, generation = store.text.searcher()
        assert generation is not None
        for _ in range(3):
            store.text.apply([], generation)  # committed at once, no message changed
        assert every_score(store, query) == scores
        db = sqlite3.connect(store.path)
        try:
            store.text.rebuild(ranked_store._stored_rows(db), generation)
        finally:
            db.close()
        assert every_score(store, query) == scores
        again = store.search(query, folders=["A", "B"], order="relevance", limit=20, offset=0)
        assert again.hits == page.hits
    finally:
        store.close()


def test_a_long_run_of_equal_scores_is_listed_newest_first(tmp_path: Path) -> None:
    """Every message of one sender scores alike: the page is the run's newest, found among the newest
    matches, and it is what every match scored gives."""
    store = TantivyStore(tmp_path / "run.sqlite3")
    try:
        sender = tuple("Dmitri Volkov <dvolkov@example.org>" if c == "sender" else "" for c in TEXT_COLUMNS)
        corpus = [
            IndexedMessage(uid, 5_000 + (uid * 7919) % 1500, 20260101, 10, (), False, sender)
            for uid in range(1, 1501)
        ]
        store.put(store.start_folder("F", 1), corpus)
        store.put(store.start_folder("G", 1), corpus[:10])  # a second folder: the page is F's
        looked: list[object] = []
        real = tantivy_topk._through_the_run

        def look(*args: object) -> object:
            looked.append(real(*args))  # type: ignore[arg-type]
            return looked[-1]

        with mock.patch.object(tantivy_topk, "_through_the_run", look):
            page = store.search(
                Contains("from", "dvolkov"), folders=["F"], order="relevance", limit=20, offset=0, keep=30
            )
        assert looked and looked[0] is not None  # the run's newest were found among the newest matches
        sent = {m.uid: m.sent for m in corpus}
        newest = sorted(corpus, key=lambda m: -m.sent)[:30]
        assert [hit.uid for hit in page.hits] == [m.uid for m in newest[:20]]
        assert [place.uid for place in page.places.result(timeout=patient(10))] == [m.uid for m in newest]
        assert page.hits == sorted(page.hits, key=lambda hit: -sent[hit.uid])
        assert [hit.uid for hit in page.hits] == every_match_scored(store, Contains("from", "dvolkov"), "F")[
            :20
        ]
        assert page.total == 1500
    finally:
        store.close()


def test_the_same_ranked_search_again_keeps_the_places_found_once(tmp_path: Path) -> None:
    """Issue 56 item 20: a first page's kept matches are ranked again after it (Python rounds holding
    the GIL, which the next call waits on); the same search on the same snapshot reuses them. A write, or a
    condition SQLite checks (flags are not in the snapshot's generation), ranks them anew."""
    store = TantivyStore(tmp_path / "again.sqlite3")
    try:
        sender = tuple("Dmitri Volkov <dvolkov@example.org>" if c == "sender" else "" for c in TEXT_COLUMNS)
        corpus = [IndexedMessage(uid, 5_000 + uid, 20260101, 10, (), False, sender) for uid in range(1, 301)]
        store.put(store.start_folder("F", 1), corpus)
        ranked: list[int] = []
        real = ranked_store.best_matches

        def counted(*args: Any) -> Any:
            ranked.append(args[3])  # best: the page's (20 + margin) or the kept matches' (keep)
            return real(*args)

        def kept_places(query: Query) -> list[tuple[str, int]]:
            page = store.search(query, folders=["F"], order="relevance", limit=20, offset=0, keep=100)
            assert page.places is not None
            return page.places.result(timeout=patient(10))

        word = Contains("from", "dvolkov")
        with mock.patch.object(ranked_store, "best_matches", counted):
            first = kept_places(word)
            assert kept_places(word) == first and ranked.count(100) == 1
            store.put(
                store.start_folder("F", 1), [IndexedMessage(301, 9_999, 20260101, 10, (), False, sender)]
            )
            assert kept_places(word)[0][:2] == ("F", 301) and ranked.count(100) == 2
            filtered = AllOf((word, Not(HasFlag("seen"))))
            kept_places(filtered), kept_places(filtered)
            assert ranked.count(100) == 4
        assert len(first) == 100
    finally:
        store.close()


@pytest.fixture(scope="module")
def both_stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[IndexStore, IndexStore]]:
    engines: list[IndexEngine] = [
        SqliteEngine(tmp_path_factory.mktemp("plain")),
        TantivyEngine(tmp_path_factory.mktemp("ranked")),
    ]
    stores = tuple(engine.location("a", ACCOUNT).open().store for engine in engines)
    yield stores[0], stores[1]
    for store in stores:
        store.close()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(corpus=messages(), query=trees())
def test_property_the_same_messages_as_sqlite_for_every_query_tree(
    both_stores: tuple[IndexStore, IndexStore], corpus: list[IndexedMessage], query: Query
) -> None:
    folder = f"Example {next(_example_folders)}"
    found = []
    for store in both_stores:
        store.put(store.start_folder(folder, 1), corpus)
        try:
            page = store.search(query, folders=[folder], order="relevance", limit=100, offset=0)
        except Unsupported:
            found.append(None)
            continue
        found.append((sorted(hit.uid for hit in page.hits), page.total))
    assert found[0] == found[1], query


def test_the_same_words_as_sqlite_accents_case_and_syntax_alike(
    both_stores: tuple[IndexStore, IndexStore],
) -> None:
    said = [
        "Crème Brûlée at the CAFÉ",
        "o'brien wrote: kiwi:* & apple&pear | plum|fig !quince title:x AND (y OR z)",
        "see https://example.org/a-b_c and first.last@example.com",
        "'); DROP SCHEMA public CASCADE; -- said Straße İstanbul",
    ]
    corpus = [
        IndexedMessage(uid, uid, 20260101, 10, (), False, texts("", t)) for uid, t in enumerate(said, 1)
    ]
    asked = [
        *HOSTILE,
        *("creme brulee", "cafe", "CRÈME", "example.org", "a-b", "c", "first.last@example.com"),
        *("strasse", "straße", "istanbul", "wrote kiwi", "kiwi wrote", "pear apple", "title:x", "AND", "(y"),
    ]
    assert_same_words(both_stores, corpus, asked)
    page = both_stores[1].search(
        Contains("text", "creme"), folders=["Words"], order="relevance", limit=9, offset=0
    )
    assert [hit.uid for hit in page.hits] == [1]


# -- the two indexes stay one ----------------------------------------------------------------------------

WRITER = """
import random, sys, time
from pathlib import Path
from mail_imap_mcp.index.store import TEXT_COLUMNS, IndexedMessage
from mail_imap_mcp.index.engines.tantivy import text as tantivy_text
from mail_imap_mcp.index.engines.tantivy.store import TantivyStore

path, pause, batch = Path(sys.argv[1]), sys.argv[2] == "pause", sys.argv[2] == "batch"
words = ("alpha", "beta", "gamma", "delta")
tantivy_text.SETTLE_SECONDS = 600  # batch: the batch stays pending until the parent kills it
store = TantivyStore(path)
state = store.start_folder("F", 1)
uid = max(store.uids("F"), default=0)
print("ready", flush=True)
if pause:  # stop between SQLite's commit and Tantivy's, and say so: the parent kills it there
    def stopped(self, changes, generation):
        print("between", flush=True)
        time.sleep(60)
    tantivy_text.TextIndex.apply = stopped
rng = random.Random(uid)
if batch:  # chunks of a bulk build (250 rows, as the sync writes them): Tantivy's commit is batched
    for _ in range(3):
        chunk = []
        for uid in range(uid + 1, uid + 251):
            texts = tuple(" ".join(rng.choices(words, k=6)) if c == "body" else "" for c in TEXT_COLUMNS)
            chunk.append(IndexedMessage(uid, 1000 + uid, 20260101, 10, (), False, texts))
        store.put(state, chunk)
    print("pending" if store.text._pending is not None else "committed", flush=True)
    time.sleep(60)
while True:
    batch = []
    for uid in range(uid + 1, uid + 41):
        body = " ".join(rng.choices(words, k=6))
        texts = tuple(body if c == "body" else "" for c in TEXT_COLUMNS)
        batch.append(IndexedMessage(uid, 1000 + uid, 20260101, 10, (), False, texts))
    store.put(state, batch)
    store.update(state, flags={}, removed=rng.sample(store.uids("F"), 4))
"""


def run_writer(path: Path, mode: str) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), mode],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    return child


def assert_one_index(path: Path) -> bool:
    """Open the store (rebuilding the Tantivy index where it is behind) and check that it ranks what
    SQLite finds; whether it was behind before the open."""
    behind = TextIndex(text_dir(path))
    try:
        _, before = behind.searcher()
    finally:
        behind.close()
    store = TantivyStore(path)
    try:
        _, recorded = store.text.searcher()
        assert recorded == store._generation(store._db)
        for word in ("alpha", "beta", "gamma", "delta"):
            query = Contains("text", word)
            ranked = store.search(query, folders=["F"], order="relevance", limit=100_000, offset=0)
            plain_page = SqliteStore.search(
                store, query, folders=["F"], order="date", limit=100_000, offset=0
            )
            assert sorted(hit.uid for hit in ranked.hits) == sorted(hit.uid for hit in plain_page.hits)
            assert ranked.total == plain_page.total == len(ranked.hits)
            assert any(hit.rank != 0 for hit in ranked.hits)  # Tantivy's scores, not FTS5's listing
        return before != recorded
    finally:
        store.close()


def test_killed_between_the_two_commits_the_next_open_rebuilds_from_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "killed.sqlite3"
    child = run_writer(path, "pause")
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "between"  # SQLite has the batch, Tantivy does not
    assert killed_rows(child, path) == 40
    assert assert_one_index(path)  # it was behind: rebuilt


def test_killed_at_random_moments_while_writing_the_indexes_stay_one(tmp_path: Path) -> None:
    path = tmp_path / "killed.sqlite3"
    rng = random.Random(51)
    behind = 0
    for _ in range(5):
        child = run_writer(path, "write")
        time.sleep(rng.uniform(0.2, 1.5))
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        behind += assert_one_index(path)
    print(f"the Tantivy index was behind after {behind} of 5 kills")
    store = SqliteStore(path)
    assert len(store.uids("F")) > 40  # the writers got somewhere
    store.close()


def test_killed_with_a_batch_pending_the_next_open_rebuilds_from_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "killed.sqlite3"
    child = run_writer(path, "batch")
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "pending"  # SQLite has 750 rows, Tantivy's commit waits
    # What another process reads meanwhile: the generation before them, so its searches rank with FTS5.
    assert not tantivy_matches_sqlite(path)
    assert killed_rows(child, path) == 750
    assert assert_one_index(path)  # it was behind: rebuilt


def chunk(first: int, words: str) -> list[IndexedMessage]:
    """A chunk of a bulk build (250 rows, as the sync writes them): its Tantivy commit is batched."""
    return [message(uid, f"{words} {uid % 7}") for uid in range(first, first + 250)]


def assert_ranked_as_sqlite(store: TantivyStore, word: str) -> None:
    query = Contains("text", word)
    ranked = store.search(query, folders=["F"], order="relevance", limit=100_000, offset=0)
    plain_page = SqliteStore.search(store, query, folders=["F"], order="date", limit=100_000, offset=0)
    assert sorted(hit.uid for hit in ranked.hits) == sorted(hit.uid for hit in plain_page.hits)
    assert ranked.total == plain_page.total


def test_a_bulk_build_commits_tantivy_once_per_batch_and_its_searches_stay_exact(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.INFO, logger="mail_imap_mcp.index")
    monkeypatch.setattr(tantivy_text, "SETTLE_SECONDS", 600.0)
    monkeypatch.setattr(tantivy_text, "BATCH_SECONDS", 600.0)
    path = tmp_path / "bulk.sqlite3"
    commits = mock.patch.object(TextIndex, "_commit", autospec=True, side_effect=TextIndex._commit)
    store = TantivyStore(path)
    try:
        state = store.start_folder("F", 1)
        with commits as committed:
            for first in range(1, 2_001, 250):
                store.put(state, chunk(first, "apple"))
            assert committed.call_count == 0  # eight SQLite writes, no Tantivy commit yet
            _, recorded = store.text.committed()
            assert recorded != store._generation(store._db)  # another process ranks with FTS5 meanwhile
            caplog.clear()
            assert_ranked_as_sqlite(store, "apple")  # a search commits the batch first, then ranks
            assert committed.call_count == 1
            assert "FTS5" not in caplog.text
            assert store.text.committed()[1] == store._generation(store._db)
            store.put(state, chunk(3_001, "pear"))  # pending again
            other = SqliteStore(path)  # a write of another engine between two of the batch's writes
            other.put(other.start_folder("F", 1), [message(5_000, "pear plum")])
            other.close()
            store.put(state, chunk(4_001, "pear"))  # finds the index behind its file: rebuilt
            assert store.text.committed()[1] == store._generation(store._db)
            caplog.clear()
            assert_ranked_as_sqlite(store, "pear")
            assert_ranked_as_sqlite(store, "plum")
            assert "FTS5" not in caplog.text
            store.put(state, [message(6_000, "quince")])  # a small write commits at once
            assert store.text.committed()[1] == store._generation(store._db)
    finally:
        store.close()


def test_a_batch_is_committed_once_writes_settle_and_at_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tantivy_text, "SETTLE_SECONDS", 0.2)
    path = tmp_path / "settle.sqlite3"
    store = TantivyStore(path)
    try:
        state = store.start_folder("F", 1)
        store.put(state, chunk(1, "apple"))
        eventually(
            lambda: store.text.committed()[1] == store._generation(store._db),
            within=30,
            what="the batch committed",
        )
        monkeypatch.setattr(tantivy_text, "SETTLE_SECONDS", 600.0)
        store.put(state, chunk(251, "pear"))
        assert store.text.committed()[1] != store._generation(store._db)
    finally:
        store.close()  # commits the batch
    assert tantivy_matches_sqlite(path)


def test_a_batch_committed_by_another_thread_counts_as_pending_until_its_searcher_shows_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression (a full run of 2026-11-27, the top-20 property): a commit in another thread (the settle
    timer's) said nothing was pending before it reloaded the searcher. A searcher taken in between missed
    the batch, and a write in between found the index "behind its SQLite file" and rebuilt all of it."""
    caplog.set_level(logging.INFO, logger="mail_imap_mcp.index")
    monkeypatch.setattr(tantivy_text, "SETTLE_SECONDS", 600.0)
    monkeypatch.setattr(tantivy_text, "BATCH_SECONDS", 600.0)
    store = TantivyStore(tmp_path / "reload.sqlite3")
    index = store.text._index
    in_reload, go_on = threading.Event(), threading.Event()

    class HeldReload:
        """The index, its reload held until the test has looked."""

        def __getattr__(self, name: str) -> Any:
            return getattr(index, name)

        def reload(self) -> None:
            in_reload.set()
            go_on.wait(patient(30))
            index.reload()

    def commit() -> None:
        with store.text._guard:
            store.text._commit_pending()

    try:
        state = store.start_folder("F", 1)
        store.put(state, chunk(1, "apple"))  # a chunk of a bulk build: its batch is pending
        pending = store.text.expected()
        assert pending == store._generation(store._db) != store.text.committed()[1]
        monkeypatch.setattr(store.text, "_index", HeldReload())
        committer = threading.Thread(target=commit)
        committer.start()
        try:
            assert in_reload.wait(patient(30))
            assert store.text.expected() == pending  # written, not yet searchable: still pending
        finally:
            go_on.set()
            committer.join(patient(30))
        assert store.text.committed()[1] == pending
        caplog.clear()
        store.start_folder("G", 1)
        assert "built again" not in caplog.text
        assert_ranked_as_sqlite(store, "apple")
    finally:
        store.close()


def killed_rows(child: subprocess.Popen[str], path: Path) -> int:
    """Kill the writer ``child``; the rows its SQLite file ``path`` kept of folder ``F``."""
    os.killpg(child.pid, signal.SIGKILL)
    child.wait()
    store = SqliteStore(path)
    try:
        return len(store.uids("F"))
    finally:
        store.close()


def tantivy_matches_sqlite(path: Path) -> bool:
    """Whether the Tantivy index beside ``path`` records the generation its SQLite file is at, as another
    process opening them reads it."""
    text = TextIndex(text_dir(path))
    try:
        _, recorded = text.committed()
    finally:
        text.close()
    db = sqlite3.connect(path)
    try:
        return recorded == TantivyStore._generation(db)
    finally:
        db.close()


def message(uid: int, body: str) -> IndexedMessage:
    return IndexedMessage(uid, 2000 + uid, 20260101, 10, (), False, texts("", body))


def test_a_write_of_another_engine_is_ranked_by_fts5_until_the_next_write_rebuilds(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mail_imap_mcp.index")
    path = tmp_path / "shared.sqlite3"
    ranked = TantivyStore(path)
    try:
        state = ranked.start_folder("F", 1)
        ranked.put(state, [message(1, "kiwi apple"), message(2, "apple")])
        other = SqliteStore(path)  # the plain SQLite engine on the same file (the user switched back)
        other.put(other.start_folder("F", 1), [message(3, "kiwi kiwi")])
        other.close()
        caplog.clear()
        page = ranked.search(Contains("text", "kiwi"), folders=["F"], order="relevance", limit=10, offset=0)
        assert sorted(hit.uid for hit in page.hits) == [1, 3]  # found: FTS5 ranked it
        assert "FTS5 ranks this page" in caplog.text
        ranked.put(state, [message(4, "kiwi")])  # its own write finds Tantivy behind: rebuilt
        caplog.clear()
        page = ranked.search(Contains("text", "kiwi"), folders=["F"], order="relevance", limit=10, offset=0)
        assert sorted(hit.uid for hit in page.hits) == [1, 3, 4]
        assert page.hits[0].uid == 3  # twice the word in the shortest body: Tantivy's BM25 ranks it first
        assert "FTS5" not in caplog.text
    finally:
        ranked.close()


# -- through the MCP server --------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_ranked_page_through_mcp_comes_from_tantivy(
    dovecot: MatrixServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mail_imap_mcp.index")
    user = dovecot.new_user()
    dovecot.seed(
        user,
        "INBOX",
        [
            plain_message(f"note {n} {'quincewords' if n % 3 == 0 else ''}", f"body {n} says quincewords\r\n")
            for n in range(9)
        ]
        + [plain_message(f"other {n}", "nothing here\r\n") for n in range(4)],
    )
    async for mcp, _app, _config in indexed_client(dovecot, user, tmp_path, ("sqlite+tantivy", None)):
        caplog.clear()
        envelope = await mcp.call(
            "imap_search_messages",
            {"query": "quincewords", "sort": "relevance", "limit": 5, "fields": "full"},
        )
        data = envelope["data"]
        assert envelope["summary"].endswith("best match first"), envelope["summary"]
        assert data["total"] == 9
        subjects = [m["subject"] for m in data["messages"]]
        assert all("quincewords" in s for s in subjects[:3]) and not any(
            "quincewords" in s for s in subjects[3:]
        )
        rest = await mcp.ok(
            "imap_search_messages",
            {"query": "quincewords", "sort": "relevance", "limit": 5, "cursor": data["next_cursor"]},
        )
        assert len(rest["messages"]) == 4
        assert not {m["message_id"] for m in rest["messages"]} & {m["message_id"] for m in data["messages"]}
        assert "FTS5 ranks" not in caplog.text
    assert text_dir(index_file(tmp_path / "ix")).joinpath("meta.json").exists()

"""The vectors of the SQLite engines (SQLite, and sqlite+tantivy that keeps its rows in the same file), on
real index files without IMAP: kept per message with the model's name, removed with their message however
it goes (expunged, replaced, its folder dropped, its UIDVALIDITY changed), listed while missing, and
``nearest`` ranking a message by its best passage among those the query tree and the folders leave, by
the exact path and the two-pass one (the signatures in memory brought up to date as another store on the
file writes). An index made before vectors existed gains their tables and keeps its messages; the pass
behind the words gives every message vectors with the shipped model, and finds them by meaning."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

import mail_imap_mcp.index.engines.sqlite.vectors as sqlite_vectors
import mail_imap_mcp.meaning.vectors as meaning_vectors
from mail_imap_mcp.index.engines.sqlite.query import compile_fts5
from mail_imap_mcp.index.engines.sqlite.store import SqliteStore
from mail_imap_mcp.index.engines.tantivy.store import TantivyStore
from mail_imap_mcp.index.passages import passages
from mail_imap_mcp.index.store import TEXT_COLUMNS, IndexedMessage
from mail_imap_mcp.index.sync_vectors import MeaningStatus, fill_vectors
from mail_imap_mcp.index.vectors import VectorCounts
from mail_imap_mcp.meaning.model import ENGLISH, shipped_model
from mail_imap_mcp.query import Contains, HasFlag

DIMENSIONS = 128
STORES = {"sqlite": SqliteStore, "sqlite+tantivy": TantivyStore}


def message(uid: int, subject: str, body: str = "", flags: tuple[str, ...] = ()) -> IndexedMessage:
    texts = tuple(subject if c == "subject" else body if c == "body" else "" for c in TEXT_COLUMNS)
    return IndexedMessage(uid, 1_700_000_000 + uid * 60, 20231114, 1000, flags, False, texts)


def directions(count: int, seed: int = 0) -> npt.NDArray[np.float32]:
    rows = np.random.default_rng(seed).standard_normal((count, DIMENSIONS)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


AXES = directions(40)


def near(axis: int, noise: float = 0.2, seed: int = 1) -> npt.NDArray[np.float32]:
    """A unit vector near ``AXES[axis]`` (the axes are nearly orthogonal to each other)."""
    wobble = np.random.default_rng(seed).standard_normal(DIMENSIONS).astype(np.float32)
    row = AXES[axis] + noise * wobble / np.linalg.norm(wobble)
    return (row / np.linalg.norm(row)).astype(np.float32)


@pytest.fixture(params=sorted(STORES))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqliteStore]:
    opened = STORES[request.param](tmp_path / "index.sqlite3")
    yield opened
    opened.close()


@pytest.fixture(params=["exact", "two passes"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """``nearest`` ranks few candidates whole; the two passes are taken at any size with the bound at 0."""
    if request.param == "two passes":
        monkeypatch.setattr(meaning_vectors, "EXACT_MOST", 0)
    return str(request.param)


def filled(store: SqliteStore) -> None:
    """INBOX: 1-4 (3 seen), Archive: 1-2; message i of INBOX near axis i, of Archive near axis 10+i."""
    inbox = store.start_folder("INBOX", 7)
    store.put(
        inbox,
        [
            message(1, "invoice for the redesign"),
            message(2, "holiday photos"),
            message(3, "invoice reminder", flags=("\\Seen",)),
            message(4, "lunch"),
        ],
    )
    archive = store.start_folder("Archive", 9)
    store.put(archive, [message(1, "old invoice"), message(2, "old lunch")])
    store.put_vectors(
        "model-a",
        {
            **{("INBOX", uid): near(uid)[None, :] for uid in (1, 2, 3, 4)},
            ("Archive", 1): np.vstack([near(30), near(11)]),  # its second passage is the near one
            ("Archive", 2): near(12)[None, :],
        },
    )


def places(hits: list[object]) -> list[tuple[str, int]]:
    return [(hit.folder, hit.uid) for hit in hits]  # type: ignore[attr-defined]


def test_vectors_are_kept_with_their_model_and_listed_while_missing(store: SqliteStore) -> None:
    assert store.vector_model() is None
    filled(store)
    assert store.vector_model() == "model-a"
    counts = store.vector_counts("model-a")
    assert (counts.with_vectors, counts.indexed, counts.partial) == (6, 6, False)
    assert store.vectors_todo("model-a", 10) == []
    store.put(store.folders()["INBOX"], [message(5, "new mail")])
    todo = store.vectors_todo("model-a", 10)
    assert [(item.folder, item.uid, item.texts[0]) for item in todo] == [("INBOX", 5, "new mail")]
    assert store.vector_counts("model-a").partial
    # Another model's vectors are none of this one's: every message is listed, newest first.
    assert store.vector_counts("model-b").with_vectors == 0
    listed = (
        store.vectors_todo("model-b", 3) + store.vectors_todo("model-b", 3) + store.vectors_todo("model-b", 3)
    )
    assert [(item.folder, item.uid) for item in listed[:2]] == [("INBOX", 5), ("INBOX", 4)]
    assert len({(item.folder, item.uid) for item in listed}) == 7
    # Of the folders a search covers: Archive has every vector, INBOX lacks one of five.
    assert store.vector_counts("model-a", ["Archive"]) == VectorCounts(2, 2)
    assert store.vector_counts("model-a", ["INBOX"]) == VectorCounts(4, 5)
    assert store.vector_counts("model-b", ["Archive"]) == VectorCounts(0, 2)
    store.put_vectors("model-b", {("INBOX", 5): near(5)[None, :]})  # the first model's are dropped
    assert store.vector_model() == "model-b"
    assert store.vector_counts("model-b").with_vectors == 1
    assert store.vector_counts("model-a").with_vectors == 0


def test_a_message_without_passages_is_not_listed_again_nor_found(store: SqliteStore) -> None:
    store.put(store.start_folder("INBOX", 1), [message(1, ""), message(2, "x")])
    store.put_vectors(
        "m", {("INBOX", 1): np.zeros((0, DIMENSIONS), np.float32), ("INBOX", 2): near(2)[None, :]}
    )
    assert store.vectors_todo("m", 10) == []
    assert places(store.nearest(near(2), None, ["INBOX"], 10)) == [("INBOX", 2)]


def test_vectors_of_a_message_no_longer_indexed_are_skipped(store: SqliteStore) -> None:
    store.put(store.start_folder("INBOX", 1), [message(1, "x")])
    store.put_vectors("m", {("INBOX", 1): near(1)[None, :], ("INBOX", 9): near(9)[None, :]})
    assert store.vector_counts("m").with_vectors == 1


def test_nearest_ranks_a_message_by_its_best_passage(store: SqliteStore, path: str) -> None:
    filled(store)
    hits = store.nearest(near(1, seed=5), None, ["INBOX", "Archive"], 3)
    assert places(hits)[0] == ("INBOX", 1)
    assert 0 <= hits[0].rank < 0.1  # 1 - cosine
    assert hits[0].texts[0] == "invoice for the redesign"
    assert places(store.nearest(near(11, seed=5), None, ["INBOX", "Archive"], 1)) == [("Archive", 1)]
    ranks = [hit.rank for hit in store.nearest(near(2, seed=5), None, ["INBOX", "Archive"], 6)]
    assert ranks == sorted(ranks) and len(ranks) == 6


def test_nearest_keeps_to_the_folders_and_the_query(store: SqliteStore, path: str) -> None:
    filled(store)
    assert ("INBOX", 1) not in places(store.nearest(near(1), None, ["Archive"], 5))
    assert set(places(store.nearest(near(1), None, ["Archive"], 5))) == {("Archive", 1), ("Archive", 2)}
    invoices = store.nearest(near(4), Contains("subject", "invoice"), ["INBOX", "Archive"], 5)
    assert set(places(invoices)) == {("INBOX", 1), ("INBOX", 3), ("Archive", 1)}
    assert places(store.nearest(near(1), Contains("subject", "invoice"), ["Archive"], 5)) == [("Archive", 1)]
    unseen = store.nearest(near(3), HasFlag("seen", present=False), ["INBOX"], 5)
    assert set(places(unseen)) == {("INBOX", 1), ("INBOX", 2), ("INBOX", 4)}
    assert store.nearest(near(1), Contains("subject", "nowhere"), ["INBOX"], 5) == []
    assert store.nearest(near(1), None, ["Elsewhere"], 5) == []
    assert store.nearest(np.zeros(DIMENSIONS, np.float32), None, ["INBOX"], 5) == []
    assert store.nearest(near(1)[:64], None, ["INBOX"], 5) == []  # another model's size


def test_vectors_go_with_their_message_however_it_goes(store: SqliteStore, path: str) -> None:
    filled(store)
    everywhere = ["INBOX", "Archive"]
    assert ("INBOX", 1) in places(store.nearest(near(1), None, everywhere, 10))  # the copy in memory made
    store.update(store.folders()["INBOX"], flags={}, removed=[1])  # expunged
    assert ("INBOX", 1) not in places(store.nearest(near(1), None, everywhere, 10))
    store.put(store.folders()["INBOX"], [message(2, "holiday photos, again")])  # replaced: made again
    assert ("INBOX", 2) not in places(store.nearest(near(2), None, everywhere, 10))
    assert [(item.folder, item.uid) for item in store.vectors_todo("model-a", 10)] == [("INBOX", 2)]
    store.drop_folder("Archive")
    assert store.nearest(near(11), None, ["Archive"], 10) == []
    store.start_folder("INBOX", 8)  # UIDVALIDITY changed: its rows dropped
    assert store.nearest(near(3), None, everywhere, 10) == []
    assert store.vector_counts("model-a").with_vectors == 0
    gone = sqlite3.connect(store.path).execute("SELECT count(*) FROM vectors").fetchone()[0]
    assert gone == 0


@pytest.mark.parametrize("kept", [10_000, 1])
def test_another_store_on_the_file_sees_the_vectors_come_and_go(
    tmp_path: Path, path: str, kept: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its copy of the signatures follows the changes logged; where the log no longer holds the last it
    applied (kept short here), it reads every vector again."""
    monkeypatch.setattr(sqlite_vectors, "CHANGES_KEPT", kept)
    writer = SqliteStore(tmp_path / "index.sqlite3")
    reader = TantivyStore(tmp_path / "index.sqlite3")
    try:
        filled(writer)
        assert places(reader.nearest(near(4), None, ["INBOX"], 1)) == [("INBOX", 4)]
        writer.put(writer.folders()["INBOX"], [message(9, "fresh")])
        writer.put_vectors("model-a", {("INBOX", 9): near(20)[None, :]})
        writer.update(writer.folders()["INBOX"], flags={}, removed=[4])
        assert places(reader.nearest(near(20), None, ["INBOX"], 1)) == [("INBOX", 9)]
        assert ("INBOX", 4) not in places(reader.nearest(near(4), None, ["INBOX"], 10))
        writer.put_vectors("model-b", {("INBOX", 9): near(21)[None, :]})  # every vector made again
        assert places(reader.nearest(near(21), None, ["INBOX", "Archive"], 10)) == [("INBOX", 9)]
    finally:
        reader.close()
        writer.close()


def test_an_index_made_before_vectors_gains_them_and_keeps_its_messages(tmp_path: Path) -> None:
    file = tmp_path / "old.sqlite3"
    old = SqliteStore(file)
    old.put(old.start_folder("INBOX", 1), [message(1, "kept"), message(2, "kept too")])
    old.close()
    db = sqlite3.connect(file)
    for name in ("vectors_removed", "vectors_added", "vectors_with_message"):
        db.execute(f"DROP TRIGGER {name}")
    for name in ("vectors", "vector_changes", "vector_model"):
        db.execute(f"DROP TABLE {name}")
    db.commit()
    db.close()
    again = SqliteStore(file)
    try:
        assert again.count() == 2
        assert [item.uid for item in again.vectors_todo("m", 10)] == [2, 1]
        again.put_vectors("m", {("INBOX", 1): near(1)[None, :]})
        assert again.vector_counts("m").with_vectors == 1
    finally:
        again.close()


def test_vectors_of_an_earlier_layout_are_dropped_to_be_made_again(tmp_path: Path) -> None:
    file = tmp_path / "earlier.sqlite3"
    SqliteStore(file).close()
    db = sqlite3.connect(file)
    for name in ("vectors_removed", "vectors_added", "vectors_with_message"):
        db.execute(f"DROP TRIGGER {name}")
    db.execute("DROP TABLE vectors")
    db.execute("CREATE TABLE vectors(seq INTEGER PRIMARY KEY, message INTEGER UNIQUE, passages BLOB)")
    db.execute("CREATE TRIGGER vectors_removed AFTER DELETE ON vectors BEGIN SELECT 1; END")
    db.commit()
    db.close()
    again = SqliteStore(file)
    try:
        again.put(again.start_folder("INBOX", 1), [message(1, "x")])
        again.put_vectors("m", {("INBOX", 1): near(1)[None, :]})
        assert places(again.nearest(near(1), None, ["INBOX"], 1)) == [("INBOX", 1)]
        again.update(again.folders()["INBOX"], flags={}, removed=[1])
        assert again.vector_counts("m").with_vectors == 0
    finally:
        again.close()


def test_the_pass_gives_every_message_vectors_and_they_find_it_by_meaning(tmp_path: Path) -> None:
    store = TantivyStore(tmp_path / "index.sqlite3")
    try:
        mails = [
            ("Invoice 4411 - homepage overhaul", "Amount due for the new landing pages: 3,200 EUR."),
            ("Heating in the flat", "The radiator in the living room is cold again, the landlord says."),
            ("Team offsite", "We meet at the lake on Friday; bring walking shoes."),
            ("", ""),
        ] + [(f"Weekly digest {n}", "Stories you may have missed this week. " * 40) for n in range(300)]
        store.put(store.start_folder("INBOX", 1), [message(uid, s, b) for uid, (s, b) in enumerate(mails, 1)])
        model = shipped_model(ENGLISH)
        calls = iter(range(100))
        assert fill_vectors(store, model, lambda: next(calls) == 1, batch=50) == 50  # stopped: resumable
        assert store.vector_counts(model.name).with_vectors == 50
        assert fill_vectors(store, model, lambda: False, batch=50) == len(mails) - 50
        assert store.vector_counts(model.name).partial is False
        assert len(passages(message(9, "x", "word " * 400).texts)) == 3  # a long body: several passages
        question = model.embed(["the bill for the website redesign"])[0]
        assert places(store.nearest(question, None, ["INBOX"], 1)) == [("INBOX", 1)]
        question = model.embed(["what did the landlord say about the radiator"])[0]
        assert places(store.nearest(question, None, ["INBOX"], 1)) == [("INBOX", 2)]
    finally:
        store.close()


def test_how_far_the_vectors_are_is_said_in_a_few_words() -> None:
    assert MeaningStatus().words() == "starting"
    assert MeaningStatus(VectorCounts(3, 10)).words() == "being made: 3 of 10"
    assert MeaningStatus(VectorCounts(0, 5000)).words() == "being made: 0 of 5,000"
    assert MeaningStatus(VectorCounts(10, 10)).words() == "ready"
    assert MeaningStatus(unavailable="no model").words() == "unavailable: no model"


def test_a_broad_condition_is_asked_of_the_nearest_and_a_narrow_one_listed(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a condition on most messages (seen) ``nearest`` asks it of the nearest messages alone, with
    one on few (flagged) it lists them first; each answer keeps to the condition and finds the nearest."""
    monkeypatch.setattr(meaning_vectors, "EXACT_MOST", 0)
    monkeypatch.setattr(meaning_vectors, "RERANK", 10)
    monkeypatch.setattr(meaning_vectors, "WIDEN", 2)
    folder = store.start_folder("INBOX", 7)
    flags = {uid: ("\\Seen",) * (uid % 10 != 0) + ("\\Flagged",) * (uid % 50 == 0) for uid in range(1, 401)}
    store.put(folder, [message(uid, f"message {uid}", flags=flags[uid]) for uid in range(1, 401)])
    store.put_vectors("model-a", {("INBOX", uid): near(uid % 40, seed=uid)[None, :] for uid in range(1, 401)})
    listed: list[int] = []
    listing = sqlite_vectors.candidate_ids
    monkeypatch.setattr(sqlite_vectors, "candidate_ids", lambda *args: listed.append(1) or listing(*args))
    seen = store.nearest(near(3, seed=999), HasFlag("seen"), ["INBOX"], 5)
    assert listed == [] and all(flags[hit.uid][:1] == ("\\Seen",) for hit in seen)
    assert {hit.uid % 40 for hit in seen[:5]} == {3}  # 3, 43, ..., 393 are near axis 3 (all seen)
    flagged = store.nearest(near(10, seed=999), HasFlag("flagged"), ["INBOX"], 3)
    assert listed == [1] and [hit.uid for hit in flagged][:2] in ([50, 250], [250, 50])
    assert all(hit.uid % 50 == 0 for hit in flagged)


def test_a_condition_on_most_messages_is_listed_from_the_table_and_one_on_few_folders_by_their_index(
    store: SqliteStore, tmp_path: Path
) -> None:
    """SQLite, without statistics, took the folders' index for any folders and looked up each row: ten
    times slower than reading the table where they hold most messages (a flag none has, among a million:
    2.3 s). Each list keeps to its folders and its condition."""
    counts = {"INBOX": 40, "Archive": 40, "Drafts": 2}
    for name, count in counts.items():
        folder = store.start_folder(name, 7)
        store.put(
            folder, [message(uid, "note", flags=("\\Flagged",) * (uid % 2)) for uid in range(1, count + 1)]
        )
    db = sqlite3.connect(tmp_path / "index.sqlite3")
    folders = {
        str(name): (int(key), int(held))
        for key, name, held in db.execute("SELECT id, name, messages FROM folders")
    }
    statements: list[str] = []
    db.set_trace_callback(statements.append)
    for asked, every in (
        (["INBOX", "Archive", "Drafts"], True),
        (["INBOX", "Archive"], False),
        (["Drafts"], False),
    ):
        statements.clear()
        ids = sqlite_vectors.candidate_ids(
            db, compile_fts5(HasFlag("flagged")), [folders[name] for name in asked], every
        )
        flagged = {
            key
            for key, folder, uid in db.execute("SELECT id, folder, uid FROM messages")
            if uid % 2 and folder in {folders[name][0] for name in asked}
        }
        assert set(ids.tolist()) == flagged
        (listing,) = [statement for statement in statements if "group_concat" in statement]
        plan = " ".join(str(row[-1]) for row in db.execute("EXPLAIN QUERY PLAN " + listing))
        assert ("(folder=?)" in plan) is (asked == ["Drafts"]), (asked, plan)
    db.close()

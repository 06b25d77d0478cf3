"""The vectors' layout in the SQLite engines' index file (index/engines/sqlite/vector_layout.py): a new
file keeps six bits a component (192 bytes a passage of 256 dimensions); a file written by the version
before (int8 rows, 256 bytes a passage; made here with that version's own statements) opens without a
message or a vector made again, is searched on its int8 rows at once, and has them packed in the
background by the pass behind the words, a batch per transaction, resumable after a stop, with the counts
kept and the signatures in memory unchanged."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

import mail_imap_mcp.index.engines.sqlite.vector_layout as layout
import mail_imap_mcp.meaning.vectors as meaning_vectors
from mail_imap_mcp.index.engines.sqlite.store import SqliteStore
from mail_imap_mcp.index.engines.tantivy.store import TantivyStore
from mail_imap_mcp.index.store import TEXT_COLUMNS, IndexedMessage
from mail_imap_mcp.index.sync_vectors import fill_vectors
from mail_imap_mcp.meaning.model import ENGLISH, shipped_model
from mail_imap_mcp.meaning.vectors import quantised

STORES = {"sqlite": SqliteStore, "sqlite+tantivy": TantivyStore}
KEY_BASE = 1 << 47
#: The vectors' tables and triggers as the version before this layout made them (int8 rows).
INT8_SCHEMA = (
    "CREATE TABLE vector_model(name TEXT NOT NULL, dimensions INTEGER NOT NULL, epoch TEXT NOT NULL, "
    "messages INTEGER NOT NULL, bytes INTEGER NOT NULL)",
    "CREATE TABLE vectors(key INTEGER PRIMARY KEY, passages BLOB NOT NULL)",
    "CREATE TABLE vector_changes(seq INTEGER PRIMARY KEY AUTOINCREMENT, message INTEGER NOT NULL)",
    "CREATE TRIGGER vectors_with_message AFTER DELETE ON messages "
    f"BEGIN DELETE FROM vectors WHERE key = {KEY_BASE} - old.id; END",
    "CREATE TRIGGER vectors_added AFTER INSERT ON vectors BEGIN "
    f"INSERT INTO vector_changes(message) VALUES ({KEY_BASE} - new.key); "
    "UPDATE vector_model SET messages = messages + 1, bytes = bytes + length(new.passages); END",
    "CREATE TRIGGER vectors_removed AFTER DELETE ON vectors BEGIN "
    f"INSERT INTO vector_changes(message) VALUES ({KEY_BASE} - old.key); "
    "UPDATE vector_model SET messages = messages - 1, bytes = bytes - length(old.passages); END",
)
MESSAGES = 12


def message(uid: int) -> IndexedMessage:
    texts = tuple(f"message {uid}" if column == "subject" else "" for column in TEXT_COLUMNS)
    return IndexedMessage(uid, 1_700_000_000 + uid * 60, 20231114, 1000, (), False, texts)


def vectors_of(uid: int) -> npt.NDArray[np.float32]:
    """Message ``uid``'s passages (every third has two; message 12 none): its first near axis ``uid``."""
    rng = np.random.default_rng(uid)
    count = 0 if uid == MESSAGES else 2 if uid % 3 == 0 else 1
    rows = rng.standard_normal((count, 256)).astype(np.float32) * 0.3
    if count:
        rows[0, uid] += 3.0
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9)


def axis(uid: int) -> npt.NDArray[np.float32]:
    return np.eye(256, dtype=np.float32)[uid]


def int8_file(path: Path, model: str) -> None:
    """An index file of :data:`MESSAGES` messages with int8 vectors, as the version before wrote it."""
    store = SqliteStore(path)
    store.put(store.start_folder("INBOX", 1), [message(uid) for uid in range(1, MESSAGES + 1)])
    store.close()
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN")
    for trigger in ("vectors_with_message", "vectors_added", "vectors_removed"):
        db.execute(f"DROP TRIGGER {trigger}")
    for table in ("vectors", "vector_changes", "vector_model"):
        db.execute(f"DROP TABLE {table}")
    for statement in INT8_SCHEMA:
        db.execute(statement)
    db.execute("INSERT INTO vector_model VALUES (?, 256, 'epoch-1', 0, 0)", (model,))
    rows = db.execute("SELECT uid, id FROM messages ORDER BY id DESC").fetchall()
    db.executemany(
        "INSERT INTO vectors(key, passages) VALUES (?, ?)",
        [(KEY_BASE - row_id, quantised(vectors_of(uid)).tobytes()) for uid, row_id in rows],
    )
    db.execute("COMMIT")
    db.close()


def stored(path: Path) -> tuple[list[tuple[int | None, int]], tuple[int, int, int | None]]:
    """Each vector row's layout and length, and the model's messages, bytes and where packing goes on."""
    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT layout, length(passages) FROM vectors ORDER BY key").fetchall()
        counted = db.execute("SELECT messages, bytes, repack_after FROM vector_model").fetchone()
        return rows, counted
    finally:
        db.close()


def places(hits: list[object]) -> list[tuple[str, int]]:
    return [(hit.folder, hit.uid) for hit in hits]  # type: ignore[attr-defined]


@pytest.fixture(params=["exact", "two passes"])
def two_passes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.param == "two passes":
        monkeypatch.setattr(meaning_vectors, "EXACT_MOST", 0)


def test_a_new_file_keeps_192_bytes_a_passage_of_256_dimensions(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "index.sqlite3")
    try:
        store.put(store.start_folder("INBOX", 1), [message(uid) for uid in range(1, MESSAGES + 1)])
        store.put_vectors("m", {("INBOX", uid): vectors_of(uid) for uid in range(1, MESSAGES + 1)})
        assert places(store.nearest(axis(4), None, ["INBOX"], 1)) == [("INBOX", 4)]
    finally:
        store.close()
    rows, (messages, int8_bytes, repack_after) = stored(tmp_path / "index.sqlite3")
    passages = sum(len(vectors_of(uid)) for uid in range(1, MESSAGES + 1))
    assert {layout for layout, _ in rows} == {1}
    assert sum(length for _, length in rows) == 192 * passages
    assert (messages, int8_bytes, repack_after) == (MESSAGES, 256 * passages, None)


@pytest.mark.parametrize("engine", sorted(STORES))
def test_an_int8_file_is_searched_at_once_and_packed_in_the_background_resumably(
    tmp_path: Path, engine: str, two_passes: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "index.sqlite3"
    model = shipped_model(ENGLISH)
    int8_file(path, model.name)
    db = sqlite3.connect(path)
    int8_bytes, lengths = db.execute(
        "SELECT bytes, (SELECT sum(length(passages)) FROM vectors) FROM vector_model"
    ).fetchone()
    db.close()
    assert int8_bytes == lengths == 256 * sum(len(vectors_of(uid)) for uid in range(1, MESSAGES + 1))
    monkeypatch.setattr(layout, "REPACK_BATCH", 5)
    store = STORES[engine](path)
    try:
        assert store.count() == MESSAGES
        assert store.vector_counts(model.name).with_vectors == MESSAGES
        assert store.vectors_todo(model.name, 10) == []  # nothing made again
        found = {uid: places(store.nearest(axis(uid), None, ["INBOX"], 1)) for uid in range(1, MESSAGES)}
        assert found == {uid: [("INBOX", uid)] for uid in range(1, MESSAGES)}  # on the int8 rows
        assert store.repack_vectors() == 5  # stopped after a batch: resumed by the next store
    finally:
        store.close()
    rows, (_, counted_bytes, repack_after) = stored(path)
    assert [layout for layout, _ in rows].count(1) == 5 and repack_after is not None
    assert counted_bytes == int8_bytes
    store = STORES[engine](path)
    try:
        store.update(store.folders()["INBOX"], flags={}, removed=[1, 11])  # one packed, one still int8
        assert fill_vectors(store, model, lambda: False) == 0  # packs the rest, embeds nothing
        assert store.repack_vectors() == 0
        left = [uid for uid in range(2, MESSAGES) if uid != 11]
        found = {uid: places(store.nearest(axis(uid), None, ["INBOX"], 1)) for uid in left}
        assert found == {uid: [("INBOX", uid)] for uid in left}  # on the packed rows
    finally:
        store.close()
    rows, (messages, counted_bytes, repack_after) = stored(path)
    kept = [uid for uid in range(2, MESSAGES + 1) if uid != 11]
    assert {layout for layout, _ in rows} == {1} and repack_after is None
    assert sum(length for _, length in rows) == 192 * sum(len(vectors_of(uid)) for uid in kept)
    assert (messages, counted_bytes) == (len(kept), 256 * sum(len(vectors_of(uid)) for uid in kept))


def test_packing_keeps_each_passages_signature_so_a_copy_in_memory_needs_no_news(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy of the signatures made from the int8 rows is what a copy made afresh from the packed rows
    is: packing logs no change, and none is needed."""
    monkeypatch.setattr(meaning_vectors, "EXACT_MOST", 0)  # the first pass, on the copy in memory
    path = tmp_path / "index.sqlite3"
    model = shipped_model(ENGLISH)
    int8_file(path, model.name)
    reader, writer = SqliteStore(path), SqliteStore(path)
    try:
        reader.nearest(axis(2), None, ["INBOX"], 1)
        assert reader._held.signatures is not None
        before = reader._held.signatures
        logged = sqlite3.connect(path).execute("SELECT max(seq) FROM vector_changes").fetchone()
        while writer.repack_vectors():
            pass
        assert sqlite3.connect(path).execute("SELECT max(seq) FROM vector_changes").fetchone() == logged
        assert places(reader.nearest(axis(3), None, ["INBOX"], 1)) == [("INBOX", 3)]
        assert reader._held.signatures is before  # not read again
        fresh = SqliteStore(path)
        try:
            fresh.nearest(axis(2), None, ["INBOX"], 1)
            assert fresh._held.signatures is not None
            old_order = np.argsort(before._ids[: len(before)], kind="stable")
            new_order = np.argsort(fresh._held.signatures._ids[: len(before)], kind="stable")
            size = len(before)
            again = fresh._held.signatures._bits[:, :size][:, new_order]
            assert (before._bits[:, :size][:, old_order] == again).all()
        finally:
            fresh.close()
    finally:
        reader.close()
        writer.close()

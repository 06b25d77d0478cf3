"""Two processes writing one index file at once (a second server on the same account, or
`mail-imap-mcp index` beside a running server) leave it whole: SQLite's locking serialises their
transactions, and the terms in FTS5 match the rows."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

from mail_imap_mcp.index.location import open_index
from mail_imap_mcp.index.store import TEXT_COLUMNS, FolderState, IndexedMessage

BATCHES = 40
PER_BATCH = 25


def message(uid: int, writer: int) -> IndexedMessage:
    texts = tuple(
        f"writer{writer} word{uid}" if c == "body" else f"subject {uid}" if c == "subject" else ""
        for c in TEXT_COLUMNS
    )
    return IndexedMessage(uid, uid, 20260101, 100, ("\\Seen",) if uid % 2 else (), False, texts)


def write(path: str, writer: int) -> None:
    store = open_index(Path(path)).store
    state = store.start_folder("INBOX", 1)
    for batch in range(BATCHES):
        # Both writers store the same UIDs (one replaces the other's row) and some of their own.
        uids = [batch * PER_BATCH + i for i in range(1, PER_BATCH + 1)]
        store.put(FolderState("INBOX", 1, uidnext=uids[-1] + 1), [message(uid, writer) for uid in uids])
        store.put(
            FolderState(f"Own{writer}", 1, uidnext=uids[-1] + 1), [message(uid, writer) for uid in uids]
        )
        store.update(
            FolderState("INBOX", 1, uidnext=uids[-1] + 1), flags={uids[0]: ("\\Flagged",)}, removed=[uids[-1]]
        )
    store.close()
    del state


def test_two_processes_writing_at_once_leave_a_whole_index(tmp_path: Path) -> None:
    path = tmp_path / "ix" / "shared.sqlite3"
    open_index(path).store.close()
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=write, args=(str(path), number)) for number in (1, 2)]
    for process in writers:
        process.start()
    for process in writers:
        process.join(timeout=120)
        assert process.exitcode == 0
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.execute("INSERT INTO fts(fts) VALUES('integrity-check')")  # raises when terms and rows disagree
    per_folder = dict(
        db.execute(
            "SELECT f.name, count(*) FROM messages m JOIN folders f ON f.id = m.folder GROUP BY f.name"
        )
    )
    assert per_folder == {
        "INBOX": BATCHES * (PER_BATCH - 1),
        "Own1": BATCHES * PER_BATCH,
        "Own2": BATCHES * PER_BATCH,
    }
    rows = db.execute("SELECT count(*) FROM messages").fetchone()[0]
    matched = db.execute("SELECT count(*) FROM fts WHERE fts MATCH 'subject'").fetchone()[0]
    assert matched == rows
    db.close()

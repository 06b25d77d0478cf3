"""The rare-word rule of ``about`` on the SQLite engine: each word asked ``bounded`` (at most
``RARE_MESSAGES + 1`` of its matches, neither counted nor sorted) finds the same holders as a full count
would, and runs no count of a word's matches (a word in most of 100,000 messages cost as much as the page)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from mail_imap_mcp.index.engines.sqlite import ranking as sqlite_ranking
from mail_imap_mcp.index.engines.sqlite.location import open_index
from mail_imap_mcp.index.engines.sqlite.store import SqliteStore
from mail_imap_mcp.index.store import TEXT_COLUMNS, UNCOUNTED, HitPage, IndexedMessage
from mail_imap_mcp.query import EVERYTHING, Contains
from mail_imap_mcp.services.search_meaning_rare import RARE_MESSAGES, rare_word_holders

#: How many messages of the 20 hold each word: rare up to RARE_MESSAGES, one above it, most.
_HELD = {"wohnung": 2, "kiwi": RARE_MESSAGES, "fig": RARE_MESSAGES + 1, "plum": 17}


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    store = open_index(tmp_path / "index" / "a.sqlite3").store
    messages = []
    for uid in range(1, 21):
        body = " ".join(word for word, held in _HELD.items() if uid > 20 - held)
        texts = tuple(body if column == "body" else "" for column in TEXT_COLUMNS)
        messages.append(IndexedMessage(uid, uid, 20260101, 100, (), False, texts))
    store.put(store.start_folder("INBOX", 1), messages)
    return store


def _holders_by_count(store: SqliteStore, words: list[str]) -> set[tuple[str, int]]:
    """The holders as a full count decides them: every match of each word, its total counted."""
    holders: set[tuple[str, int]] = set()
    for word in words:
        page = store.search(Contains("text", word), folders=["INBOX"], order="uid", limit=100, offset=0)
        if page.total <= RARE_MESSAGES:
            holders.update((hit.folder, hit.uid) for hit in page.hits)
    return holders


def test_bounded_asks_find_the_holders_a_full_count_finds(store: SqliteStore) -> None:
    words = list(_HELD)
    found = HitPage([], UNCOUNTED, ["INBOX"])
    holders = rare_word_holders(store, EVERYTHING, ["INBOX"], words, found)
    assert holders == _holders_by_count(store, words)
    assert holders == {("INBOX", uid) for uid in range(20 - RARE_MESSAGES + 1, 21)}  # kiwi's, wohnung's


def test_no_word_s_matches_are_counted(store: SqliteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    statements: list[str] = []
    opened = sqlite_ranking.ReadConnections._open

    def traced(self: sqlite_ranking.ReadConnections) -> sqlite3.Connection:
        db = opened(self)
        db.set_trace_callback(statements.append)
        return db

    monkeypatch.setattr(sqlite_ranking.ReadConnections, "_open", traced)
    found = HitPage([], UNCOUNTED, ["INBOX"])
    rare_word_holders(store, EVERYTHING, ["INBOX"], ["plum", "fig"], found)
    matched = [sql for sql in statements if "MATCH" in sql]
    assert matched  # the words were asked of this connection
    assert not [sql for sql in matched if "count(" in sql.lower() or "ORDER BY" in sql]

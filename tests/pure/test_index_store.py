"""The SQLite store of the local index and where its file lives, without IMAP: what is kept, replaced,
removed and dropped, ranking by field weight, the file's permissions, and a corrupt or foreign file
moved aside."""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mail_imap_mcp.index.engines.sqlite import pages as sqlite_pages
from mail_imap_mcp.index.engines.sqlite import ranking as sqlite_ranking
from mail_imap_mcp.index.engines.sqlite.location import IndexPermissions, drop_index, index_path, open_index
from mail_imap_mcp.index.engines.sqlite.query import compile_fts5
from mail_imap_mcp.index.engines.sqlite.store import SqliteStore
from mail_imap_mcp.index.store import (
    COLUMN_WEIGHTS,
    TEXT_COLUMNS,
    UNCOUNTED,
    FolderState,
    HitPage,
    IndexedMessage,
    IndexUnusable,
    IndexWriteFailed,
)
from mail_imap_mcp.query import EVERYTHING, AllOf, AnyOf, Contains, HasFlag, Label
from tests.support.patience import patient


def message(
    uid: int, *, subject: str = "", body: str = "", quoted: str = "", flags: tuple[str, ...] = ()
) -> IndexedMessage:
    values = {"subject": subject, "body": body, "quoted": quoted}
    texts = tuple(values.get(column, "") for column in TEXT_COLUMNS)
    return IndexedMessage(uid, uid, 20260101, 100, flags, False, texts)


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    return open_index(tmp_path / "index" / "a.sqlite3").store


def uids(store: SqliteStore, query: object = EVERYTHING, folders: tuple[str, ...] = ("INBOX",)) -> list[int]:
    page = store.search(query, folders=list(folders), order="relevance", limit=50, offset=0)  # type: ignore[arg-type]
    return [hit.uid for hit in page.hits]


def test_a_message_stored_again_replaces_its_terms(store: SqliteStore) -> None:
    state = store.start_folder("INBOX", 7)
    store.put(state, [message(1, subject="old words")])
    store.put(state, [message(1, subject="new words")])
    assert uids(store, Contains("subject", "old")) == []
    assert uids(store, Contains("subject", "new")) == [1]
    assert store.count() == 1


def test_flags_change_and_removed_messages_leave_no_terms(store: SqliteStore) -> None:
    state = store.start_folder("INBOX", 7)
    store.put(state, [message(1, body="kiwi"), message(2, body="kiwi"), message(3, body="kiwi")])
    store.update(state, flags={1: ("\\Seen",)}, removed=[2])
    assert uids(store, Contains("body", "kiwi")) == [3, 1]
    assert uids(store, HasFlag("seen")) == [1]
    row = store._db.execute("SELECT count(*) FROM fts WHERE fts MATCH 'kiwi'").fetchone()
    assert row[0] == 2  # the contentless table was told the removed message's words


def test_a_new_uidvalidity_drops_the_folder_and_a_dropped_folder_leaves_no_row(store: SqliteStore) -> None:
    store.put(store.start_folder("INBOX", 7), [message(1, body="fig")])
    store.put(FolderState("Old", 3, uidnext=5), [message(4, body="fig")])
    assert store.start_folder("INBOX", 8) == FolderState("INBOX", 8)
    assert uids(store, Contains("body", "fig"), ("INBOX", "Old")) == [4]
    store.drop_folder("Old")
    assert store.count() == 0 and set(store.folders()) == {"INBOX"}
    assert store._db.execute("SELECT count(*) FROM fts WHERE fts MATCH 'fig'").fetchone()[0] == 0


def test_a_word_in_the_subject_ranks_above_the_same_word_quoted(store: SqliteStore) -> None:
    state = store.start_folder("INBOX", 1)
    store.put(
        state, [message(1, quoted="budget budget"), message(2, subject="budget"), message(3, body="budget")]
    )
    store.put(state, [message(uid, body="other words") for uid in range(4, 8)])  # budget: in 3 of 7
    assert uids(store, Contains("text", "budget")) == [2, 3, 1]
    by_date = store.search(Contains("text", "budget"), folders=["INBOX"], order="date", limit=2, offset=1)
    assert [hit.uid for hit in by_date.hits] == [2, 1] and by_date.total == 3


def test_the_file_and_directory_are_private_and_a_readable_one_is_refused(tmp_path: Path) -> None:
    path = index_path(tmp_path / "data", "work")
    open_index(path).store.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    os.chmod(path, 0o644)
    with pytest.raises(IndexPermissions, match="chmod go-rwx"):
        open_index(path)


@pytest.mark.parametrize("content", [b"not a database at all" * 50, b""])
def test_a_corrupt_or_foreign_file_is_moved_aside_and_built_again(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "i" / "a.sqlite3"
    path.parent.mkdir(mode=0o700)
    if content:
        path.write_bytes(content)
    else:  # another application's database
        other = sqlite3.connect(path)
        other.execute("CREATE TABLE notes(x)")
        other.commit()
        other.close()
    os.chmod(path, 0o600)
    opened = open_index(path)
    assert opened.warning is not None and "moved to" in opened.warning
    assert opened.store.count() == 0
    assert [p.name for p in path.parent.iterdir() if ".unusable-" in p.name]
    opened.store.close()
    removed = drop_index(path)
    assert path in removed and not path.exists()


# 1 and 2: before the column of attachment text; 5 and 6: before the arrival time (built again)
@pytest.mark.parametrize("version", [1, 2, 5, 6, 99])
def test_a_file_of_another_schema_version_is_unusable(tmp_path: Path, version: int) -> None:
    path = tmp_path / "a.sqlite3"
    SqliteStore(path).close()
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {version}")
    db.close()
    with pytest.raises(IndexUnusable, match=f"schema {version},"):
        SqliteStore(path)


def test_arrival_order_is_internaldate_then_the_folders_place_then_uid(store: SqliteStore) -> None:
    """The server's order of a search of several mailboxes (docs/search.md): INTERNALDATE newest first,
    then the mailbox's place in the searched list, then UID ascending; one mailbox by UID, newest first.
    Sent dates (here the reverse of arrival) play no part."""
    inbox, archive = store.start_folder("INBOX", 1), store.start_folder("Archive", 1)
    arrivals = {
        ("INBOX", 1): 300,
        ("INBOX", 2): 200,
        ("INBOX", 3): 200,
        ("Archive", 1): 200,
        ("Archive", 9): 400,
    }
    for state in (inbox, archive):
        store.put(
            state,
            [
                replace(message(uid, body="kiwi"), sent=1000 - arrival, arrival=arrival)
                for (folder, uid), arrival in arrivals.items()
                if folder == state.name
            ],
        )
    for query in (Contains("body", "kiwi"), EVERYTHING):
        compiled = query
        page = store.search(compiled, folders=["Archive", "INBOX"], order="arrival", limit=3, offset=1)
        assert [(hit.folder, hit.uid) for hit in page.hits] == [("INBOX", 1), ("Archive", 1), ("INBOX", 2)]
        rest = store.search(compiled, folders=["Archive", "INBOX"], order="arrival", limit=9, offset=4)
        assert [(hit.folder, hit.uid) for hit in rest.hits] == [("INBOX", 3)]
        one = store.search(compiled, folders=["INBOX"], order="uid", limit=9, offset=0)
        assert [hit.uid for hit in one.hits] == [3, 2, 1]


def test_a_full_disk_is_a_write_failure_and_leaves_the_last_batch(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "full.sqlite3")
    state = store.start_folder("INBOX", 1)
    store.put(state, [message(1, body="kept")])
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    store._db.execute(f"PRAGMA max_page_count = {pages + 2}")  # SQLite's own "database or disk is full"
    with pytest.raises(IndexWriteFailed, match="full"):
        store.put(state, [message(uid, body="x " * 5000 + str(uid)) for uid in range(2, 200)])
    assert uids(store, Contains("body", "kept")) == [1]
    assert store.count() == 1


def test_row_ids_follow_sent_dates_and_every_match_is_ranked(store: SqliteStore) -> None:
    state = store.start_folder("INBOX", 1)
    # Sent out of UID order, two in the same second; the oldest has the word in its subject (best rank).
    sent = {1: 500, 2: 100, 3: 300, 4: 300, 5: 400}
    messages = [
        IndexedMessage(
            uid,
            sent[uid],
            20260101,
            1,
            (),
            False,
            tuple(
                ("fig" if uid == 2 else "") if c == "subject" else "fig" if c == "body" else ""
                for c in TEXT_COLUMNS
            ),
        )
        for uid in sent
    ]
    store.put(state, messages)
    by_id = [row[0] for row in store._db.execute("SELECT uid FROM messages ORDER BY id")]
    assert by_id in ([2, 3, 4, 5, 1], [2, 4, 3, 5, 1])
    store.put(state, [message(uid, body="plum") for uid in range(10, 16)])  # fig: in 5 of 11, ranked
    query = Contains("text", "fig")
    page = store.search(query, folders=["INBOX"], order="relevance", limit=5, offset=0)
    assert page.total == 5 and page.hits[0].uid == 2  # the oldest match ranks first: nothing is left out
    assert not page.unweighted
    assert [hit.uid for hit in page.hits][1:] in ([1, 5, 4, 3], [1, 5, 3, 4])  # equal ranks: newest first


def test_a_word_in_more_than_half_the_messages_weighs_nothing_and_its_matches_come_newest_first(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("mail_imap_mcp.index.engines.sqlite.ranking.UNWEIGHTED_MATCHES", 4)
    state = store.start_folder("INBOX", 1)
    store.put(
        state, [message(1, subject="fig fig", body="fig"), *(message(uid, body="fig") for uid in range(2, 7))]
    )
    store.put(state, [message(uid, body="plum") for uid in range(7, 10)])
    common = store.search(Contains("text", "fig"), folders=["INBOX"], order="relevance", limit=3, offset=0)
    assert common.unweighted and common.total == 6
    assert [hit.uid for hit in common.hits] == [6, 5, 4]  # newest first, though 1 says it most
    either = store.search(
        AnyOf((Contains("text", "fig"), Contains("text", "kiwi"))),
        folders=["INBOX"],
        order="relevance",
        limit=3,
        offset=0,
    )
    assert not either.unweighted and either.hits[0].uid == 1  # an OR is ranked: its words may be rare
    rare = store.search(Contains("text", "plum"), folders=["INBOX"], order="relevance", limit=3, offset=0)
    assert not rare.unweighted and rare.total == 3


def test_regression_an_or_of_words_each_in_more_than_half_the_messages_scores_no_match(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``about``'s words are an OR: of common words, every match was scored for an order BM25 calls
    meaningless (122.7 ms of CPU at 100,000 messages, 7.7x a newest page; issue 89). Its words are counted
    each, and only an OR holding a word of fewer messages is scored."""
    monkeypatch.setattr("mail_imap_mcp.index.engines.sqlite.ranking.UNWEIGHTED_MATCHES", 4)
    scored: list[int] = []
    rank = sqlite_ranking.Ranker.rank

    def counted_rank(self: sqlite_ranking.Ranker, *args: Any, **kwargs: Any) -> list[tuple[float, int]]:
        scored.append(kwargs["matches"])
        return rank(self, *args, **kwargs)

    monkeypatch.setattr(sqlite_ranking.Ranker, "rank", counted_rank)
    state = store.start_folder("INBOX", 1)
    store.put(state, [message(uid, subject="fig fig" if uid == 1 else "", body="fig") for uid in range(1, 7)])
    store.put(state, [message(uid, body="plum fig" if uid < 9 else "plum kiwi") for uid in range(7, 11)])

    def either(*words: str, uncounted: bool = False) -> HitPage:
        tree = AnyOf(tuple(Contains("text", word) for word in words))
        return store.search(
            tree, folders=["INBOX"], order="relevance", limit=3, offset=0, uncounted=uncounted
        )

    common = either("fig", "plum")  # fig in 8 of 10, plum in 4: not both in more than half
    assert not common.unweighted and common.hits[0].uid in (7, 8, 9, 10) and scored == [10]
    scored.clear()
    common = either("fig", "fig")  # one word, twice: the same as fig alone
    assert common.unweighted and [hit.uid for hit in common.hits] == [8, 7, 6] and scored == []
    store.put(state, [message(uid, body="plum fig") for uid in range(11, 15)])  # plum: 8 of 14, fig 12
    common = either("fig", "plum")
    assert common.unweighted and common.total == 14 and scored == []
    assert [hit.uid for hit in common.hits] == [14, 13, 12]  # newest first, though 1 says fig most
    rare = either("fig", "kiwi")  # kiwi in 2: its IDF counts, every match is scored
    assert not rare.unweighted and rare.hits[0].uid in (9, 10) and scored == [14]
    # Where the caller reads no total (about's words), such an OR is not counted either.
    monkeypatch.setattr("mail_imap_mcp.index.engines.sqlite.ranking.UNWEIGHTED_MATCHES", 7)
    uncounted = either("fig", "plum", uncounted=True)
    assert uncounted.total == UNCOUNTED and uncounted.unweighted
    assert [hit.uid for hit in uncounted.hits] == [14, 13, 12] and scored == [14]
    rare = either("fig", "kiwi", uncounted=True)
    assert rare.total == 14 and not rare.unweighted and scored == [14, 14]
    # Where other folders could hold most of a word's matches, its matches here are counted.
    store.put(store.start_folder("Archive", 1), [message(uid, body="fig plum") for uid in range(1, 5)])
    counted = either("fig", "plum", uncounted=True)
    assert counted.total == 14 and counted.unweighted


def test_a_search_of_some_folders_matches_their_place_and_no_word_matches_a_place(store: SqliteStore) -> None:
    inbox = store.start_folder("INBOX", 1)
    store.put(inbox, [message(1, body="fig"), message(2, body="kiwi")])
    store.put(store.start_folder("Archive", 1), [message(3, body="fig"), message(4, body="fig")])
    store.put(store.start_folder("Sent", 1), [message(5, body="fig f1 f2 f3")])
    # The searched folders hold fewer messages (INBOX) or more (INBOX and Archive) than the others: the
    # MATCH names them, or excludes the others; the answer is the same either way.
    assert uids(store, Contains("text", "fig")) == [1]
    assert uids(store, Contains("text", "fig"), ("INBOX", "Archive")) == [4, 3, 1]
    assert uids(store, Contains("text", "fig"), ("Nowhere",)) == []
    # A folder is the word "f<id>" of the place column; a user's "f1" finds the message that says it.
    for word in ("f1", "f2", "f3"):
        assert uids(store, Contains("text", word), ("INBOX", "Archive", "Sent")) == [5]
    assert uids(store, AllOf((Contains("text", "fig"), HasFlag("seen", False))), ("Archive",)) == [4, 3]


_WORDS = ("fig", "kiwi", "plum", "lime")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    bodies=st.lists(
        st.tuples(st.integers(0, 40), st.lists(st.sampled_from(_WORDS), min_size=1, max_size=8)),
        min_size=1,
        max_size=60,
    ),
    shards=st.integers(1, 4),
    word=st.sampled_from(_WORDS),
    two_folders=st.booleans(),
    offset=st.integers(0, 30),
    limit=st.integers(1, 15),
    unweighted_from=st.sampled_from((1, 10**9)),
)
def test_ranking_in_shards_gives_the_page_one_order_by_over_every_match_gives(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    bodies: list[tuple[int, list[str]]],
    shards: int,
    word: str,
    two_folders: bool,
    offset: int,
    limit: int,
    unweighted_from: int,
) -> None:
    monkeypatch.setattr("mail_imap_mcp.index.engines.sqlite.ranking.MESSAGES_PER_SHARD", 1)
    monkeypatch.setattr("mail_imap_mcp.index.engines.sqlite.ranking.SHARD_MATCHES", 1)
    monkeypatch.setattr("mail_imap_mcp.index.engines.sqlite.ranking.UNWEIGHTED_MATCHES", unweighted_from)
    store = SqliteStore(tmp_path_factory.mktemp("shards") / "a.sqlite3", shards=shards)
    folders = ["INBOX", "Archive"]
    for number, (sent, words) in enumerate(bodies, 1):
        texts = tuple(" ".join(words) if c == "body" else "" for c in TEXT_COLUMNS)
        folder = folders[number % 2]
        store.put(
            store.start_folder(folder, 1), [IndexedMessage(number, sent, 20260101, 1, (), False, texts)]
        )
    searched = folders if two_folders else ["INBOX"]
    query = Contains("text", word)
    page = store.search(query, folders=searched, order="relevance", limit=limit, offset=offset)
    expected = store._db.execute(
        f"SELECT m.uid, bm25(fts, {', '.join(map(str, COLUMN_WEIGHTS))}) AS rank FROM fts JOIN messages m ON m.id = fts.rowid "
        "JOIN folders f ON f.id = m.folder WHERE fts MATCH ? "
        f"AND f.name IN ({', '.join('?' for _ in searched)}) ORDER BY rank, m.id DESC",
        (compile_fts5(query).match, *searched),
    ).fetchall()
    assert page.total == len(expected)
    if len(expected) >= unweighted_from and len(expected) * 2 > len(bodies):  # BM25 weighs it at nothing
        expected = store._db.execute(
            "SELECT m.uid FROM fts JOIN messages m ON m.id = fts.rowid JOIN folders f ON f.id = m.folder "
            f"WHERE fts MATCH ? AND f.name IN ({', '.join('?' for _ in searched)}) ORDER BY m.id DESC",
            (compile_fts5(query).match, *searched),
        ).fetchall()
        assert page.unweighted == bool(page.hits)
    assert [hit.uid for hit in page.hits] == [row[0] for row in expected[offset : offset + limit]]
    store.close()


def test_a_message_with_a_global_id_has_one_row_and_label_answers_from_its_labels(store: SqliteStore) -> None:
    labelled = replace(message(1, subject="fig"), global_id=77, labels=("\\Inbox", "My Project"))
    store.put(store.start_folder("[Gmail]/All Mail", 7), [labelled])
    # The same message (X-GM-MSGID 77) stored under Trash replaces its All Mail row: one row, never two.
    store.put(store.start_folder("[Gmail]/Trash", 9), [replace(labelled, uid=5, labels=())])
    assert store.count() == 1
    assert uids(store, Contains("subject", "fig"), ("[Gmail]/All Mail", "[Gmail]/Trash")) == [5]
    store.put(store.start_folder("[Gmail]/All Mail", 7), [labelled])
    every = ("[Gmail]/All Mail",)
    assert uids(store, Label("my-project"), every) == [1] == uids(store, Label("inbox"), every)
    assert uids(store, Label("\\Inbox"), every) == [1] and uids(store, Label("project"), every) == []
    state = store.folders()["[Gmail]/All Mail"]
    store.update(state, flags={}, removed=(), labels={1: ("Travel",)})
    assert uids(store, Label("travel"), every) == [1] and uids(store, Label("inbox"), every) == []
    page = store.search(Label("travel"), folders=list(every), order="date", limit=5, offset=0)
    assert page.hits[0].labels == ("Travel",)


def test_regression_pages_begun_at_once_never_wait_behind_each_others_shards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One pool ran pages and their shards: pages that filled it waited for shards queued behind them.
    monkeypatch.setattr("mail_imap_mcp.index.engines.sqlite.ranking.MESSAGES_PER_SHARD", 1)
    monkeypatch.setattr("mail_imap_mcp.index.engines.sqlite.ranking.SHARD_MATCHES", 1)
    store = SqliteStore(tmp_path / "pages.sqlite3", shards=2)
    store.put(store.start_folder("INBOX", 1), [message(uid, body=f"fig {uid}") for uid in range(1, 41)])
    query = Contains("text", "fig")
    pending = [
        store.start_search(query, folders=["INBOX"], order="relevance", limit=5, offset=0) for _ in range(8)
    ]
    totals: list[int] = []
    reader = threading.Thread(target=lambda: totals.extend(p.result().total for p in pending), daemon=True)
    reader.start()
    reader.join(patient(20))
    assert totals == [40] * 8
    store.close()


def test_a_search_dropped_before_it_is_taken_is_interrupted_and_the_store_closes(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "dropped.sqlite3")
    store.put(store.start_folder("INBOX", 1), [message(uid, body="fig") for uid in range(1, 21)])
    query = Contains("text", "fig")
    dropped = [
        store.start_search(query, folders=["INBOX"], order="relevance", limit=5, offset=0) for _ in range(6)
    ]
    for search in dropped:
        search.cancel()
    kept = store.search(query, folders=["INBOX"], order="relevance", limit=5, offset=0)
    assert kept.total == 20
    closing = threading.Thread(target=store.close, daemon=True)
    closing.start()
    closing.join(patient(10))
    assert not closing.is_alive()


def test_a_file_that_records_no_account_is_adopted_once_and_another_accounts_is_moved_aside(
    tmp_path: Path,
) -> None:
    """A file made before the index recorded its account (no ``owner`` table) keeps its rows and records
    the first account that opens it; an account of the same id on another login then finds it another
    account's: moved aside whole with a warning, its own built anew, never the rows rebuilt in place."""
    path = tmp_path / "i" / "work.sqlite3"
    store = open_index(path).store
    store.put(store.start_folder("INBOX", 1), [message(1, body="kept rows")])
    store.close()
    db = sqlite3.connect(path)
    db.execute("DROP TABLE owner")  # as every file made before the record
    db.close()
    adopted = open_index(path, "identity of the first")
    assert adopted.warning is None and adopted.store.count() == 1
    adopted.store.close()
    again = open_index(path, "identity of the first")
    assert again.warning is None and again.store.count() == 1
    again.store.close()
    other = open_index(path, "identity of another")
    assert other.warning is not None and "another account of that name" in other.warning
    assert other.store.count() == 0
    other.store.close()
    [aside] = [p for p in path.parent.iterdir() if p.name.startswith("work.sqlite3.unusable-")]
    kept = SqliteStore(aside, identity="identity of the first")
    assert kept.count() == 1
    kept.close()


@pytest.mark.parametrize("ranked_after", [False, True])
def test_a_first_page_keeps_its_matches_places_and_a_later_page_lists_those_still_matching(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch, ranked_after: bool
) -> None:
    monkeypatch.setattr(sqlite_pages, "RANK_KEPT_AFTER", ranked_after)
    state = store.start_folder("INBOX", 1)
    store.put(state, [message(uid, body="kiwi " * uid) for uid in range(1, 6)])
    kiwi = Contains("body", "kiwi")
    whole = store.search(kiwi, folders=["INBOX"], order="relevance", limit=50, offset=0)
    first = store.search(kiwi, folders=["INBOX"], order="relevance", limit=2, offset=0, keep=4)
    assert first.places is not None
    places = first.places.result(timeout=patient(10))  # found after the page was handed over, on its snapshot
    assert [place[:2] for place in places] == [("INBOX", hit.uid) for hit in whole.hits[:4]]
    assert [place[:2] for place in places[:2]] == [("INBOX", hit.uid) for hit in first.hits]
    store.update(state, flags={}, removed=[places[2][1]])
    store.put(state, [message(9, body="kiwi " * 50)])  # ranks first now: not in the kept places
    later = store.search(kiwi, folders=["INBOX"], order="relevance", limit=2, offset=0, places=places[2:])
    assert [("INBOX", hit.uid) for hit in later.hits] == [place[:2] for place in places[3:]]

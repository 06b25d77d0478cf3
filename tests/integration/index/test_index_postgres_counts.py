"""Kept counts of the index in PostgreSQL (mail_imap_mcp/index/engines/postgresql/counts.py), against a throwaway
cluster: a page's total read from the counts the triggers keep equals the matches of a model of the
messages after any sequence of writes (new messages, the same UIDs stored again, expunges, a message
shown in another folder, a folder dropped or indexed again under a new UIDVALIDITY), for every folder
scope; rows written as another release would (plain SQL that knows nothing of the counts) keep them
exact too; and a word in most messages, once kept, is listed newest first with its exact total."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mail_imap_mcp.config import AccountConfig, IndexSettings
from mail_imap_mcp.credentials.secrets import index_password
from mail_imap_mcp.index.engines.postgresql.engine import PostgresEngine
from mail_imap_mcp.index.engines.postgresql.schema import SCHEMA_VERSION
from mail_imap_mcp.index.engines.postgresql.store import PostgresStore
from mail_imap_mcp.index.store import TEXT_COLUMNS, IndexedMessage
from mail_imap_mcp.query.tree import AllOf, AnyOf, Contains, Query
from tests.support.servers.postgres import PostgresServer, index_table
from tests.support.shared.index_fts5 import matches

WORDS = ("fig", "kiwi", "plum")
FOLDERS = ("INBOX", "Archive")
ACCOUNT = AccountConfig.model_validate({"host": "imap.example.org", "username": "u", "password_env": "X"})
#: One text test each (their counts can be kept); the last is not (its count is never kept).
QUERIES: tuple[Query, ...] = (
    Contains("text", "fig"),
    Contains("subject", "kiwi"),
    AnyOf((Contains("text", "plum"), Contains("subject", "fig"))),
    AllOf((Contains("text", "fig"), Contains("text", "kiwi"))),
)


@pytest.fixture(scope="module")
def engine(postgres: PostgresServer) -> Iterator[PostgresEngine]:
    index = IndexSettings.model_validate(index_table(postgres))
    opened = PostgresEngine(index, index_password(index))
    yield opened
    opened.close()


_schemas = itertools.count()


def message(uid: int, subject: str, body: str, global_id: int | None = None) -> IndexedMessage:
    texts = tuple(subject if c == "subject" else body if c == "body" else "" for c in TEXT_COLUMNS)
    return IndexedMessage(uid, uid, 20260101, 10, (), False, texts, global_id=global_id)


words = st.lists(st.sampled_from(WORDS), max_size=3).map(" ".join)
writes = st.lists(
    st.one_of(
        st.tuples(
            st.just("put"),
            st.sampled_from(FOLDERS),
            st.lists(st.tuples(st.integers(1, 8), words, words, st.none() | st.integers(1, 3)), max_size=5),
        ),
        st.tuples(st.just("expunge"), st.sampled_from(FOLDERS), st.lists(st.integers(1, 8), max_size=4)),
        st.tuples(st.just("drop"), st.sampled_from(FOLDERS), st.none()),
        st.tuples(st.just("uidvalidity"), st.sampled_from(FOLDERS), st.none()),
    ),
    max_size=10,
)


def apply(
    store: PostgresStore, model: dict[str, dict[int, IndexedMessage]], write: tuple[str, str, object]
) -> None:
    kind, folder, what = write
    known = store.folders().get(folder)
    if kind == "drop":
        store.drop_folder(folder)
        model.pop(folder, None)
        return
    if kind == "uidvalidity":
        store.start_folder(folder, (known.uidvalidity if known else 1) + 1)
        model[folder] = {}
        return
    state = known or store.start_folder(folder, 1)
    held = model.setdefault(folder, {})
    if kind == "expunge":
        assert isinstance(what, list)
        store.update(state, flags={}, removed=what)
        for uid in what:
            held.pop(uid, None)
        return
    assert isinstance(what, list)
    chunk = {uid: message(uid, subject, body, gid) for uid, subject, body, gid in what}
    store.put(replace(state, uidnext=max([state.uidnext, *(u + 1 for u in chunk)])), list(chunk.values()))
    for sent in chunk.values():
        if sent.global_id is not None:  # one row per global id: the others go
            for other in model.values():
                for uid in [u for u, m in other.items() if m.global_id == sent.global_id]:
                    del other[uid]
    held.update(chunk)


def expected(model: dict[str, dict[int, IndexedMessage]], query: Query, folders: tuple[str, ...]) -> int:
    return sum(1 for f in folders for m in model.get(f, {}).values() if matches(query, m))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=writes, after=writes)
def test_kept_counts_equal_the_matches_after_any_writes(
    engine: PostgresEngine,
    monkeypatch: pytest.MonkeyPatch,
    before: list[tuple[str, str, object]],
    after: list[tuple[str, str, object]],
) -> None:
    monkeypatch.setattr("mail_imap_mcp.index.engines.postgresql.counts.COUNTED_FROM", 0)
    store = engine.location(f"c{next(_schemas)}", ACCOUNT).open().store
    assert isinstance(store, PostgresStore)
    model: dict[str, dict[int, IndexedMessage]] = {}
    try:
        for write in before:
            apply(store, model, write)
        scopes = [FOLDERS, FOLDERS[:1], FOLDERS[1:]]
        for query in QUERIES:  # counted over the rows, and kept from then on
            page = store.search(query, folders=list(FOLDERS), order="date", limit=1, offset=0)
            assert page.total == expected(model, query, FOLDERS), query
        with store.pool.connection() as conn:
            kept = conn.execute(f"SELECT count(*) FROM {store.schema}.counted").fetchone()
        assert kept == (3,)  # every query that is one text test alone, not the AND of two
        for write in after:
            apply(store, model, write)
        for query, scope, order in itertools.product(QUERIES, scopes, ("relevance", "date")):
            page = store.search(query, folders=list(scope), order=order, limit=3, offset=0)
            assert page.total == expected(model, query, scope), (query, scope, order)
    finally:
        store.close()


def test_rows_written_without_the_counts_keep_them_exact_and_a_common_word_is_listed_newest_first(
    engine: PostgresEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older release writes rows knowing nothing of the counts (plain SQL here): the triggers count
    them. A word in most messages, its count kept, is listed newest first with its exact total, read
    from the counts (the rows' own count is not asked again: its statement would fail here)."""
    monkeypatch.setattr("mail_imap_mcp.index.engines.postgresql.counts.COUNTED_FROM", 3)
    monkeypatch.setattr("mail_imap_mcp.index.engines.postgresql.pages.UNWEIGHTED_MATCHES", 3)
    store = engine.location(f"c{next(_schemas)}", ACCOUNT).open().store
    assert isinstance(store, PostgresStore)
    try:
        inbox = store.start_folder("INBOX", 1)
        store.put(inbox, [message(uid, "", "fig" if uid < 6 else "plum") for uid in range(1, 7)])
        first = store.search(Contains("text", "fig"), folders=["INBOX"], order="relevance", limit=2, offset=0)
        assert first.total == 5 and first.unweighted and [h.uid for h in first.hits] == [5, 4]
        with store.pool.connection() as conn:  # as an older release writes: a copy of a row, a delete
            conn.execute(
                f"INSERT INTO {store.schema}.messages(folder, uid, sent, arrival_day, size, flag_bits, "
                "keywords, has_attachment, filenames, doc, labels, label_keys, attachments_read, arrival, "
                f"terms) SELECT folder, 9, 9, arrival_day, size, flag_bits, keywords, has_attachment, "
                f"filenames, doc, labels, label_keys, attachments_read, arrival, terms FROM "
                f"{store.schema}.messages WHERE uid = 1"
            )
            conn.execute(f"DELETE FROM {store.schema}.messages WHERE uid IN (2, 6)")
            conn.execute(f"UPDATE {store.schema}.messages SET terms = ''::tsvector WHERE uid = 3")
            conn.execute(f"UPDATE {store.schema}.messages SET flag_bits = 1 WHERE uid = 4")
            kept = conn.execute(f"SELECT sum(messages) FROM {store.schema}.counts").fetchone()
        assert kept == (4,)  # the rows 1, 4, 5 and 9 say fig
        later = store.search(Contains("text", "fig"), folders=["INBOX"], order="relevance", limit=9, offset=0)
        assert later.total == 4 and later.unweighted and [h.uid for h in later.hits] == [9, 5, 4, 1]
    finally:
        store.close()


def test_a_schema_of_version_1_is_brought_up_to_kept_counts_when_opened(
    engine: PostgresEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("mail_imap_mcp.index.engines.postgresql.counts.COUNTED_FROM", 0)
    location = engine.location(f"c{next(_schemas)}", ACCOUNT)
    store = location.open().store
    store.put(store.start_folder("INBOX", 1), [message(uid, "", "fig") for uid in range(1, 4)])
    store.close()
    schema = location.schema
    with engine.pool().connection() as conn:  # as the release of version 1 made it
        conn.execute(
            f"DROP TABLE {schema}.counts, {schema}.counted, {schema}.unvectored, {schema}.flag_counts, "
            f"{schema}.densities, {schema}.density_members"
        )
        conn.execute(
            f"DROP FUNCTION {schema}.count_added, {schema}.count_removed, {schema}.count_moved, "
            f"{schema}.unvectored_added, {schema}.flag_counts_added, {schema}.flag_counts_removed, "
            f"{schema}.flag_counts_changed CASCADE"
        )
        conn.execute(f"UPDATE {schema}.meta SET value = '1' WHERE key = 'version'")
    store = location.open().store
    try:
        with engine.pool().connection() as conn:
            meta = dict(conn.execute(f"SELECT key, value FROM {schema}.meta").fetchall())
        assert meta["version"] == str(SCHEMA_VERSION) and meta["readable_from"] == "1"  # older ones read it
        page = store.search(Contains("text", "fig"), folders=["INBOX"], order="date", limit=1, offset=0)
        assert page.total == 3
        store.update(store.folders()["INBOX"], flags={}, removed=[2])
        again = store.search(Contains("text", "fig"), folders=["INBOX"], order="date", limit=1, offset=0)
        assert again.total == 2
        with engine.pool().connection() as conn:
            assert conn.execute(f"SELECT sum(messages) FROM {schema}.counts").fetchone() == (2,)
    finally:
        store.close()

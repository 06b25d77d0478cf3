"""The total of a page whose filter is flags alone, in PostgreSQL (issue 80, last item), against a
throwaway cluster of Debian's PostgreSQL (tests/support/servers/postgres.py): a common flag's page counted
its matches over their rows (300-350 ms of a million messages); since schema version 5 it is the sum of
``flag_counts`` (each folder's messages of each value of ``flag_bits``, kept by triggers). It must be what
counting gives, whatever came, changed, moved and went; the page then counts no rows, nor does a change to
count its folder; and an index of the
schema before (version 4) gains the counts, right, when it is opened."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from functools import partial
from typing import Any

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mail_imap_mcp.config import AccountConfig, IndexSettings
from mail_imap_mcp.credentials.secrets import index_password
from mail_imap_mcp.index.engines.postgresql import schema as postgres_schema
from mail_imap_mcp.index.engines.postgresql.engine import PostgresEngine
from mail_imap_mcp.index.engines.postgresql.store import PostgresStore
from mail_imap_mcp.query.tree import AllOf, AnyOf, Contains, HasFlag, Not, Query
from tests.support.servers.postgres import PostgresServer, index_table, schema_before
from tests.support.shared.index_flag_changes import FOLDERS, Mailbox, changes, check_totals, flag_filters
from tests.support.shared.index_flag_changes import searched as folder_sets

ACCOUNT = AccountConfig.model_validate({"host": "imap.example.org", "username": "u", "password_env": "X"})
_schemas = itertools.count()


@pytest.fixture(scope="module")
def engine(postgres: PostgresServer) -> Iterator[PostgresEngine]:
    """One engine of the tests' cluster for the module (each test its own schemas)."""
    settings = IndexSettings.model_validate(index_table(postgres))
    with contextlib.closing(PostgresEngine(settings, index_password(settings))) as opened:
        yield opened


def open_store(engine: PostgresEngine, account: str | None = None) -> PostgresStore:
    store = engine.location(account or f"t{next(_schemas)}", ACCOUNT).open().store
    assert isinstance(store, PostgresStore)
    return store


def count_rows(store: PostgresStore, query: Query, folders: list[str]) -> int:
    """COUNT(*) of the messages of ``folders`` the query matches, row by row."""
    compiled = store.compiler.compile(query)
    with store.pool.connection() as conn:
        row = conn.execute(
            f'SELECT count(*) FROM "{store.schema}".messages m JOIN "{store.schema}".folders f '
            f"ON f.id = m.folder WHERE f.name = ANY(%s) AND ({compiled.where})",
            [folders, *compiled.params],
        ).fetchone()
    assert row is not None
    return int(row[0])


@settings(max_examples=25, deadline=None)
@given(changes=changes, queries=st.lists(flag_filters, min_size=1, max_size=3), searched=folder_sets)
def test_a_flag_filters_total_is_what_counting_gives_after_any_changes(
    engine: PostgresEngine, changes: list[tuple[object, ...]], queries: list[Query], searched: list[list[str]]
) -> None:
    """Random adds, flag changes, moves, deletes and folders dropped: after each, the total of a page of
    each flag filter (the kept counts' sum) is COUNT(*) of its matches, in every set of folders searched."""
    with contextlib.closing(open_store(engine)) as store:
        check_totals(store, changes, queries, searched, partial(count_rows, store))


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement the stores run."""
    ran: list[str] = []
    real = psycopg.Cursor.execute

    def traced(cursor: psycopg.Cursor[Any], query: Any, params: Any = None, **kwargs: Any) -> Any:
        ran.append(str(query))
        return real(cursor, query, params, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", traced)
    return ran


@pytest.mark.parametrize(
    ("query", "flags_alone"),
    [
        (HasFlag("seen"), True),
        (Not(HasFlag("seen")), True),
        (AnyOf((HasFlag("flagged"), AllOf((HasFlag("seen", present=False),)))), True),
        (AllOf((HasFlag("seen"), Contains("subject", "note"))), False),
    ],
)
def test_a_page_of_flags_alone_counts_no_rows(
    engine: PostgresEngine, statements: list[str], query: Query, flags_alone: bool
) -> None:
    """A page whose filter is flags alone reads its total from ``flag_counts`` (no count(*) of the
    messages' rows); one with anything else still counts its matches; both are COUNT(*)."""
    store = open_store(engine)
    try:
        box = Mailbox(store)
        for name in FOLDERS:
            box.add(name, [("\\Seen",)] * 30 + [()] * 3 + [("\\Flagged", "\\Seen")] * 2)
        statements.clear()
        page = store.search(query, folders=["INBOX", "Lists"], order="date", limit=5, offset=0)
        counting = [s for s in statements if "count(*)" in s and "messages" in s]
        assert bool(counting) is not flags_alone, statements
        assert any("flag_counts" in s for s in statements) is flags_alone, statements
        assert (
            page.total
            == count_rows(store, query, ["INBOX", "Lists"])
            == box.expected(query, ["INBOX", "Lists"])
        )
    finally:
        store.close()


def test_a_change_counts_its_folder_from_the_kept_counts_not_its_rows(
    engine: PostgresEngine, statements: list[str]
) -> None:
    """A sync's write sets the folder's count of messages from ``flag_counts``: counting the folder's rows
    cost every write of a large folder, under the lock that holds the other writers back."""
    store = open_store(engine)
    try:
        box = Mailbox(store)
        box.add("INBOX", [("\\Seen",)] * 5 + [()] * 2)
        statements.clear()
        box.add("INBOX", [("\\Seen",), ()])
        box.apply(("flags", "INBOX", 0, ("\\Flagged",)))
        box.apply(("delete", "INBOX", 3))
        assert not [s for s in statements if "count(*)" in s and "messages" in s], statements
        assert any(s.startswith("UPDATE") and ".folders" in s and ".flag_counts" in s for s in statements), (
            statements
        )
        assert store.folders()["INBOX"].messages == 8 == len(box.held["INBOX"])
    finally:
        store.close()


def test_an_index_of_the_schema_before_gains_the_flag_counts_when_opened(
    engine: PostgresEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Version 4 (no counts) brought to 5 when opened: ``flag_counts`` holds its messages' counts, and
    the triggers keep them through the changes after."""
    with schema_before(monkeypatch, 4):
        account = f"t{next(_schemas)}"
        old = open_store(engine, account)
        box = Mailbox(old)
        box.add("INBOX", [("\\Seen",), (), ("\\Flagged",)])
        box.add("Archive", [("\\Seen",)] * 4)
        with old.pool.connection() as conn:
            found = conn.execute("SELECT to_regclass(%s)", (f'"{old.schema}".flag_counts',)).fetchone()
        assert found == (None,)
        old.close()
    store = open_store(engine, account)
    box.store = store
    try:
        with store.pool.connection() as conn:
            version = conn.execute(
                f"SELECT value FROM \"{store.schema}\".meta WHERE key = 'version'"
            ).fetchone()
        assert version == (str(postgres_schema.SCHEMA_VERSION),) and postgres_schema.SCHEMA_VERSION == 5
        box.add("INBOX", [("\\Seen",)])
        box.apply(("move", "INBOX", "Archive", 1))
        box.apply(("flags", "Archive", 0, ("\\Draft",)))
        for query in (HasFlag("seen"), Not(HasFlag("seen")), HasFlag("draft")):
            for folders in (["INBOX"], ["Archive"], ["INBOX", "Archive"]):
                page = store.search(query, folders=folders, order="date", limit=3, offset=0)
                assert page.total == count_rows(store, query, folders) == box.expected(query, folders)
    finally:
        store.close()

"""Flag filters of the index in PostgreSQL (issue 80) against a throwaway cluster of Debian's PostgreSQL
(tests/support/servers/postgres.py): a flag few messages have (``seen`` where none is read, a rare
``flagged``, ``-is:unseen``) is found by the index of ``flag_bits`` in every statement that filters on it
(a words page, its count, search by meaning's list of matches), not by reading every message's row, as
PostgreSQL's own plan of each statement says; an index of the schema before (version 3) gains that
index when it is opened; and every flag filter, set and not set, alone or with folders, dates and
words, finds the same messages as the query language says (there and on PostgreSQL with pgvector)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import date
from typing import Any

import numpy as np
import psycopg
import pytest

from mail_imap_mcp.config import AccountConfig, IndexSettings
from mail_imap_mcp.credentials.secrets import index_password
from mail_imap_mcp.index.engines.postgresql import schema as postgres_schema
from mail_imap_mcp.index.engines.postgresql.engine import PostgresEngine
from mail_imap_mcp.index.engines.postgresql.store import PostgresStore
from mail_imap_mcp.index.store import TEXT_COLUMNS, IndexedMessage
from mail_imap_mcp.query.tree import AllOf, AnyOf, Contains, DateBound, HasFlag, Not, Query
from tests.support.servers.postgres import index_table, schema_before
from tests.support.shared.index_fts5 import matches

ACCOUNT = AccountConfig.model_validate({"host": "imap.example.org", "username": "u", "password_env": "X"})
MODEL = "flags-model-16"
FOLDERS = ("INBOX", "Archive")
#: Enough messages that reading every row costs PostgreSQL more than its index of the flags.
MANY = 6000
#: One message in ``RARE`` is flagged (and answered where it is also the fifth); none is seen.
RARE = 500
_schemas = itertools.count()


@pytest.fixture
def engine(request: pytest.FixtureRequest) -> Iterator[PostgresEngine]:
    """On Debian's PostgreSQL (no pgvector: the vectors in a table), or the server fixture a test names
    (``postgres_vector``: PostgreSQL 18 with pgvector, the vectors in ``halfvec``)."""
    server = request.getfixturevalue(getattr(request, "param", "postgres"))
    opened = PostgresEngine(
        settings := IndexSettings.model_validate(index_table(server)), index_password(settings)
    )
    yield opened
    opened.close()


def open_store(engine: PostgresEngine, account: str) -> PostgresStore:
    store = engine.location(account, ACCOUNT).open().store
    assert isinstance(store, PostgresStore)
    return store


def message(uid: int, flags: tuple[str, ...], subject: str = "", day: int = 20260101) -> IndexedMessage:
    texts = tuple(subject if column == "subject" else "" for column in TEXT_COLUMNS)
    return IndexedMessage(uid, 1000 + uid, day, 10, flags, False, texts)


def rare_flags(uid: int) -> tuple[str, ...]:
    if uid % RARE:
        return ()
    return ("\\Flagged", "\\Answered") if uid % (5 * RARE) == 0 else ("\\Flagged",)


def filled(store: PostgresStore, messages: dict[str, list[IndexedMessage]]) -> None:
    """``messages`` stored in each folder (its first build done), a vector each, and the messages' table
    analysed (as autovacuum does after so many rows): PostgreSQL's statistics of its flags."""
    rng = np.random.default_rng(80)
    for folder, kept in messages.items():
        state = store.folders().get(folder) or store.start_folder(folder, 1)
        store.put(replace(state, uidnext=max(m.uid for m in kept) + 1, complete=True), kept)
        raw = rng.standard_normal((len(kept), 16)).astype(np.float32)
        store.put_vectors(MODEL, {(folder, m.uid): raw[at : at + 1] for at, m in enumerate(kept)})
    with store.pool.connection() as conn:
        conn.execute(f'ANALYZE "{store.schema}".messages')


def discarded(plan: dict[str, Any]) -> int:
    """The rows of ``messages`` that ``plan`` (executed) read and then discarded as not matching."""
    own = 0
    if plan.get("Relation Name") == "messages":
        removed = plan.get("Rows Removed by Filter", 0) + plan.get("Rows Removed by Index Recheck", 0)
        own = int(removed * plan.get("Actual Loops", 1))
    return own + sum(discarded(inner) for inner in plan.get("Plans", ()))


@pytest.fixture
def planned(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every statement that lists the messages a flag test passes (``m.flag_bits`` in its condition; not
    those that ask it of given messages by row id), with the rows of ``messages`` PostgreSQL read and
    discarded running it (``EXPLAIN ANALYZE`` on the statement's own connection, just before it)."""
    found: list[tuple[str, int]] = []
    real = psycopg.Cursor.execute

    def explained(cursor: psycopg.Cursor[Any], query: Any, params: Any = None, **kwargs: Any) -> Any:
        text = str(query)
        condition = text.split("WHERE", 1)[-1]
        if (
            text.lstrip().startswith("SELECT")
            and "m.flag_bits " in condition
            and "m.id = ANY" not in condition
        ):
            (plan,) = real(cursor, "EXPLAIN (ANALYZE, FORMAT JSON) " + text, params).fetchone()  # type: ignore[misc]
            found.append((text, discarded((plan if isinstance(plan, list) else json.loads(plan))[0]["Plan"])))
        return real(cursor, query, params, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", explained)
    return found


@pytest.mark.parametrize(
    "query",
    [
        HasFlag("seen"),
        HasFlag("flagged"),
        Not(HasFlag("seen", present=False)),
        AllOf((HasFlag("flagged"), HasFlag("answered"))),
        AllOf((HasFlag("flagged"), DateBound("since", date(2026, 1, 1)))),
    ],
    ids=["seen-none", "flagged-rare", "not-unseen", "flagged-and-answered", "flagged-since"],
)
def test_a_flag_few_messages_have_is_found_by_its_index_not_by_reading_every_row(
    engine: PostgresEngine, planned: list[tuple[str, int]], query: Query
) -> None:
    """Each of the 12,000 messages' rows read to find a few dozen was every statement's way before (a
    scan of every row, or of the folders' index, each row's flags then tested)."""
    store = open_store(engine, f"f{next(_schemas)}")
    filled(
        store, {folder: [message(uid, rare_flags(uid)) for uid in range(1, MANY + 1)] for folder in FOLDERS}
    )
    planned.clear()
    vector = np.random.default_rng(1).standard_normal(16).astype(np.float32)
    nearest = store.nearest(vector, query, list(FOLDERS), 20)
    page = store.search(query, folders=list(FOLDERS), order="date", limit=20, offset=0)
    expected = sum(matches(query, message(uid, rare_flags(uid))) for uid in range(1, MANY + 1)) * len(FOLDERS)
    assert page.total == expected and len(nearest) == min(20, expected)
    # search by meaning's list, the page and its count (none of flags alone: their kept counts say)
    assert len(planned) >= (2 if store.compiler.compile(query).flag_values is not None else 3), planned
    for statement, read_for_nothing in planned:
        assert read_for_nothing < MANY // 10, (statement, read_for_nothing)


def test_an_index_of_the_schema_before_gains_the_flags_index_when_opened(
    engine: PostgresEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    account = f"f{next(_schemas)}"

    def flag_indexes(store: PostgresStore) -> list[str]:
        with store.pool.connection() as conn:
            rows = conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = %s AND tablename = 'messages' "
                "AND indexdef LIKE '%%(flag_bits)%%'",
                (store.schema,),
            ).fetchall()
        return [str(row[0]) for row in rows]

    with schema_before(monkeypatch, 3):
        old = open_store(engine, account)
        filled(old, {"INBOX": [message(uid, rare_flags(uid)) for uid in range(1, 2 * RARE + 1)]})
        assert flag_indexes(old) == []
        old.close()
    store = open_store(engine, account)
    assert flag_indexes(store) == ["messages_flag_bits"]
    with store.pool.connection() as conn:
        version = conn.execute(f"SELECT value FROM \"{store.schema}\".meta WHERE key = 'version'").fetchone()
    assert version == (str(postgres_schema.SCHEMA_VERSION),)
    page = store.search(HasFlag("flagged"), folders=["INBOX"], order="date", limit=5, offset=0)
    assert sorted(hit.uid for hit in page.hits) == [RARE, 2 * RARE]
    store.close()


#: Each system flag's combinations over the messages of the test below (uid - 1's bits).
_SYSTEM = ("\\Seen", "\\Answered", "\\Flagged", "\\Deleted", "\\Draft")


def _combination(uid: int) -> tuple[str, ...]:
    return tuple(flag for bit, flag in enumerate(_SYSTEM) if (uid - 1) >> bit & 1)


@pytest.mark.parametrize(
    "query",
    [
        *(
            HasFlag(flag, present)
            for flag in ("seen", "answered", "flagged", "deleted", "draft")
            for present in (True, False)
        ),
        Not(HasFlag("flagged")),
        Not(HasFlag("seen", present=False)),
        Not(AllOf((HasFlag("seen"), HasFlag("draft", present=False)))),
        AnyOf((HasFlag("answered"), Not(HasFlag("deleted")))),
        AllOf((HasFlag("seen", present=False), Contains("subject", "fig"))),
        AllOf((Contains("text", "fig"), Not(HasFlag("flagged")), DateBound("before", date(2026, 1, 2)))),
        AllOf((HasFlag("draft"), DateBound("since", date(2026, 1, 2)))),
    ],
    ids=repr,
)
@pytest.mark.parametrize("engine", ["postgres", "postgres_vector"], indirect=True)
def test_flag_filters_find_the_same_messages_set_and_not_set_with_other_filters(
    engine: PostgresEngine, query: Query
) -> None:
    """Every combination of the five system flags (in two folders, with words and days apart), each
    filter against the query language's meaning, by a words page and by search by meaning."""
    store = open_store(engine, f"f{next(_schemas)}")
    kept = {
        folder: [
            message(uid, _combination(uid), "fig" if uid % 3 else "plum", 20260101 + uid % 2)
            for uid in range(1, 65)
        ]
        for folder in FOLDERS
    }
    filled(store, kept)
    expected = {(folder, m.uid) for folder, listed in kept.items() for m in listed if matches(query, m)}
    page = store.search(query, folders=list(FOLDERS), order="date", limit=200, offset=0)
    assert {(hit.folder, hit.uid) for hit in page.hits} == expected and page.total == len(expected)
    inbox = {(folder, uid) for folder, uid in expected if folder == "INBOX"}
    vector = np.random.default_rng(2).standard_normal(16).astype(np.float32)
    nearest = store.nearest(vector, query, ["INBOX"], 200)
    assert {(hit.folder, hit.uid) for hit in nearest} == inbox
    store.close()

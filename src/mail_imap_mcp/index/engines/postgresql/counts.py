"""Kept counts of the PostgreSQL index: how many messages of each folder a query that is one text test
alone matches, kept exact by triggers on ``messages`` in the transaction of every change.

A page says how many messages match in all. PostgreSQL can tell that only by visiting every match's row
(whether this transaction sees it, which folder holds it): the GIN index finds a word's 77,000 matches
of 100,000 messages quickly, then visiting their rows reads every page of the table (EXPLAIN ANALYZE,
docs/benchmarks.md), and PostgreSQL 15 as shipped now (15.18 here) never answers a count from the
visibility map alone: its minor releases switched that shortcut of bitmap scans off (it could count rows
a concurrent VACUUM had removed). SQLite's FTS5 counts a word's matches from its index.

So a query whose count reached :data:`COUNTED_FROM` matches (a word in most messages, which a ranked
page lists newest first) is recorded in ``counted`` with its count per folder in ``counts``, computed
while holding the index's writer lock; from then on every insert and delete of message rows changes
``counts`` in its own transaction (statement triggers over the rows changed; a row trigger where an
update names ``folder`` or ``terms``), so the count stays exact whichever instance, or release, writes. A page then
adds up its folders' counts instead of visiting the rows. At most :data:`MAX_COUNTED` queries are kept
per index: each costs every write a ``tsquery`` test per row written.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any, Protocol

import psycopg
import psycopg.errors

from mail_imap_mcp.index.engines.postgresql.query import TEXT_TEST, PgQuery
from mail_imap_mcp.index.engines.sqlite.ranking import UNWEIGHTED_MATCHES


class Scoped(Protocol):
    """A connection whose statements name the index's own tables (:class:`.store.Scoped`)."""

    conn: psycopg.Connection[tuple[Any, ...]]
    schema: str

    def execute(
        self, statement: str, params: Sequence[object] | None = None, *, binary: bool = False
    ) -> psycopg.Cursor[tuple[Any, ...]]: ...

    def copy(
        self, statement: str, params: Sequence[object]
    ) -> contextlib.AbstractContextManager[psycopg.Copy]: ...


#: Matches from which a query's count is kept (the bound of SQLite's rule for a word in most messages).
COUNTED_FROM = UNWEIGHTED_MATCHES
#: Queries whose counts are kept per index at most.
MAX_COUNTED = 32
#: Milliseconds a search waits for the index's writer lock to start keeping a count (else: next time).
KEEP_WAIT_MS = 200

#: Schema version 2 (:data:`~.schema.MIGRATIONS`): the tables and their triggers. ``{s}`` is the
#: schema. An update that names neither ``folder`` nor ``terms`` (flags, labels) fires nothing.
COUNT_TABLES = (
    "CREATE TABLE {s}.counted(id serial PRIMARY KEY, query text NOT NULL UNIQUE, terms tsquery NOT NULL)",
    """CREATE TABLE {s}.counts(
        counted integer NOT NULL REFERENCES {s}.counted(id) ON DELETE CASCADE,
        folder integer NOT NULL REFERENCES {s}.folders(id) ON DELETE CASCADE,
        messages integer NOT NULL, PRIMARY KEY (counted, folder))""",
    """CREATE FUNCTION {s}.count_added() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF EXISTS (SELECT FROM {s}.counted) THEN
            INSERT INTO {s}.counts AS k(counted, folder, messages)
            SELECT c.id, a.folder, count(*) FROM added a JOIN {s}.counted c ON a.terms @@ c.terms
            GROUP BY c.id, a.folder
            ON CONFLICT (counted, folder) DO UPDATE SET messages = k.messages + excluded.messages;
        END IF;
        RETURN NULL;
    END $$""",
    """CREATE FUNCTION {s}.count_removed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF EXISTS (SELECT FROM {s}.counted) THEN
            UPDATE {s}.counts k SET messages = k.messages - r.n
            FROM (SELECT c.id, o.folder, count(*) AS n FROM removed o JOIN {s}.counted c ON o.terms @@ c.terms
                  GROUP BY c.id, o.folder) r
            WHERE k.counted = r.id AND k.folder = r.folder;
        END IF;
        RETURN NULL;
    END $$""",
    """CREATE FUNCTION {s}.count_moved() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE {s}.counts k SET messages = k.messages - 1 FROM {s}.counted c
        WHERE k.counted = c.id AND k.folder = OLD.folder AND OLD.terms @@ c.terms;
        INSERT INTO {s}.counts AS k(counted, folder, messages)
        SELECT c.id, NEW.folder, 1 FROM {s}.counted c WHERE NEW.terms @@ c.terms
        ON CONFLICT (counted, folder) DO UPDATE SET messages = k.messages + 1;
        RETURN NULL;
    END $$""",
    "CREATE TRIGGER count_added AFTER INSERT ON {s}.messages REFERENCING NEW TABLE AS added "
    "FOR EACH STATEMENT EXECUTE FUNCTION {s}.count_added()",
    "CREATE TRIGGER count_removed AFTER DELETE ON {s}.messages REFERENCING OLD TABLE AS removed "
    "FOR EACH STATEMENT EXECUTE FUNCTION {s}.count_removed()",
    "CREATE TRIGGER count_moved AFTER UPDATE OF folder, terms ON {s}.messages "
    "FOR EACH ROW EXECUTE FUNCTION {s}.count_moved()",
)


def stored_messages(conn: Scoped) -> int:
    """The messages the index holds (the folders' kept counts: no row visited)."""
    row = conn.execute("SELECT coalesce(sum(messages), 0) FROM folders").fetchone()
    return int(row[0]) if row is not None else 0


def count_key(query: PgQuery) -> str | None:
    """The ``tsquery`` of ``query`` where it is one text test alone (its count can be kept), else None."""
    if query.where == f"({TEXT_TEST})" and len(query.params) == 1 and isinstance(query.params[0], str):
        return query.params[0]
    return None


def kept_total(conn: Scoped, query: PgQuery, folders: list[str]) -> int | None:
    """How many messages of ``folders`` match ``query``, from its kept counts (None: not kept)."""
    key = count_key(query)
    if key is None:
        return None
    row = conn.execute(
        "SELECT (SELECT coalesce(sum(k.messages), 0) FROM counts k JOIN folders f ON f.id = k.folder "
        "WHERE k.counted = c.id AND f.name = ANY(%s)) FROM counted c WHERE c.query = %s",
        (folders, key),
    ).fetchone()
    return None if row is None else int(row[0])


def keep_count(conn: Scoped, query: PgQuery, matches: int, writer_lock: str) -> None:
    """Start keeping ``query``'s count where it is one text test alone that matched at least
    :data:`COUNTED_FROM` messages (``matches``), fewer than :data:`MAX_COUNTED` are kept, and the index's
    writer lock (``writer_lock``: its advisory lock's name) is free within :data:`KEEP_WAIT_MS`: its
    counts are computed under that lock, so no write falls between them and the triggers' first."""
    key = count_key(query)
    if key is None or matches < COUNTED_FROM:
        return
    try:
        with conn.conn.transaction():
            conn.execute("SELECT set_config('lock_timeout', %s, true)", (f"{KEEP_WAIT_MS}ms",))
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (writer_lock,))
            row = conn.execute(
                "INSERT INTO counted(query, terms) SELECT %s, %s::tsquery "
                "WHERE (SELECT count(*) FROM counted) < %s ON CONFLICT (query) DO NOTHING RETURNING id",
                (key, key, MAX_COUNTED),
            ).fetchone()
            if row is not None:
                conn.execute(
                    "INSERT INTO counts(counted, folder, messages) SELECT %s, m.folder, count(*) "
                    "FROM messages m WHERE m.terms @@ %s::tsquery GROUP BY m.folder",
                    (row[0], key),
                )
    except psycopg.errors.LockNotAvailable:
        return  # a writer holds the index: counted again, and kept, next time

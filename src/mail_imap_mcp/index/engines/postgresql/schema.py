"""The PostgreSQL engine's schema: one schema of the database per index (an account's, or a team user's
with ``index_per_user``), so users are kept apart by the database itself, not by a WHERE clause.

Tables: ``meta`` (the schema's version, the oldest version of this code that may use it, the account it
indexes), ``folders`` (each folder's sync state) and ``messages`` (a row per message: its place, the facts
a query filters on, its text compressed for snippets, and ``terms``: a ``tsvector`` of the SQLite
index's words, each named by its column and weighted, with a GIN index). Since version 2, ``counted``
(the text tests whose matches are counted as they change, :mod:`.counts`) and ``counts`` (their
matches per folder), kept by triggers on ``messages`` in the transaction of each change, whichever
release writes it. Since version 3, ``unvectored`` (the messages without vectors yet, kept by a trigger,
:mod:`.vectors`), and the ``vectors`` table the first vectors make. Since version 4, an index of
``messages.flag_bits``: a flag few messages have (or lack) is found by it, not by reading every row
(:func:`.query.flag_test`). Since version 5, ``flag_counts`` (the messages of each folder and value of
``flag_bits``, kept by triggers, :mod:`.flag_counts`): the total of a page of flags alone. Since version 6,
an update's flag counts are kept per statement, not per row.

Versions are additive: a release that needs more adds it (expand: a column, an index, a table) and
records its version, so the release before it keeps running beside it during a rolling upgrade; only a
later release drops what nobody reads any more (contract), and records then that releases older than it
cannot use the schema (``readable_from``). A release finds a schema it cannot use (``readable_from``
above its own version) and says so (:class:`~.store.IndexUnusable`): the index is unavailable, searches
go to the server, nothing is dropped; an older schema is brought up to its version by the steps of
:data:`MIGRATIONS`.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from mail_imap_mcp.index.engines.postgresql.counts import COUNT_TABLES
from mail_imap_mcp.index.engines.postgresql.densities import DENSITY_TABLES
from mail_imap_mcp.index.engines.postgresql.flag_counts import FLAG_COUNT_TABLE, FLAG_COUNTS_PER_STATEMENT
from mail_imap_mcp.index.engines.postgresql.vectors import UNVECTORED_TABLE
from mail_imap_mcp.index.store import IndexUnusable

#: This release's schema.
SCHEMA_VERSION = 7
#: Schema version 4: the index of the messages' flags. Built in the migration's transaction, it holds
#: back writes to ``messages`` (not searches: they read on) while it is made, 0.6 s at a million
#: messages (docs/benchmarks.md, "Flags answered by an index").
FLAG_INDEX = ("CREATE INDEX IF NOT EXISTS messages_flag_bits ON {s}.messages(flag_bits)",)
#: The steps from each version to the next, additive: ``MIGRATIONS[n]`` brings version n to n + 1 (a new
#: schema is made at version 1, then brought up by them).
MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: COUNT_TABLES,
    2: UNVECTORED_TABLE,
    3: FLAG_INDEX,
    4: FLAG_COUNT_TABLE,
    5: FLAG_COUNTS_PER_STATEMENT,
    6: DENSITY_TABLES,
}
#: Serialises the making and migrating of schemas across instances (with the schema's name).
_MAKING = "mail-imap-mcp schema"

_TABLES = (
    "CREATE TABLE {s}.meta(key text PRIMARY KEY, value text NOT NULL)",
    """CREATE TABLE {s}.folders(
        id serial PRIMARY KEY, name text NOT NULL UNIQUE, uidvalidity bigint NOT NULL,
        uidnext bigint NOT NULL, highestmodseq numeric(20) NOT NULL, messages integer NOT NULL,
        complete boolean NOT NULL)""",
    """CREATE TABLE {s}.messages(
        id bigserial PRIMARY KEY, folder integer NOT NULL REFERENCES {s}.folders(id) ON DELETE CASCADE,
        uid bigint NOT NULL, sent bigint NOT NULL, arrival_day integer NOT NULL, size bigint NOT NULL,
        flag_bits integer NOT NULL, keywords text NOT NULL, has_attachment boolean NOT NULL,
        filenames text NOT NULL, doc bytea NOT NULL, global_id numeric(20), labels text NOT NULL,
        label_keys text NOT NULL, attachments_read boolean NOT NULL, arrival bigint NOT NULL,
        terms tsvector NOT NULL, UNIQUE(folder, uid))""",
    "CREATE INDEX ON {s}.messages USING gin(terms) WITH (fastupdate = off)",
    "CREATE INDEX ON {s}.messages(sent DESC, id DESC)",
    "CREATE INDEX ON {s}.messages(global_id) WHERE global_id IS NOT NULL",
)


def _meta(conn: psycopg.Connection[tuple[object, ...]], schema: str) -> dict[str, str] | None:
    exists = conn.execute(
        "SELECT 1 FROM information_schema.tables WHERE table_schema = %s AND table_name = 'meta'", (schema,)
    ).fetchone()
    if exists is None:
        return None
    rows = conn.execute(sql.SQL("SELECT key, value FROM {}.meta").format(sql.Identifier(schema))).fetchall()
    return {str(key): str(value) for key, value in rows}


def prepare(conn: psycopg.Connection[tuple[object, ...]], schema: str, identity: str | None) -> None:
    """Make ``schema`` where missing, bring an older one up to :data:`SCHEMA_VERSION`, and check that it
    is the index of ``identity`` (None: not checked; one that records none records it):
    :class:`IndexUnusable` for a schema of something else, of a newer release this one cannot use, or of
    another account."""
    name = sql.Identifier(schema)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"{_MAKING}:{schema}",))
        meta = _meta(conn, schema)
        if meta is None:
            found = conn.execute(
                "SELECT 1 FROM information_schema.schemata WHERE schema_name = %s", (schema,)
            ).fetchone()
            if (
                found is not None
                and conn.execute(
                    "SELECT 1 FROM information_schema.tables WHERE table_schema = %s", (schema,)
                ).fetchone()
            ):
                raise IndexUnusable(f"the schema {schema} holds something else than an index")
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(name))
            for statement in _TABLES:
                conn.execute(sql.SQL(statement).format(s=name))
            conn.execute(
                sql.SQL(
                    "INSERT INTO {}.meta(key, value) VALUES ('version', '1'), ('readable_from', '1')"
                ).format(name)
            )
            meta = _meta(conn, schema) or {}
        version, readable_from = int(meta.get("version", "0")), int(meta.get("readable_from", "0"))
        if readable_from > SCHEMA_VERSION or version < 1:
            raise IndexUnusable(
                f"the index {schema} in PostgreSQL has schema version {version}, which this release (schema "
                f"version {SCHEMA_VERSION}) cannot use: upgrade this instance to the release the others run; "
                "searches go to the mail server meanwhile"
            )
        while version < SCHEMA_VERSION:
            for statement in MIGRATIONS[version]:
                conn.execute(sql.SQL(statement).format(s=name))
            version += 1
            conn.execute(
                sql.SQL("UPDATE {}.meta SET value = %s WHERE key = 'version'").format(name), (str(version),)
            )
        if identity is None:
            return
        recorded = meta.get("identity")
        if recorded is None:
            conn.execute(
                sql.SQL("INSERT INTO {}.meta(key, value) VALUES ('identity', %s)").format(name), (identity,)
            )
        elif recorded != identity:
            raise IndexUnusable(
                f"the index {schema} in PostgreSQL is another account's of that name (another server, port "
                "or user name): drop it with `mail-imap-mcp index --drop --account ID` to index this one"
            )


def exists(conn: psycopg.Connection[tuple[object, ...]], schema: str) -> bool:
    """Whether ``schema`` is in the database."""
    found = conn.execute("SELECT 1 FROM information_schema.schemata WHERE schema_name = %s", (schema,))
    return found.fetchone() is not None


def drop(conn: psycopg.Connection[tuple[object, ...]], schema: str) -> bool:
    """Drop ``schema`` and everything in it; whether there was one."""
    with conn.transaction():
        found = conn.execute(
            "SELECT 1 FROM information_schema.schemata WHERE schema_name = %s", (schema,)
        ).fetchone()
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
    return found is not None


def rename(conn: psycopg.Connection[tuple[object, ...]], schema: str, to: str) -> None:
    """Keep ``schema`` under the name ``to``."""
    with conn.transaction():
        conn.execute(
            sql.SQL("ALTER SCHEMA {} RENAME TO {}").format(sql.Identifier(schema), sql.Identifier(to))
        )

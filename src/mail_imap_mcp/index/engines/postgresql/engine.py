"""The PostgreSQL engine: every index of the server in one database (``[index] index_url``) that every
instance of a team deployment shares, a schema per index (:mod:`.schema`) named by the account
and, with ``index_per_user``, by the team user's tag (:func:`~.location.user_tag`: a keyed digest that
names nobody). Its queries are compiled by :mod:`.query`; its syncs take turns on one lock per
index in a process and on the index's advisory lock across instances (:mod:`.store`); a ranked
page keeps the places of its first matches for the later ones, as SQLite's does."""

from __future__ import annotations

import hashlib
import math
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from mail_imap_mcp.config import AccountConfig, IndexSettings
from mail_imap_mcp.index.engine import IndexLocation, Opened
from mail_imap_mcp.index.engines.postgresql import schema as postgres_schema
from mail_imap_mcp.index.engines.postgresql.failures import failure_of
from mail_imap_mcp.index.engines.postgresql.query import PgCompiler
from mail_imap_mcp.index.engines.postgresql.store import Connection, PostgresStore
from mail_imap_mcp.index.engines.sqlite.location import USER_SEPARATOR, account_identity, user_tag
from mail_imap_mcp.index.engines.sqlite.tokens import Tokenizer
from mail_imap_mcp.query.tree import Query

#: The start of every index's schema name.
SCHEMA_PREFIX = "mimx_"
_MAX_NAME_BYTES = 63


def schema_name(account_id: str, tag: str | None = None) -> str:
    """The schema of ``account_id``'s index (``tag``: a team user's, :func:`~.location.user_tag`)."""
    base = f"{SCHEMA_PREFIX}{account_id}"
    if len(base.encode()) + (len(USER_SEPARATOR) + len(tag) if tag else 0) > _MAX_NAME_BYTES:
        base = f"{SCHEMA_PREFIX}{hashlib.sha256(account_id.encode()).hexdigest()[:24]}"
    return f"{base}{USER_SEPARATOR}{tag}" if tag else base


_locks: dict[tuple[str, str], threading.RLock] = {}
_locks_guard = threading.Lock()


@dataclass(frozen=True)
class PostgresLocation:
    """:class:`~.engine.IndexLocation` of one schema of the engine's database."""

    engine: PostgresEngine
    schema: str
    identity: str | None = None

    @property
    def where(self) -> str:
        return f"schema {self.schema} of {self.engine.display}"

    def open(self) -> Opened:
        """The schema's store, made or brought up to this release's version where needed; another
        account's, or one of a newer release this one cannot use, is :class:`~.store.IndexUnusable` and
        stays as it is (shared: never moved aside on sight)."""
        pool = self.engine.pool()
        try:
            with pool.connection() as conn:
                postgres_schema.prepare(conn, self.schema, self.identity)
        except (psycopg.Error, PoolTimeout) as exc:
            raise failure_of(self.schema, exc) from exc
        return Opened(PostgresStore(pool, self.schema, self.engine.tokenizer))

    def exists(self) -> bool:
        try:
            with self.engine.pool().connection() as conn:
                return postgres_schema.exists(conn, self.schema)
        except (psycopg.Error, PoolTimeout) as exc:
            raise failure_of(self.schema, exc) from exc

    def _aside_suffix(self) -> str:
        return f"_{hashlib.sha256(self.schema.encode()).hexdigest()[:8]}"

    def move_aside(self) -> str:
        aside = f"{SCHEMA_PREFIX}unusable_{time.strftime('%Y%m%dT%H%M%S')}{self._aside_suffix()}"
        with self.engine.pool().connection() as conn:
            postgres_schema.rename(conn, self.schema, aside)
        return f"schema {aside}"

    def discard_aside(self) -> list[str]:
        prefix, suffix = f"{SCHEMA_PREFIX}unusable_", self._aside_suffix()
        try:
            found = [n for n in self.engine.schemas() if n.startswith(prefix) and n.endswith(suffix)]
            if found:
                with self.engine.pool().connection() as conn:
                    for name in found:
                        postgres_schema.drop(conn, name)
        except (psycopg.Error, PoolTimeout) as exc:
            raise failure_of(self.schema, exc) from exc
        return [f"schema {name}" for name in found]

    def drop(self) -> bool:
        try:
            with self.engine.pool().connection() as conn:
                return postgres_schema.drop(conn, self.schema)
        except (psycopg.Error, PoolTimeout) as exc:
            raise failure_of(self.schema, exc) from exc

    def lock(self) -> threading.RLock:
        with _locks_guard:
            return _locks.setdefault((self.engine.display, self.schema), threading.RLock())


class PostgresEngine:
    """:class:`~.engine.IndexEngine` of one PostgreSQL database (``settings``: ``[index]``)."""

    name = "postgresql"
    shared = True

    def __init__(self, settings: IndexSettings, password: str | None) -> None:
        assert settings.index_url is not None
        self.settings = settings
        self.display = settings.index_url
        self._password = password
        self._pool: ConnectionPool[Connection] | None = None
        self._guard = threading.Lock()
        self.tokenizer = Tokenizer()
        self.compiler = PgCompiler(self.tokenizer)

    def pool(self) -> ConnectionPool[Connection]:
        """The pool of connections to the database, opened on first use (without waiting for it)."""
        with self._guard:
            if self._pool is None:
                extra: dict[str, Any] = {
                    # libpq's is whole seconds, at least 2 (a smaller value is 2).
                    "connect_timeout": max(2, math.ceil(self.settings.index_connect_timeout_s)),
                    "autocommit": True,
                    # The planner prices a tsvector match at one operator and scans the whole table for
                    # a word it guesses common; every statement here has an index to use (the GIN of the
                    # terms, the keys): measured 13 ms against 0.2 ms for a rare word at 5,000 messages.
                    # JIT compiles a plan priced that high: 25 ms of compiling for a 0.02 ms statement.
                    "options": "-c enable_seqscan=off -c jit=off",
                    "prepare_threshold": None,
                }
                if self._password is not None:
                    extra["password"] = self._password
                self._pool = ConnectionPool(
                    self.settings.index_url or "",
                    kwargs=extra,
                    min_size=1,
                    max_size=self.settings.index_pool_size,
                    timeout=self.settings.index_connect_timeout_s,
                    check=ConnectionPool.check_connection,
                    open=False,
                    name="mail-imap-mcp-index",
                )
                self._pool.open(wait=False)
            return self._pool

    def check(self, query: Query) -> None:
        self.compiler.compile(query)

    def location(self, account_id: str, account: AccountConfig, user: str | None = None) -> PostgresLocation:
        schema = schema_name(account_id, None if user is None else user_tag(account_id, user))
        return PostgresLocation(self, schema, account_identity(account, Path(schema)))

    def user_locations(self, account_id: str) -> list[IndexLocation]:
        first = schema_name(account_id, "0" * 24)
        prefix = first[:-24]
        with self.pool().connection() as conn:
            rows = conn.execute(
                "SELECT schema_name FROM information_schema.schemata WHERE left(schema_name, %s) = %s",
                (len(prefix), prefix),
            ).fetchall()
        return [PostgresLocation(self, str(row[0])) for row in rows if len(str(row[0])) == len(first)]

    def schemas(self) -> list[str]:
        """Every index's schema in the database (the state listing)."""
        with self.pool().connection() as conn:
            rows = conn.execute(
                "SELECT schema_name FROM information_schema.schemata WHERE left(schema_name, %s) = %s "
                "ORDER BY 1",
                (len(SCHEMA_PREFIX), SCHEMA_PREFIX),
            ).fetchall()
        return [str(row[0]) for row in rows]

    def close(self) -> None:
        with self._guard:
            if self._pool is not None:
                self._pool.close()
                self._pool = None
        self.tokenizer.close()

"""The index's errors for those of PostgreSQL and its pool (:func:`failure_of`), and the block that turns
the one into the other (:func:`failures_of`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg_pool import PoolTimeout

from mail_imap_mcp.index.store import IndexBusy, IndexWriteFailed


def failure_of(schema: str, exc: Exception) -> IndexWriteFailed:
    """The index's error for ``exc`` of PostgreSQL or its pool."""
    if isinstance(exc, psycopg.errors.LockNotAvailable):
        return IndexBusy(f"another instance held the index {schema} longer than a writer waits")
    if isinstance(exc, PoolTimeout | psycopg.OperationalError | psycopg.InterfaceError):
        return IndexWriteFailed(f"PostgreSQL could not be reached for the index {schema} ({exc})")
    return IndexWriteFailed(f"PostgreSQL refused a change of the index {schema} ({exc})")


@contextmanager
def failures_of(schema: str) -> Iterator[None]:
    """A block whose errors of PostgreSQL leave it as the index's (:func:`failure_of`)."""
    try:
        yield
    except (psycopg.Error, PoolTimeout) as exc:
        raise failure_of(schema, exc) from exc

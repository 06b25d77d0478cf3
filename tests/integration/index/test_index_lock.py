"""A search never waits for the index longer than its freshness budget (issue 35): when the background
sync of the same process holds the index past it, the search answers from the index as it is and says
so, as it does when another process holds the file's write lock."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import psycopg
import pytest

import mail_imap_mcp.index.engines.sqlite.store as sqlite_store
import mail_imap_mcp.index.runtime as runtime
from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import Config
from mail_imap_mcp.credentials.secrets import index_password
from mail_imap_mcp.index.engines.postgresql.store import PostgresStore, writer_lock
from mail_imap_mcp.index.engines.sqlite.store import SqliteStore
from mail_imap_mcp.index.store import WRITER_WAIT_S
from tests.support.accounts import account_settings
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.clients.index_clients import (
    BEHIND,
    caught_up_pages,
    identity_file,
    index_file,
    indexed_client,
)
from tests.support.patience import patient
from tests.support.servers.matrix import MatrixServer
from tests.support.servers.postgres import IndexEngineParam
from tests.support.shared.index_search import SEARCH, message, other_client

pytestmark = pytest.mark.anyio


class Holder:
    """A thread holding the index's lock (as a long background sync step would) until told to let go."""

    def __init__(self, lock: threading.RLock) -> None:
        self.lock = lock
        self.taken = threading.Event()
        self.release = threading.Event()
        self.thread = threading.Thread(target=self._hold, daemon=True)

    def _hold(self) -> None:
        with self.lock:
            self.taken.set()
            self.release.wait(timeout=patient(20))

    def __enter__(self) -> Holder:
        self.thread.start()
        assert self.taken.wait(timeout=patient(10))
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.thread.join(timeout=patient(10))


async def test_a_search_does_not_wait_past_its_budget_for_the_background_sync(
    dovecot: MatrixServer, tmp_path: Path, index_engine: IndexEngineParam
) -> None:
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", [message(i, "kiwiword") for i in range(4)])
    dovecot.seed(user, dovecot.mailbox_name("Trash"), [message(30, "kiwiword")])
    async for mcp, app, _config in indexed_client(
        dovecot, user, tmp_path, index_engine, index_fresh_budget_ms=300
    ):
        with other_client(dovecot, user) as other:
            other.append("INBOX", message(50, "kiwiword"))
        index = app.index_of("default")
        assert index is not None
        with Holder(index.lock) as holder:
            envelope = await mcp.call(SEARCH, {"query": "kiwiword", "mailbox": "INBOX"})
            # Answered while the lock was still held: from the index as it is, said to be behind.
            assert not holder.release.is_set()
            # A search of every mailbox leaves out Trash, as the fresh one does.
            everywhere = await mcp.call(SEARCH, {"query": "kiwiword", "mailboxes": ["*"]})
        assert envelope["data"]["total"] == 4
        # Said as a budget run out while the sync wrote, which the next search outlives (the words
        # caught_up_pages searches again on), not as a write refused by another process: a loaded run's
        # search met the sync so, was told "could not be written", and its test failed (issue 78).
        for page in (envelope, everywhere):
            warnings = page["meta"]["warnings"]
            assert any(BEHIND in w and "background sync was writing it" in w for w in warnings), page
            assert not any("could not be written" in w or "another process" in w for w in warnings), page
        assert any("INBOX" in w for w in envelope["meta"]["warnings"]), envelope
        assert everywhere["data"]["total"] == 4, everywhere
        # Once the lock is free, the index catches up: searched again until no budget of 300 ms (which a
        # loaded machine misses, and only the held searches' budget is under test here) says it is behind.
        [envelope] = await caught_up_pages(mcp, {"query": "kiwiword", "mailbox": "INBOX"})
        assert envelope["data"]["total"] == 5 and not envelope["meta"].get("warnings"), envelope


@contextlib.contextmanager
def another_writer(config: Config) -> Iterator[None]:
    """Another process writing the index: the SQLite file's write lock, or the index's advisory lock
    that PostgreSQL's writers take turns on, held until the block ends."""
    if config.index.index_engine != "postgresql":  # sqlite, sqlite+tantivy: the SQLite file's lock
        writer = sqlite3.connect(index_file(Path(config.server.index_dir or "")), isolation_level=None)
        try:
            writer.execute("BEGIN IMMEDIATE")
            yield
            writer.execute("ROLLBACK")
        finally:
            writer.close()
        return
    url, password = config.index.index_url or "", index_password(config.index)
    with psycopg.connect(url, password=password) as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (writer_lock("mimx_default"),))
        yield


def writers_wait_s(store: object) -> float:
    """How long the store's writers wait for another writer (SQLite's busy timeout, PostgreSQL's
    lock_timeout of a write)."""
    if isinstance(store, PostgresStore):
        return store._writer_wait_ms / 1000
    assert isinstance(store, SqliteStore)
    return float(store._db.execute("PRAGMA busy_timeout").fetchone()[0]) / 1000


async def test_a_search_whose_index_writes_are_refused_answers_as_the_index_is(
    dovecot: MatrixServer, tmp_path: Path, index_engine: IndexEngineParam
) -> None:
    """A search that must drop a folder deleted on the server (and sync another) while another process
    holds the index's write lock waits its budget at most, then answers from the index as it is, and
    leaves the store's writers waiting as long as before."""
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", [message(i, "kiwiword") for i in range(4)])
    gone = dovecot.mailbox_name("Gone")
    dovecot.seed(user, gone, [message(20, "kiwiword")])
    async for mcp, app, config in indexed_client(
        dovecot, user, tmp_path, index_engine, index_fresh_budget_ms=300
    ):
        with other_client(dovecot, user) as other:
            other.delete_folder(gone)
            other.append("INBOX", message(50, "kiwiword"))
        with another_writer(config):
            envelope = await mcp.call(SEARCH, {"query": "kiwiword", "mailboxes": ["*"]})
        assert envelope["success"], envelope
        assert envelope["data"]["total"] == 4  # INBOX as the index holds it; the folder gone not searched
        warnings = envelope["meta"]["warnings"]
        assert any("could not be written" in w and "INBOX" in w for w in warnings), warnings
        index = app.index_of("default")
        assert index is not None
        searches = index.search_indexer()
        assert searches is not None
        assert writers_wait_s(searches.store) == WRITER_WAIT_S == 30
        # The refused write left the index usable: once the other writer is gone it takes the changes.
        # Searched again until no budget of 300 ms (the first search's, the one under test; a loaded
        # machine cannot sync INBOX within it) says it is behind.
        [envelope] = await caught_up_pages(mcp, {"query": "kiwiword", "mailboxes": ["*"]})
        assert envelope["data"]["total"] == 5 and not envelope["meta"].get("warnings"), envelope


async def test_an_index_file_locked_while_its_schema_is_made_is_unavailable_then_built(
    dovecot: MatrixServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process holding the new file's write lock when the server makes its schema: the index
    says it is unavailable and why, searches go to the server with a warning, and it is built once the
    lock is let go (it stayed "building" forever, its thread dead)."""
    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT_S", 0.2)
    monkeypatch.setattr(runtime, "RETRY_S", 0.2)
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", [message(i, "kiwiword") for i in range(3)])
    folder = tmp_path / "ix"
    folder.mkdir(mode=0o700)
    config = make_config({"default": account_settings(dovecot, user)}, index=True, index_dir=str(folder))
    identity_file(folder, config).touch(mode=0o600)
    writer = sqlite3.connect(identity_file(folder, config), isolation_level=None)
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("BEGIN IMMEDIATE")
    async for mcp in open_client(config, AppContext.from_config(config)):
        try:
            with anyio.fail_after(patient(30)):
                while not (state := await account_index(mcp)).startswith("unavailable"):
                    await anyio.sleep(0.05)
            assert "another process is writing it" in state and "locked" in state, state
            envelope = await mcp.call(SEARCH, {"query": "kiwiword"})
            assert envelope["data"]["total"] == 3
            assert any("the server answered" in w for w in envelope["meta"]["warnings"]), envelope
        finally:
            writer.execute("ROLLBACK")
            writer.close()
        with anyio.fail_after(patient(30)):  # tried again, opened and built
            while await account_index(mcp) != "ready":
                await anyio.sleep(0.05)
        envelope = await mcp.call(SEARCH, {"query": "kiwiword", "sort": "relevance"})
        assert envelope["data"]["total"] == 3 and envelope["summary"].endswith("best match first")


async def account_index(mcp: EnvelopeClient) -> str:
    state: str = (await mcp.ok("imap_list_accounts", {}))["accounts"][0]["index"]
    return state

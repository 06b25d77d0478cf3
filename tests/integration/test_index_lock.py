"""A search never waits for the index longer than its freshness budget (issue 35): when the background
sync of the same process holds the index past it, the search answers from the index as it is and says
so, as it does when another process holds the file's write lock."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import anyio
import pytest

import mail_imap_mcp.index.runtime as runtime
import mail_imap_mcp.index.sqlite_store as sqlite_store
from mail_imap_mcp.app import AppContext
from tests.integration.test_index_search import SEARCH, message, other_client
from tests.support.accounts import account_settings
from tests.support.clients import make_config, open_client
from tests.support.envelope_client import EnvelopeClient
from tests.support.index_clients import indexed_client
from tests.support.matrix import MatrixServer

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
            self.release.wait(timeout=20)

    def __enter__(self) -> Holder:
        self.thread.start()
        assert self.taken.wait(timeout=10)
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.thread.join(timeout=10)


async def test_a_search_does_not_wait_past_its_budget_for_the_background_sync(
    dovecot: MatrixServer, tmp_path: Path
) -> None:
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", [message(i, "kiwiword") for i in range(4)])
    dovecot.seed(user, dovecot.mailbox_name("Trash"), [message(30, "kiwiword")])
    async for mcp, app, _config in indexed_client(dovecot, user, tmp_path, index_fresh_budget_ms=300):
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
        warnings = envelope["meta"]["warnings"]
        assert any("not fully brought up to date" in w and "INBOX" in w for w in warnings), warnings
        assert everywhere["data"]["total"] == 4, everywhere
        assert any("not fully brought up to date" in w for w in everywhere["meta"]["warnings"]), everywhere
        # Once the lock is free, the next search is fresh again.
        envelope = await mcp.call(SEARCH, {"query": "kiwiword", "mailbox": "INBOX"})
        assert envelope["data"]["total"] == 5


async def test_a_search_whose_index_writes_are_refused_answers_as_the_index_is(
    dovecot: MatrixServer, tmp_path: Path
) -> None:
    """A search that must drop a folder deleted on the server (and sync another) while another process
    holds the file's write lock waits its budget at most, then answers from the index as it is, and
    leaves the store's writers waiting as long as before."""
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", [message(i, "kiwiword") for i in range(4)])
    gone = dovecot.mailbox_name("Gone")
    dovecot.seed(user, gone, [message(20, "kiwiword")])
    async for mcp, app, _config in indexed_client(dovecot, user, tmp_path, index_fresh_budget_ms=300):
        with other_client(dovecot, user) as other:
            other.delete_folder(gone)
            other.append("INBOX", message(50, "kiwiword"))
        writer = sqlite3.connect(tmp_path / "ix" / "default.sqlite3", isolation_level=None)
        try:
            writer.execute("BEGIN IMMEDIATE")
            envelope = await mcp.call(SEARCH, {"query": "kiwiword", "mailboxes": ["*"]})
            writer.execute("ROLLBACK")
        finally:
            writer.close()
        assert envelope["success"], envelope
        assert envelope["data"]["total"] == 4  # INBOX as the index holds it; the folder gone not searched
        warnings = envelope["meta"]["warnings"]
        assert any("could not be written" in w and "INBOX" in w for w in warnings), warnings
        index = app.index_of("default")
        assert index is not None
        searches = index.search_indexer()
        assert searches is not None
        assert searches.store._db.execute("PRAGMA busy_timeout").fetchone()[0] == 30_000  # type: ignore[attr-defined]
        envelope = await mcp.call(SEARCH, {"query": "kiwiword", "mailboxes": ["*"]})
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
    (folder / "default.sqlite3").touch(mode=0o600)
    writer = sqlite3.connect(folder / "default.sqlite3", isolation_level=None)
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("BEGIN IMMEDIATE")
    config = make_config({"default": account_settings(dovecot, user)}, index=True, index_dir=str(folder))
    async for mcp in open_client(config, AppContext.from_config(config)):
        try:
            with anyio.fail_after(30):
                while not (state := await account_index(mcp)).startswith("unavailable"):
                    await anyio.sleep(0.05)
            assert "another process is writing it" in state and "locked" in state, state
            envelope = await mcp.call(SEARCH, {"query": "kiwiword"})
            assert envelope["data"]["total"] == 3
            assert any("the server answered" in w for w in envelope["meta"]["warnings"]), envelope
        finally:
            writer.execute("ROLLBACK")
            writer.close()
        with anyio.fail_after(30):  # tried again, opened and built
            while await account_index(mcp) != "ready":
                await anyio.sleep(0.05)
        envelope = await mcp.call(SEARCH, {"query": "kiwiword", "sort": "relevance"})
        assert envelope["data"]["total"] == 3 and envelope["summary"].endswith("best match first")


async def account_index(mcp: EnvelopeClient) -> str:
    state: str = (await mcp.ok("imap_list_accounts", {}))["accounts"][0]["index"]
    return state

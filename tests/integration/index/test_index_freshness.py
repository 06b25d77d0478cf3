"""The local index's freshness check before it answers (issue 35), through a real MCP client.

Flags another client changed are current in a flag query on servers that cannot say so with a
HIGHESTMODSEQ: the IMAP4rev1-only Dovecot, Courier, and a Dovecot whose mailboxes answer ``NOMODSEQ``
(in-memory indexes: CONDSTORE advertised, no persistent MODSEQ), where the index stores a HIGHESTMODSEQ
of 0 and STATUS says nothing of flags.
"""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from mail_imap_mcp.config import Config
from mail_imap_mcp.credentials.logins import credentials_for
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.index import freshness as freshness_module
from mail_imap_mcp.index import sync as sync_module
from mail_imap_mcp.index import sync_chunks
from mail_imap_mcp.index.build import build
from mail_imap_mcp.index.freshness import Freshness, refresh
from mail_imap_mcp.index.store import FLAG_BITS
from mail_imap_mcp.index.sync import Indexer
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.index_clients import index_config, indexed_client, opened_store
from tests.support.mail.mailgen import plain_message
from tests.support.patience import patient
from tests.support.servers.matrix import MatrixServer
from tests.support.servers.postgres import (
    IndexEngineParam,
    ServerCase,
    case_fixtures,
    engine_of,
    on_engine,
)

pytestmark = pytest.mark.anyio

SEARCH = "imap_search_messages"


case, server = case_fixtures(("dovecot_rev1", "courier", "dovecot_nomodseq"), ("dovecot_rev1",))


def note(number: int) -> bytes:
    return plain_message(f"note {number}", f"the text of note {number} says kiwiword\r\n")


@pytest.fixture
async def indexed(
    request: pytest.FixtureRequest, server: MatrixServer, case: ServerCase, tmp_path: Path
) -> AsyncIterator[tuple[EnvelopeClient, str]]:
    user = server.new_user()
    server.seed(user, "INBOX", [note(i) for i in range(6)])
    async for mcp, _app, _config in indexed_client(server, user, tmp_path, engine_of(request, case[1])):
        yield mcp, user


def subjects(data: dict[str, Any]) -> set[str]:
    return {message["subject"] for message in data["messages"]}


async def test_flags_another_client_changed_are_current_without_a_modseq(
    server: MatrixServer, indexed: tuple[EnvelopeClient, str]
) -> None:
    mcp, user = indexed
    assert len((await mcp.ok(SEARCH, {"query": "kiwiword is:unread", "limit": 50}))["messages"]) == 6
    with server.connect(user, tls=False, starttls=False) as other:
        other.select_folder("INBOX")
        seen = other.search(["SUBJECT", "note 1"]) + other.search(["SUBJECT", "note 2"])
        other.add_flags(seen, [b"\\Seen"])
        other.add_flags(other.search(["SUBJECT", "note 3"]), [b"\\Flagged"])
    for _ in range(2):  # and again, with nothing changed since
        unread = await mcp.ok(SEARCH, {"query": "kiwiword is:unread", "limit": 50})
        assert subjects(unread) == {f"note {i}" for i in (0, 3, 4, 5)}
        assert unread["total"] == 4
        flagged = await mcp.ok(SEARCH, {"query": "kiwiword is:flagged", "limit": 50})
        assert subjects(flagged) == {"note 3"}


async def test_regression_a_summary_shows_the_flags_of_now_where_the_folder_keeps_no_modseq(
    server: MatrixServer, indexed: tuple[EnvelopeClient, str]
) -> None:
    # A query that tests no flag syncs no NOMODSEQ folder (its counts are the same), and its summaries
    # were built from the stored flags as if current: a message read on a phone was listed unread.
    mcp, user = indexed
    before = await mcp.ok(SEARCH, {"query": "kiwiword", "limit": 50})
    assert all(message.get("unread") for message in before["messages"])
    with server.connect(user, tls=False, starttls=False) as other:
        other.select_folder("INBOX")
        other.add_flags(other.search(["SUBJECT", "note 1"]), [b"\\Seen"])
    after = await mcp.ok(SEARCH, {"query": "kiwiword", "limit": 50})
    unread = {message["subject"] for message in after["messages"] if message.get("unread")}
    assert unread == {f"note {i}" for i in (0, 2, 3, 4, 5)}


#: A second process that takes the index's write lock (``BEGIN IMMEDIATE``), says so, and holds it
#: until its stdin closes: another server or ``mail-imap-mcp index`` in the middle of a long write.
LOCK_HOLDER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.read()
db.execute("ROLLBACK")
"""


async def test_an_index_another_process_is_writing_answers_as_it_is_and_says_so(
    dovecot: MatrixServer, tmp_path: Path
) -> None:
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", [note(i) for i in range(4)])
    async for mcp, app, _config in indexed_client(dovecot, user, tmp_path, index_fresh_budget_ms=300):
        with dovecot.connect(user, tls=False, starttls=False) as other:
            other.append("INBOX", note(50))  # the freshness check must write it into the index
        holder = subprocess.Popen(
            [sys.executable, "-c", LOCK_HOLDER, str(Path(app.indexes["default"].location.where))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
            envelope = await mcp.call(SEARCH, {"query": "kiwiword", "mailbox": "INBOX", "limit": 2})
            assert envelope["success"], envelope
            data, warnings = envelope["data"], envelope["meta"]["warnings"]
            assert data["total"] == 4  # the index as it was: the new message could not be written
            assert any("could not be written" in w and "locked" in w and "INBOX" in w for w in warnings), (
                warnings
            )
            rest = await mcp.call(
                SEARCH, {"query": "kiwiword", "mailbox": "INBOX", "cursor": data["next_cursor"]}
            )
            assert rest["success"], rest
        finally:
            assert holder.stdin is not None
            holder.stdin.close()
            holder.wait(timeout=patient(10))
        fresh = await mcp.ok(SEARCH, {"query": "kiwiword", "mailbox": "INBOX", "limit": 50})
        assert fresh["total"] == 5 and "note 50" in subjects(fresh)


async def test_an_index_found_damaged_by_a_search_hands_it_to_the_server(
    dovecot: MatrixServer, tmp_path: Path
) -> None:
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", [note(i) for i in range(4)])
    async for mcp, app, _config in indexed_client(dovecot, user, tmp_path):
        damage = sqlite3.connect(Path(app.indexes["default"].location.where))
        damage.execute(
            "UPDATE fts_data SET block = x'ffffffffffffffff' WHERE id = 10"
        )  # its structure record
        damage.commit()
        damage.close()
        envelope = await mcp.call(SEARCH, {"query": "kiwiword", "mailbox": "INBOX"})
        assert envelope["success"], envelope
        assert envelope["data"]["total"] == 4
        assert any(
            "could not be read" in w and "the server answered" in w for w in envelope["meta"]["warnings"]
        )


def catch_up(config: Config) -> None:
    """What the background sync does a minute later: the index brought up to date, beside the server."""
    connection = AccountConnection(
        "default",
        config.accounts["default"],
        credentials=credentials_for("default", config.accounts["default"]),
        enable_qresync=True,
    )
    try:
        with opened_store(config) as store:
            build(connection, Indexer(store, "default", config.server.index_text_bytes))
    finally:
        connection.close()


async def test_past_its_budget_the_total_is_about_and_every_folder_left_is_named(
    dovecot: MatrixServer, tmp_path: Path, index_engine: IndexEngineParam
) -> None:
    user = dovecot.new_user()
    archive = dovecot.mailbox_name("Archive")
    dovecot.seed(user, "INBOX", [note(i) for i in range(3)])
    dovecot.seed(user, archive, [note(i) for i in range(10, 13)])
    async for mcp, _app, config in indexed_client(
        dovecot, user, tmp_path, index_engine, index_fresh_budget_ms=0
    ):
        other = dovecot.connect(user, tls=False, starttls=False)
        try:  # the background sync comes back a minute after its build: not within this test
            other.append("INBOX", note(50))
            other.append(archive, note(51))
        finally:
            other.logout()
        first = await mcp.call(SEARCH, {"query": "kiwiword", "mailbox": "*", "limit": 4})
        data, warnings = first["data"], first["meta"]["warnings"]
        assert data["total"] == 6  # what the index holds, said as such
        assert first["summary"].startswith("1-4 of about 6"), first["summary"]
        stale = next(w for w in warnings if "not fully brought up to date" in w)
        assert "'INBOX'" in stale and repr(archive) in stale and "2 mailbox(es)" in stale, stale
        assert "The total counts the index as it is" in stale

        await anyio.to_thread.run_sync(catch_up, config)
        rest = await mcp.call(SEARCH, {"query": "kiwiword", "mailbox": "*", "cursor": data["next_cursor"]})
        assert rest["success"], rest
        # The later page lists what the first page found (the 2 messages it did not take yet), in its
        # order; the 2 the index took in since are left out, and said.
        assert rest["data"]["total"] == 6
        assert rest["summary"].startswith("5-6 of 6"), rest["summary"]
        assert any("6 matches then, 8 now" in w and "left out" in w for w in rest["meta"]["warnings"])


async def test_a_later_ranked_page_keeps_its_order_and_says_so_when_the_index_took_in_mail_though_the_total_is_the_same(
    dovecot: MatrixServer, tmp_path: Path, index_engine: IndexEngineParam
) -> None:
    # Ranks follow word counts over every message: mail that does not match still moves them, so a
    # cursor that only compared totals said nothing while its next page could repeat or skip a message;
    # the next page now lists what the first page ranked, in that order, and says the mail changed.
    # PostgreSQL's ts_rank reads the message alone: mail that does not match moves no rank, its pages go
    # on by key, and there is nothing to say (no match arrived or went).
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", [note(i) for i in range(6)])
    async for mcp, _app, _config in indexed_client(dovecot, user, tmp_path, index_engine):
        first = await mcp.call(SEARCH, {"query": "kiwiword", "sort": "relevance", "limit": 3})
        cursor = first["data"]["next_cursor"]
        quiet = await mcp.call(SEARCH, {"query": "kiwiword", "sort": "relevance", "cursor": cursor})
        assert not any("first page" in w for w in quiet["meta"]["warnings"]), quiet["meta"]["warnings"]
        with dovecot.connect(user, tls=False, starttls=False) as other:
            other.append("INBOX", plain_message("unrelated", "nothing of the query here\r\n"))
        moved = await mcp.call(SEARCH, {"query": "kiwiword", "sort": "relevance", "cursor": cursor})
        assert moved["data"]["total"] == 6
        said = any("6 matches then, 6 now" in w for w in moved["meta"]["warnings"])
        assert said == (index_engine[0] != "postgresql"), moved  # BM25 (FTS5, Tantivy) ranks move
        assert [m["message_id"] for m in moved["data"]["messages"]] == [
            m["message_id"] for m in quiet["data"]["messages"]
        ]


class SlowServer:
    """A clock that a round trip of ``UID FETCH`` moves on by ``per_round_trip`` seconds: a slow server,
    with no test waiting for it (the sync and the freshness check read this clock)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, per_round_trip: float) -> None:
        self.now = 0.0
        clock = SimpleNamespace(monotonic=lambda: self.now)
        monkeypatch.setattr(freshness_module, "time", clock)
        monkeypatch.setattr(sync_module, "time", clock, raising=False)
        monkeypatch.setattr(sync_chunks, "time", clock)
        fetch_each = ImapSession.fetch_each

        def slow_fetch_each(session: ImapSession, requests: Any) -> Any:
            self.now += per_round_trip
            return fetch_each(session, requests)

        monkeypatch.setattr(ImapSession, "fetch_each", slow_fetch_each)


@contextlib.contextmanager
def indexed_beside(
    server: MatrixServer, user: str, tmp_path: Path, engine: IndexEngineParam
) -> Iterator[tuple[Config, Indexer]]:
    config = on_engine(index_config(server, user, tmp_path), *engine)
    catch_up(config)
    with opened_store(config) as store:
        yield config, Indexer(store, "default", config.server.index_text_bytes)


def refreshed(config: Config, indexer: Indexer, *, flags_tested: bool) -> Freshness:
    connection = AccountConnection(
        "default",
        config.accounts["default"],
        credentials=credentials_for("default", config.accounts["default"]),
        enable_qresync=True,
    )
    try:
        return connection.run(
            lambda session: refresh(session, indexer, ["INBOX"], deadline=1.0, flags_tested=flags_tested)
        )
    finally:
        connection.close()


def test_one_folder_with_much_new_mail_stops_at_the_deadline(
    dovecot: MatrixServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, index_engine: IndexEngineParam
) -> None:
    """The deadline is checked inside the folder's sync: 1,000 new messages in rounds of 200, each
    round trip 0.4 s on this clock, a budget of 1 s: three rounds are indexed, the rest said."""
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", [note(i) for i in range(10)])
    with indexed_beside(dovecot, user, tmp_path, index_engine) as (config, indexer):
        dovecot.seed(user, "INBOX", [note(i) for i in range(100, 1100)])
        SlowServer(monkeypatch, per_round_trip=0.4)
        fresh = refreshed(config, indexer, flags_tested=False)
        assert fresh.stale == {"INBOX": 400}
        assert indexer.store.count() == 610


def test_a_flag_comparison_without_modseq_stops_at_the_deadline(
    dovecot_rev1: MatrixServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    index_engine: IndexEngineParam,
) -> None:
    """Without CONDSTORE a flag query compares the stored flags in bounded rounds (here 4 x 3 UIDs, 0.4
    s each on this clock) until the deadline, and says how many it could not compare."""
    user = dovecot_rev1.new_user()
    dovecot_rev1.seed(user, "INBOX", [note(i) for i in range(50)])
    with indexed_beside(dovecot_rev1, user, tmp_path, index_engine) as (config, indexer):
        other = dovecot_rev1.connect(user, tls=False, starttls=False)
        try:
            other.select_folder("INBOX")
            other.add_flags(other.search("ALL"), [b"\\Flagged"])
        finally:
            other.logout()
        monkeypatch.setattr(sync_module, "FLAG_CHUNK", 3)
        SlowServer(monkeypatch, per_round_trip=0.4)
        fresh = refreshed(config, indexer, flags_tested=True)
        assert fresh.stale == {"INBOX": 50 - 3 * 12}
        flagged = [
            uid for uid, (bits, _) in indexer.store.flags_of("INBOX").items() if bits & FLAG_BITS["flagged"]
        ]
        assert sorted(flagged) == list(range(1, 37))

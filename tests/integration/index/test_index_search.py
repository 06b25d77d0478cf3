"""imap_search_messages answered by the local index, through a real MCP client, on every server of the
matrix and the IMAP4rev1-only Dovecot with SQLite, and with PostgreSQL and sqlite+tantivy on Dovecot (the
tests on Dovecot alone run on each engine; that the engines keep and find alike after any writes, in
folders named as each server names them, is test_index_store_contract's, store to store).

A query is answered ranked from the index once it is built (``imap_list_accounts`` says ``ready``), with
the summaries and message ids the server gives (they open with imap_get_message); before that, or when
the index is unusable or cannot be written, the server answers and ``meta.warnings`` says why. Fresh at
query time: a message another client appended a moment before is found, an expunged one is not
returned, flags are current; a property test compares the index's answer with the server's own SEARCH
after random appends, flag changes, moves and expunges by another client.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.index.engines.sqlite.store import SqliteStore
from mail_imap_mcp.index.store import IndexWriteFailed
from tests.support.accounts import account_settings
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.clients.index_clients import identity_file, index_config, indexed_client, wait_ready
from tests.support.mail.random_changes import random_change
from tests.support.servers.matrix import MATRIX, MatrixServer
from tests.support.servers.postgres import IndexEngineParam, ServerCase, case_fixtures, engine_of, on_engine
from tests.support.shared.index_search import SEARCH, message, other_client

pytestmark = pytest.mark.anyio

#: Words no other text of the generated mail holds, even as part of a word (IMAP SEARCH matches
#: substrings, the index whole words: with these both mean the same).
WORDS = ("kiwiword", "mangoword", "papayaword")


#: The servers of ``indexed``: every one with SQLite; PostgreSQL and sqlite+tantivy end to end on Dovecot.
#: Their sync after another client's changes on the other paths (Courier's flags compared in full, the
#: IMAP4rev1-only Dovecot) is test_index_concurrent's; their answers after any writes, in every way of
#: naming folders, test_index_store_contract's.
case, server = case_fixtures((*MATRIX, "dovecot_rev1"), ("dovecot",), ("dovecot",))


@pytest.fixture
async def indexed(
    request: pytest.FixtureRequest, server: MatrixServer, case: ServerCase, tmp_path: Path
) -> AsyncIterator[tuple[EnvelopeClient, MatrixServer, str, AppContext]]:
    index_engine = engine_of(request, case[1])
    user = server.new_user()
    server.seed(
        user,
        "INBOX",
        [message(i, WORDS[i % 3]) for i in range(12)],
        flags=lambda i: "\\Seen" if i % 4 == 0 else "",
    )
    async for mcp, app, _config in indexed_client(server, user, tmp_path, index_engine):
        yield mcp, server, user, app


def uids_of(data: dict[str, Any], mailbox: str = "INBOX") -> set[int]:
    return {
        int(m["message_id"].rsplit(":", 1)[1])
        for m in data["messages"]
        if m["message_id"].split(":")[2] == mailbox
    }


async def test_a_query_is_ranked_fresh_and_its_ids_open(
    indexed: tuple[EnvelopeClient, MatrixServer, str, AppContext],
) -> None:
    mcp, server, user, _ = indexed
    envelope = await mcp.call(
        SEARCH, {"query": "kiwiword", "mailbox": "INBOX", "sort": "relevance", "fields": "full"}
    )
    data = envelope["data"]
    assert envelope["summary"].endswith("best match first"), envelope["summary"]
    assert data["total"] == 4
    # The word in the subject (odd numbers) ranks above the word in the body alone.
    subjects = [m["subject"] for m in data["messages"]]
    assert all("kiwiword" in s for s in subjects[:2]) and not any("kiwiword" in s for s in subjects[2:])
    assert all("kiwiword" in m["snippet"] for m in data["messages"])
    opened = await mcp.ok("imap_get_message", {"message_id": data["messages"][0]["message_id"]})
    assert "kiwiword" in json.dumps(opened)

    with other_client(server, user) as other:
        other.append("INBOX", message(100, "kiwiword"))  # a moment before the search
        other.select_folder("INBOX")
        gone = other.search(["SUBJECT", "note 9 "]) or other.search(["SUBJECT", "note 9"])
        other.add_flags(gone, [b"\\Deleted"])
        other.expunge()
        fresh = await mcp.ok(SEARCH, {"query": "kiwiword", "mailbox": "INBOX", "limit": 50})
        server_says = set(other.search(["TEXT", "kiwiword"]))
        assert uids_of(fresh) == server_says
        assert not set(gone) & uids_of(fresh)
        unread = await mcp.ok(
            SEARCH, {"query": "kiwiword", "mailbox": "INBOX", "unread_only": True, "limit": 50}
        )
        assert uids_of(unread) == set(other.search(["TEXT", "kiwiword", "UNSEEN"]))

    page = await mcp.ok(SEARCH, {"query": "note", "limit": 5})
    rest = await mcp.ok(SEARCH, {"query": "note", "limit": 5, "cursor": page["next_cursor"]})
    assert not {m["message_id"] for m in page["messages"]} & {m["message_id"] for m in rest["messages"]}
    by_date = await mcp.ok(SEARCH, {"query": "note", "sort": "date", "limit": 20, "fields": "full"})
    dates = [m["date"] for m in by_date["messages"]]
    assert dates == sorted(dates, reverse=True)


async def test_before_the_index_is_built_the_server_answers_and_says_so(
    dovecot: MatrixServer, tmp_path: Path, index_engine: IndexEngineParam
) -> None:
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", [message(i, "kiwiword") for i in range(5)])
    config = on_engine(index_config(dovecot, user, tmp_path), *index_engine)
    app = AppContext.from_config(config)
    index = app.indexes["default"]
    index.lock.acquire()  # the build waits for it: the index stays "building"
    held = True
    try:
        async for mcp in open_client(config, app):
            state = (await mcp.ok("imap_list_accounts", {}))["accounts"][0]["index"]
            assert state.startswith("building")
            envelope = await mcp.call(SEARCH, {"query": "kiwiword", "limit": 3})
            assert envelope["data"]["total"] == 5
            assert any("not ready" in w and "the server answered" in w for w in envelope["meta"]["warnings"])
            first = {m["message_id"] for m in envelope["data"]["messages"]}
            index.lock.release()
            held = False
            assert await wait_ready(mcp) == "ready"
            # The server's cursor goes on with the server, not with the index's first page.
            rest = await mcp.ok(
                SEARCH, {"query": "kiwiword", "limit": 3, "cursor": envelope["data"]["next_cursor"]}
            )
            assert len(rest["messages"]) == 2 and not first & {m["message_id"] for m in rest["messages"]}
            ranked = await mcp.call(SEARCH, {"query": "kiwiword", "sort": "relevance"})
            assert ranked["data"]["total"] == 5 and ranked["summary"].endswith("best match first")
    finally:
        if held:
            index.lock.release()


async def test_a_corrupt_index_is_moved_aside_and_rebuilt_with_a_warning(
    dovecot: MatrixServer, tmp_path: Path
) -> None:
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", [message(i, "mangoword") for i in range(3)])
    folder = tmp_path / "ix"
    folder.mkdir(mode=0o700)
    config = make_config({"default": account_settings(dovecot, user)}, index=True, index_dir=str(folder))
    identity_file(folder, config).write_bytes(b"\x00garbage, not SQLite" * 100)
    os.chmod(identity_file(folder, config), 0o600)
    async for mcp in open_client(config, AppContext.from_config(config)):
        assert await wait_ready(mcp) == "ready"
        envelope = await mcp.call(SEARCH, {"query": "mangoword"})
        assert envelope["data"]["total"] == 3
        assert any("moved to" in w for w in envelope["meta"]["warnings"])
    assert not [p for p in folder.iterdir() if ".unusable-" in p.name]  # deleted once built again


async def test_an_index_that_cannot_be_written_stops_and_the_server_answers(
    dovecot: MatrixServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", [message(i, "papayaword") for i in range(3)])

    def full(self: SqliteStore, *args: object, **kwargs: object) -> None:
        raise IndexWriteFailed("database or disk is full")

    monkeypatch.setattr(SqliteStore, "put", full)
    config = index_config(dovecot, user, tmp_path)
    async for mcp in open_client(config, AppContext.from_config(config)):
        state = await wait_ready(mcp)
        assert state.startswith("unavailable") and "disk is full" in state
        envelope = await mcp.call(SEARCH, {"query": "papayaword"})
        assert envelope["data"]["total"] == 3
        assert any("unavailable" in w and "the server answered" in w for w in envelope["meta"]["warnings"])


async def test_property_the_index_answers_what_the_server_searches_after_another_clients_changes(
    indexed: tuple[EnvelopeClient, MatrixServer, str, AppContext],
) -> None:
    mcp, server, user, _ = indexed
    other_box = server.mailbox_name("Moved")
    rng = random.Random(35)
    imap = other_client(server, user)
    try:
        server.ensure_mailbox(imap, other_box)
        number = 1000
        for _ in range(6):
            for _ in range(rng.randint(1, 4)):
                number += 1
                random_change(imap, rng, "INBOX", other_box, partial(message, number, rng.choice(WORDS)))
            word = rng.choice(WORDS)
            for extra, keys in (
                ({}, []),
                ({"unread_only": True}, ["UNSEEN"]),
                ({"flagged": True}, ["FLAGGED"]),
            ):
                for mailbox in ("INBOX", other_box):
                    found = await mcp.ok(SEARCH, {"query": word, "mailbox": mailbox, "limit": 100, **extra})
                    imap.select_folder(mailbox, readonly=True)
                    assert uids_of(found, mailbox) == set(imap.search(["TEXT", word, *keys])), (
                        word,
                        extra,
                        mailbox,
                    )
    finally:
        imap.logout()


async def test_past_its_budget_the_index_answers_as_it_is_and_says_how_stale(
    dovecot: MatrixServer, tmp_path: Path, index_engine: IndexEngineParam
) -> None:
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", [message(i, "kiwiword") for i in range(4)])
    async for mcp, _app, _config in indexed_client(
        dovecot, user, tmp_path, index_engine, index_fresh_budget_ms=0
    ):
        # The background sync comes back a minute after its build: not within this test.
        with other_client(dovecot, user) as other:
            other.append("INBOX", message(50, "kiwiword"))
        envelope = await mcp.call(SEARCH, {"query": "kiwiword", "mailbox": "INBOX"})
        assert envelope["data"]["total"] == 4  # the new message is not in the index yet
        assert any(
            "not fully brought up to date" in w and "INBOX" in w for w in envelope["meta"]["warnings"]
        ), envelope["meta"]["warnings"]

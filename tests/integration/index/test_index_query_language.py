"""The query language answered by the local index equals the same query answered by the server, for
every operator and scope, on every server of the matrix and the IMAP4rev1-only Dovecot with SQLite, and
with PostgreSQL and sqlite+tantivy on Dovecot: that the three engines find the same messages for every
query, in folders named as each server names them, is test_index_store_contract's (store to store).

One user's mail (the scenario of ``test_query_language``: words, phrases, senders, Cc, flags, arrival
dates, sizes, attachments, an archive, Trash and Junk) is searched through two accounts of one MCP
server: ``indexed`` keeps a local index, ``plain`` does not, so each query is answered once from the index
(ranked: "best match first") and once by the server's SEARCH. The messages found must be the same."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mail_imap_mcp.app import AppContext
from tests.support.accounts import account_settings
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.patience import patient
from tests.support.servers.matrix import MATRIX, MatrixServer
from tests.support.servers.postgres import IndexEngineParam, case_fixtures, case_index_engine, on_engine
from tests.support.shared.index_query_language import QUERIES
from tests.support.shared.query_language import seed

pytestmark = pytest.mark.anyio

SEARCH = "imap_search_messages"


#: Every server with SQLite; PostgreSQL and sqlite+tantivy end to end on Dovecot (the engines' answers
#: to every query, in each way of naming folders, are compared store to store: test_index_store_contract).
case, server = case_fixtures((*MATRIX, "dovecot_rev1"), ("dovecot",), ("dovecot",))
index_engine = case_index_engine


@pytest.fixture
async def both(
    server: MatrixServer, tmp_path: Path, index_engine: IndexEngineParam
) -> AsyncIterator[EnvelopeClient]:
    user = server.new_user()
    seed(server, user)
    accounts: dict[str, Any] = {
        "indexed": account_settings(server, user, index=True),
        "plain": account_settings(server, user),
    }
    config = on_engine(make_config(accounts, index_dir=str(tmp_path / "ix")), *index_engine)
    async for mcp in open_client(config, AppContext.from_config(config)):
        with anyio.fail_after(patient(60)):
            while True:
                listed = (await mcp.ok("imap_list_accounts", {}))["accounts"]
                if {a["account_id"]: a["index"] for a in listed} == {"indexed": "ready", "plain": "off"}:
                    break
                await anyio.sleep(0.05)
        yield mcp


def places(data: dict[str, Any]) -> set[tuple[str, int]]:
    """(mailbox, UID) of each message found (the message ids differ by account)."""
    return {(m["message_id"].split(":")[2], int(m["message_id"].rsplit(":", 1)[1])) for m in data["messages"]}


async def test_every_operator_from_the_index_equals_the_servers_answer(both: EnvelopeClient) -> None:
    for query in QUERIES:
        indexed = await both.call(
            SEARCH, {"account_id": "indexed", "query": query, "sort": "relevance", "limit": 50}
        )
        plain = await both.ok(SEARCH, {"account_id": "plain", "query": query, "limit": 50})
        assert indexed["success"], (query, indexed)
        assert indexed["summary"].endswith("best match first"), (query, indexed["summary"], indexed["meta"])
        assert places(indexed["data"]) == places(plain), query
        # The index counts exactly; the server's total is its candidates' (attachment tests) or an
        # estimate (several mailboxes without SORT), so it is not compared.
        assert indexed["data"]["total"] == len(indexed["data"]["messages"]), query


async def test_a_test_the_index_cannot_answer_is_answered_by_the_server_and_said(
    both: EnvelopeClient,
) -> None:
    indexed = await both.call(SEARCH, {"account_id": "indexed", "query": "bcc:nobody budget", "limit": 50})
    plain = await both.ok(SEARCH, {"account_id": "plain", "query": "bcc:nobody budget", "limit": 50})
    assert places(indexed["data"]) == places(plain) == set()
    assert any("cannot answer" in w and "bcc" in w for w in indexed["meta"]["warnings"])

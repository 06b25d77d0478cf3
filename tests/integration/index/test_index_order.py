"""The order of imap_search_messages' pages is the same whichever answers, the server or the local index.

A search with ``query`` and no ``sort`` is in arrival order, with or without an index (issue 47, item
7): one mailbox by UID, newest first; several by INTERNALDATE, then the mailbox's place in the searched
list, then UID. So the index lists the same ids in the same order as the server, page after page, and
its order does not change when a build finishes. ``sort: "relevance"`` asks for ranking; without an
index the server answers in arrival order and ``meta.warnings`` says so.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from tests.support.accounts import account_settings
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.clients.index_clients import indexed_client
from tests.support.mail.mailgen import plain_message
from tests.support.servers.matrix import MATRIX, MatrixServer
from tests.support.servers.postgres import (
    IndexEngineParam,
    case_fixtures,
    case_index_engine,
)

pytestmark = pytest.mark.anyio

SEARCH = "imap_search_messages"
BASE = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


case, server = case_fixtures(MATRIX, ("dovecot",))
index_engine = case_index_engine


def seed(server: MatrixServer, user: str) -> None:
    """Two folders whose arrival times interleave, several messages sharing one second, Date headers in
    the reverse of arrival, and in INBOX a message filed last (highest UID) with the oldest arrival."""
    for folder, count, offset in (("INBOX", 9, 0), ("Archive", 7, 1)):
        arrivals = [BASE + dt.timedelta(minutes=(2 * i + offset) // 3) for i in range(count)]
        if folder == "INBOX":
            arrivals[-1] = BASE - dt.timedelta(days=30)
        server.seed(
            user,
            server.mailbox_name(folder),
            [
                plain_message(
                    f"{folder} note {i}",
                    f"orderword {i}\r\n",
                    date=BASE - dt.timedelta(hours=i),
                    message_id=f"<{folder}{i}@order.test>",
                )
                for i in range(count)
            ],
            internaldates=arrivals,
        )


async def every_page(mcp: EnvelopeClient, arguments: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The message ids of every page of the search, in order, and the pages' summaries."""
    ids: list[str] = []
    summaries: list[str] = []
    cursor: str | None = None
    while True:
        envelope = await mcp.call(SEARCH, {**arguments, "limit": 4, **({"cursor": cursor} if cursor else {})})
        assert envelope["success"], envelope
        summaries.append(envelope["summary"])
        ids += [m["message_id"] for m in envelope["data"]["messages"]]
        cursor = envelope["data"].get("next_cursor")
        if not cursor:
            return ids, summaries


async def test_a_query_without_sort_is_in_arrival_order_the_same_from_the_index_and_the_server(
    server: MatrixServer, tmp_path: Path, index_engine: IndexEngineParam
) -> None:
    user = server.new_user()
    seed(server, user)
    searches: list[dict[str, Any]] = [
        {"query": "orderword"},
        {"query": "orderword", "mailboxes": [server.mailbox_name("Archive"), "INBOX"]},
        {"query": "orderword", "mailbox": "INBOX"},
    ]
    plain = make_config({"default": account_settings(server, user)})
    by_server = []
    async for mcp in open_client(plain):
        for arguments in searches:
            by_server.append(await every_page(mcp, arguments))
        unranked = await mcp.call(SEARCH, {"query": "orderword", "sort": "relevance", "limit": 3})
        assert any("relevance" in w and "arrival order" in w for w in unranked["meta"]["warnings"])
    async for mcp, _app, _config in indexed_client(server, user, tmp_path, index_engine):
        for arguments, (server_ids, _) in zip(searches, by_server, strict=True):
            index_ids, summaries = await every_page(mcp, arguments)
            assert index_ids == server_ids, arguments
            assert not any("best match" in summary for summary in summaries)
        ranked = await mcp.call(SEARCH, {"query": "orderword", "sort": "relevance", "limit": 3})
        assert ranked["summary"].endswith("best match first"), ranked["summary"]

    everything, across, inbox = ([place(i) for i in ids] for ids, _ in by_server)
    assert len(everything) == 16 and sorted(across) == sorted(everything)
    # Several mailboxes: INTERNALDATE newest first, then the place in the list, then UID: the newest
    # minute holds INBOX 7 and 8 and Archive 7; the message filed last in INBOX (9) arrived first.
    archive = server.mailbox_name("Archive")
    assert across[:3] == [(archive, 7), ("INBOX", 7), ("INBOX", 8)]
    assert everything[:3] == [("INBOX", 7), ("INBOX", 8), (archive, 7)]
    assert everything[-1] == ("INBOX", 9)
    # One mailbox: by UID, newest first, whatever the arrival times say.
    assert [uid for _, uid in inbox] == list(range(9, 0, -1))


def place(message_id: str) -> tuple[str, int]:
    """The mailbox and UID a message id names."""
    return message_id.split(":")[2], int(message_id.rsplit(":", 1)[1])

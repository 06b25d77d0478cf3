"""A folder another client deletes while the index answers a search of several folders (issue 47, item
11): the page is answered from the other folders and an issue names the one gone, as the server's
search of every mailbox answers, where the whole search failed with ``not_found``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.index import freshness
from mail_imap_mcp.index.sync import Indexer
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


case, server = case_fixtures(MATRIX, ("dovecot",))
index_engine = case_index_engine


def fig(number: int) -> bytes:
    return plain_message(f"fig {number}", f"figword number {number}")


@pytest.mark.parametrize("mailboxes", [None, "both"])
async def test_a_folder_deleted_between_the_listing_and_its_sync_is_an_issue_and_the_rest_is_answered(
    server: MatrixServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    mailboxes: str | None,
    index_engine: IndexEngineParam,
) -> None:
    """The folder has new mail (so the search's freshness check syncs it) and a second client deletes
    it after the index listed the mailboxes, right before its sync opens it: the page has INBOX's
    matches, ``status: partial`` and an issue naming the folder; a search of every mailbox
    (``mailbox: "*"``) and one naming both folders alike."""
    user = server.new_user()
    doomed = server.mailbox_name("Doomed")
    server.seed(user, "INBOX", [fig(i) for i in range(3)])
    server.seed(user, doomed, [fig(i) for i in range(10, 14)])
    other = server.connect(user, tls=False, starttls=False)
    real_sync = freshness.sync_folder_now

    def delete_first(session: ImapSession, indexer: Indexer, name: str, **options: Any) -> int:
        if name == doomed:
            other.delete_folder(doomed)
        return real_sync(session, indexer, name, **options)

    try:
        async for mcp, _app, _config in indexed_client(server, user, tmp_path, index_engine):
            other.append(doomed, fig(14))  # the folder changed: the next search syncs it
            monkeypatch.setattr(freshness, "sync_folder_now", delete_first)
            where = {"mailbox": "*"} if mailboxes is None else {"mailboxes": ["INBOX", doomed]}
            envelope = await mcp.call(SEARCH, {"query": "figword", **where, "limit": 50})
            assert envelope["success"], envelope
            data = envelope["data"]
            assert data["status"] == "partial"
            assert {m["message_id"].split(":")[2] for m in data["messages"]} == {"INBOX"}
            assert data["total"] == 3 and len(data["messages"]) == 3
            [issue] = data["issues"]
            assert issue["stage"] == "search" and repr(doomed) in issue["message"]
            assert issue["code"] == "not_found"
    finally:
        other.logout()

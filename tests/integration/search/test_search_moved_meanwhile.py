"""A cursor walk of every mailbox while another client moves a message of the page being read.

Without the local index, a message moved to another searched mailbox between the page's search and its
FETCH was reported on that page as "UID n was expunged while the page was being read" and then never
listed in its new mailbox, whose place in the order (MOVE and COPY keep INTERNALDATE) the cursor had
passed. The move is made by a hook at that exact moment (no timing luck): every message must be listed
exactly once, in one of its two places.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from mail_imap_mcp.services import search as search_service
from tests.support.clients.in_process import AccountFactory, make_config, open_client
from tests.support.mail.mail_state import move_last
from tests.support.mail.mailgen import plain_message
from tests.support.servers.matrix import MatrixServer

pytestmark = pytest.mark.anyio

START = dt.datetime(2026, 1, 5, 9, 0, tzinfo=dt.UTC)


def messages(label: str, count: int) -> list[bytes]:
    return [
        plain_message(f"{label} {i}", "Text.\n", message_id=f"<{label}-{i}@moved.test>") for i in range(count)
    ]


@pytest.mark.parametrize("imap_server", ["dovecot", "courier"], indirect=True)
async def test_a_message_moved_while_its_page_is_read_is_listed_exactly_once(
    imap_server: MatrixServer, user: str, account: AccountFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = imap_server
    archive = server.mailbox_name("Archive")
    # Interleaved arrivals: INBOX at even hours, Archive at odd ones.
    server.seed(
        user, "INBOX", messages("inbox", 12), internaldates=lambda i: START + dt.timedelta(hours=2 * i)
    )
    server.seed(
        user, archive, messages("archive", 12), internaldates=lambda i: START + dt.timedelta(hours=2 * i + 1)
    )
    original = search_service.page_summaries
    moved: list[int] = []

    def move_one_then_read(read_each: Any, page: Any, *args: Any) -> Any:
        inbox = [uid for mailbox, _, uid in page.picks if mailbox == "INBOX"]
        if not moved and len(inbox) >= 2:
            uid = inbox[-1]  # the last INBOX message of this page, at another client's hand now
            with server.connect(user) as other:
                other.select_folder("INBOX")
                other.copy([uid], archive)
                other.delete_messages([uid])
                other.expunge()
            moved.append(uid)
        return original(read_each, page, *args)

    monkeypatch.setattr(search_service, "page_summaries", move_one_then_read)
    listed: list[str] = []
    async for mcp in open_client(make_config({"default": account(user)})):
        arguments: dict[str, Any] = {"mailbox": "*", "limit": 5}
        for _ in range(10):
            data = await mcp.ok("imap_search_messages", arguments)
            listed += [message["subject"] for message in data["messages"]]
            assert not [issue for issue in data.get("issues", []) if "expunged" in issue["message"]], data
            if not data.get("next_cursor"):
                break
            arguments = {**arguments, "cursor": data["next_cursor"]}
    assert moved, "the hook never ran"
    expected = sorted([f"inbox {i}" for i in range(12)] + [f"archive {i}" for i in range(12)])
    assert sorted(listed) == expected, listed


async def test_a_message_moved_behind_the_walk_between_pages_is_listed_or_said(
    imap_server: MatrixServer, user: str, account: AccountFactory
) -> None:
    """Issue 56 item 13: messages of three mailboxes share one arrival time (a whole import, or mail
    appended within one second), so the order breaks the tie by mailbox, then UID. Between two pages
    another client moves a message of the last mailbox, not listed yet, into INBOX, whose part of the tie
    the walk has passed (MOVE keeps INTERNALDATE): it was never listed, and no page said so. Every message
    must be listed, or the page after the move must say that one filed meanwhile is not."""
    server = imap_server
    work, zeta = server.mailbox_name("Work"), server.mailbox_name("Zeta")
    for label, mailbox in (("inbox", "INBOX"), ("work", work), ("zeta", zeta)):
        server.seed(user, mailbox, messages(label, 4), internaldates=lambda _: START)
    listed: list[str] = []
    said: list[str] = []
    async for mcp in open_client(make_config({"default": account(user)})):
        arguments: dict[str, Any] = {"mailbox": "*", "limit": 6}
        data = await mcp.ok("imap_search_messages", arguments)
        listed += [message["subject"] for message in data["messages"]]
        assert listed[:4] == [f"inbox {i}" for i in range(4)] and len(listed) == 6, listed
        move_last(server, user, zeta, "INBOX")  # "zeta 3": not listed yet
        while data.get("next_cursor"):
            data = await mcp.ok("imap_search_messages", {**arguments, "cursor": data["next_cursor"]})
            listed += [message["subject"] for message in data["messages"]]
            said += [issue["code"] for issue in data.get("issues", [])]
    everything = [f"{label} {i}" for label in ("inbox", "work", "zeta") for i in range(4)]
    assert len(listed) == len(set(listed)), listed
    if set(listed) != set(everything):
        assert set(everything) - set(listed) == {"zeta 3"}, listed
        assert said == ["filed_meanwhile"], said

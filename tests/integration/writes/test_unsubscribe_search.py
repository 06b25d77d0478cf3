"""Issue 60's "Done when", end to end on a real Dovecot: an agent archives every newsletter of a year (a
search) and unsubscribes from two lists, one approval each (``action: "unsubscribe"`` with ``query`` and
``destination_mailbox``), through a client with MCP elicitation and through Claude Desktop's path (no
elicitation: the approval page, read and pressed in headless Chromium). The local HTTPS one-click server
(a test CA, reached through the test-only loopback allowance) records exactly the POSTs approved; the
Message-IDs of every mailbox, counted before and after, prove nothing else moved.

INBOX holds 2024's newsletters of two lists (6 of "Weekly News", 4 of "Daily Deals"), one 2025 issue of
"Weekly News" (outside the year: left alone) and 5 messages of people."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from mcp_types import ElicitRequestParams, ElicitResult

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.asking.page import approval_page
from mail_imap_mcp.net.one_click import ONE_CLICK_BODY
from tests.support.accounts import account_settings
from tests.support.clients import chromium
from tests.support.clients.elicitation import answering
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.mail.mail_state import message_id_counts
from tests.support.mail.mailgen import plain_message
from tests.support.patience import eventually_async
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.one_click_server import LIST_HOST, OneClickServer, one_click_server
from tests.support.shared.unsubscribe import AUTHSERV, TOOL, _decided, client, list_message

pytestmark = pytest.mark.anyio

#: Each list: its sender's local part, name, one-click path, and its messages of 2024.
LISTS = {"weekly": ("Weekly News", "/ok?u=weekly", 6), "deals": ("Daily Deals", "/ok?u=deals", 4)}
IN_2024 = dt.datetime(2024, 6, 1, 12, tzinfo=dt.UTC)


def _issue(sender: str, n: int, year: int) -> bytes:
    name, path, _ = LISTS[sender]
    return list_message(f"{sender}-{year}-{n}", f"<https://{LIST_HOST}{path}>", name=name, sender=sender)


def _seeded(dovecot: Dovecot) -> tuple[str, dict[str, Any], dict[str, Counter[str]]]:
    """A new user with the messages above, their settings, and the Message-IDs of each mailbox."""
    user = dovecot.new_user()
    messages, dates = [], []
    for sender, (_, _, count) in LISTS.items():
        for n in range(count):
            messages.append(_issue(sender, n, 2024))
            dates.append(IN_2024 + dt.timedelta(days=n))
    messages.append(_issue("weekly", 0, 2025))
    dates.append(dt.datetime(2025, 2, 1, 12, tzinfo=dt.UTC))
    for n in range(5):
        messages.append(plain_message(f"Lunch {n}", "x", message_id=f"<lunch-{n}@t>"))
        dates.append(IN_2024)
    dovecot.seed(user, "INBOX", messages, internaldates=dates)
    for box in ("Archive", "Trash"):
        dovecot.seed(user, box, [])
    return user, account_settings(dovecot, user, authserv_id=AUTHSERV), _counts(dovecot, user)


def _of_2024(sender: str) -> Counter[str]:
    return Counter(f"<{sender}-2024-{n}@t>" for n in range(LISTS[sender][2]))


def _counts(dovecot: Dovecot, user: str) -> dict[str, Counter[str]]:
    return {box: +ids for box, ids in message_id_counts(dovecot, user).items() if +ids}


def _call(sender: str, **more: Any) -> dict[str, Any]:
    query = f"from:{sender}@{LIST_HOST} after:2024/1/1 before:2025/1/1"
    return {
        "action": "unsubscribe",
        "query": query,
        "mailbox": "INBOX",
        "destination_mailbox": "Archive",
        **more,
    }


@pytest.fixture
def lists() -> Iterator[OneClickServer]:
    with one_click_server() as server:
        server.names = {LIST_HOST: ["127.0.0.1"]}
        yield server


def _app(settings: dict[str, Any], lists: OneClickServer) -> AppContext:
    config = make_config({"default": settings}, unsubscribe_enabled=True, write_enabled=True)
    app = AppContext.from_config(config)
    app.one_click = lists.client()
    return app


async def _archive_and_leave(
    mcp: EnvelopeClient, decided: Callable[[dict[str, Any]], Any]
) -> list[dict[str, Any]]:
    """Per list: the dry run (nothing asked, nothing sent), then the call the user approves once."""
    done = []
    for sender, (name, _, count) in LISTS.items():
        dry = await mcp.ok(TOOL, _call(sender, dry_run=True))
        (offered,) = dry["lists"]
        assert (offered["list_name"], offered["way"], offered["outcome"], dry["moved"]) == (
            name,
            "one_click",
            "would_do",
            0,
        )
        result, error = await decided(await mcp.call(TOOL, _call(sender)))
        assert error is None, error
        (left,) = result["lists"]
        assert (left["outcome"], left["status"], result["moved"]) == ("unsubscribed", 200, count)
        assert result["undo"] and result["undo"][0]["tool"] == TOOL
        done.append(result)
    return done


def _archived_exactly_the_years_newsletters(
    dovecot: Dovecot, user: str, start: dict[str, Counter[str]], lists: OneClickServer
) -> None:
    moved = _of_2024("weekly") + _of_2024("deals")
    after = _counts(dovecot, user)
    assert after == {"INBOX": start["INBOX"] - moved, "Archive": moved}
    assert "<weekly-2025-0@t>" in after["INBOX"] and sum(after["INBOX"].values()) == 6
    assert [(r.method, r.path, r.body) for r in lists.requests] == [
        ("POST", "/ok?u=weekly", ONE_CLICK_BODY),
        ("POST", "/ok?u=deals", ONE_CLICK_BODY),
    ]


async def test_a_client_with_elicitation_archives_a_years_newsletters_and_leaves_two_lists(
    dovecot: Dovecot, lists: OneClickServer
) -> None:
    user, settings, start = _seeded(dovecot)
    declined = answering("decline")
    async with client(settings, lists, declined) as mcp:
        await mcp.fail(TOOL, _call("weekly"), "confirmation_required")
    assert lists.requests == [] and lists.connections == [] and _counts(dovecot, user) == start
    accepted = answering("accept")

    async def answered(envelope: dict[str, Any]) -> Any:
        return envelope.get("data"), envelope.get("error")

    async with client(settings, lists, accepted) as mcp:
        await _archive_and_leave(mcp, answered)
    assert len(accepted.asked) == 2, accepted.asked  # one approval per list, the move in it
    for question, (name, _, count) in zip(accepted.asked, LISTS.values(), strict=True):
        assert name in question and LIST_HOST in question and "after:2024/1/1" in question
        assert f"move the {count} message(s) to 'Archive'" in question
    _archived_exactly_the_years_newsletters(dovecot, user, start, lists)


@pytest.mark.skipif(not chromium.installed(), reason="chromium and chromium-driver are not installed")
async def test_claude_desktops_path_archives_a_years_newsletters_and_leaves_two_lists_on_the_page(
    dovecot: Dovecot, lists: OneClickServer
) -> None:
    user, settings, start = _seeded(dovecot)
    app = _app(settings, lists)
    pages: list[str] = []

    def user_presses_send(url: str) -> bool:
        shown, _ = chromium.answer_approval(url, "approve")
        pages.append(shown)
        return True

    app.approval_page = approval_page(user_presses_send, timeout_s=60)
    async for mcp in open_client(app.config, app):  # no elicitation: the page asks

        async def decided(envelope: dict[str, Any], mcp: EnvelopeClient = mcp) -> Any:
            return await _decided(mcp, envelope)

        await _archive_and_leave(mcp, decided)

    async def both_pages_read() -> bool:
        return len(pages) == 2

    await eventually_async(both_pages_read, within=30)
    for page, (name, _, count) in zip(pages, LISTS.values(), strict=True):
        assert name in page and LIST_HOST in page and f"move the {count} message(s) to 'Archive'" in page
    _archived_exactly_the_years_newsletters(dovecot, user, start, lists)


async def test_a_newsletter_arriving_while_the_user_decides_is_left_alone_and_said(
    dovecot: Dovecot, lists: OneClickServer
) -> None:
    user, settings, _ = _seeded(dovecot)
    asked: list[str] = []

    async def arriving(context: Any, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        late = _issue("deals", 99, 2024)
        dovecot.seed(user, "INBOX", [late], internaldates=[IN_2024])
        return ElicitResult(action="accept", content={"confirm": True})

    async with client(settings, lists, arriving) as mcp:
        envelope = await mcp.call(TOOL, _call("deals"))
    assert envelope["success"], envelope
    assert envelope["data"]["moved"] == 4 and len(asked) == 1 and "move the 4 message(s)" in asked[0]
    warnings = envelope["meta"]["warnings"]
    assert any("came to match" in warning for warning in warnings), warnings
    after = _counts(dovecot, user)
    assert after["Archive"] == _of_2024("deals") and "<deals-2024-99@t>" in after["INBOX"]
    assert [r.path for r in lists.requests] == ["/ok?u=deals"]


async def test_given_ids_are_left_and_moved_in_one_approval_and_the_move_undone(
    dovecot: Dovecot, lists: OneClickServer
) -> None:
    user, settings, start = _seeded(dovecot)
    accepted = answering("accept")
    async with client(settings, lists, accepted) as mcp:
        found = await mcp.ok("imap_search_messages", {"mailbox": "INBOX", "limit": 50, "fields": "full"})
        ids = {m["subject"]: m["message_id"] for m in found["messages"]}
        chosen = [ids["weekly-2024-0"], ids["weekly-2024-1"], ids["deals-2024-0"]]
        arguments = {"action": "unsubscribe", "message_ids": chosen, "destination_mailbox": "Archive"}
        done = await mcp.ok(TOOL, arguments)
        assert sorted(left["list_name"] for left in done["lists"]) == ["Daily Deals", "Weekly News"]
        assert done["moved"] == 3 and len(accepted.asked) == 1
        moved = Counter(["<weekly-2024-0@t>", "<weekly-2024-1@t>", "<deals-2024-0@t>"])
        assert _counts(dovecot, user) == {"INBOX": start["INBOX"] - moved, "Archive": moved}
        (undo,) = done["undo"]
        await mcp.ok(undo["tool"], undo["arguments"])
    assert _counts(dovecot, user) == start
    assert sorted(r.path for r in lists.requests) == ["/ok?u=deals", "/ok?u=weekly"]


async def test_a_search_that_finds_nothing_asks_nothing_and_says_so_without_a_dangling_colon(
    dovecot: Dovecot, lists: OneClickServer
) -> None:
    """Nobody of that address wrote: no question (no list to leave, no message to move), a plain
    summary, and every mailbox as it was (issue 78)."""
    user, settings, start = _seeded(dovecot)
    asked = answering("accept")
    async with client(settings, lists, asked) as mcp:
        envelope = await mcp.call(TOOL, _call("nobody"))
    assert envelope["success"], envelope
    assert asked.asked == []
    assert (envelope["data"]["lists"], envelope["data"]["moved"]) == ([], 0)
    assert envelope["summary"] == "No list to leave", envelope["summary"]
    assert lists.requests == [] and _counts(dovecot, user) == start

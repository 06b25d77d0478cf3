"""The query language of imap_search_messages on the IMAP path, end to end through the MCP client on every
server of the matrix (Dovecot, Cyrus in both namespaces, Courier): every operator, the scope (no mailbox:
every folder with a query, INBOX without; ``in:``; ``in:anywhere`` adds Trash and Junk), attachments
judged from BODYSTRUCTURE, and the refusals (malformed, unknown operator, ``in:`` with ``mailbox``, an
attachment test under OR with a server test), which reach no server."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from tests.support.accounts import account_settings
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.round_trips import rig
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.matrix import MatrixServer
from tests.support.shared.query_language import INBOX, NOW, seed

pytestmark = pytest.mark.anyio


async def subjects(mcp: EnvelopeClient, arguments: dict[str, Any]) -> list[str]:
    data = await mcp.ok("imap_search_messages", {"limit": 50, **arguments})
    return [m["subject"] for m in data["messages"]]


async def test_every_operator_on_the_imap_path(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient
) -> None:
    seed(imap_server, user)
    inbox = {"mailbox": "INBOX"}
    # Words must each match, anywhere; a phrase as written; OR, -, parentheses and braces.
    assert await subjects(mcp, {**inbox, "query": "budget lunch"}) == ["Re: Lunch", "Lunch"]
    assert await subjects(mcp, {**inbox, "query": '"budget talk"'}) == ["Re: Lunch"]
    assert await subjects(mcp, {**inbox, "query": "photos OR invoice"}) == ["Invoice 42", "Holiday photos"]
    assert await subjects(mcp, {**inbox, "query": "budget -lunch"}) == [
        "Quarterly report",
        "Budget plan 2025",
    ]
    assert await subjects(mcp, {**inbox, "query": "-(budget OR photos)"}) == ["Invoice 42"]
    assert await subjects(mcp, {**inbox, "query": "{photos invoice} is:flagged"}) == [
        "Invoice 42",
        "Holiday photos",
    ]
    # Fields.
    assert await subjects(mcp, {**inbox, "query": "from:bob"}) == ["Re: Lunch", "Lunch"]
    assert await subjects(mcp, {**inbox, "query": "from:(carol OR billing)"}) == [
        "Invoice 42",
        "Holiday photos",
    ]
    assert await subjects(mcp, {**inbox, "query": "to:user@example.org subject:report"}) == [
        "Quarterly report"
    ]
    assert await subjects(mcp, {**inbox, "query": "cc:dan"}) == ["Quarterly report"]
    assert await subjects(mcp, {**inbox, "query": "bcc:erin"}) == ["Quarterly report"]
    assert await subjects(mcp, {**inbox, "query": 'subject:"re: lunch"'}) == ["Re: Lunch"]
    # Flags.
    assert await subjects(mcp, {**inbox, "query": "is:unread"}) == ["Invoice 42", "Re: Lunch", "Lunch"]
    assert await subjects(mcp, {**inbox, "query": "is:read -is:flagged"}) == [
        "Quarterly report",
        "Budget plan 2025",
    ]
    assert await subjects(mcp, {**inbox, "query": "is:starred"}) == ["Invoice 42", "Holiday photos"]
    assert await subjects(mcp, {**inbox, "query": "is:answered"}) == ["Quarterly report"]
    assert "Quarterly report" not in await subjects(mcp, {**inbox, "query": "is:unanswered"})
    assert len(await subjects(mcp, {**inbox, "query": "is:unanswered"})) == 5
    # Arrival dates and sizes.
    recent, older = (
        ["Invoice 42", "Re: Lunch", "Quarterly report"],
        ["Holiday photos", "Lunch", "Budget plan 2025"],
    )
    two_days_ago = NOW.date() - dt.timedelta(days=2)
    assert await subjects(mcp, {**inbox, "query": f"after:{two_days_ago:%Y/%m/%d}"}) == recent
    assert await subjects(mcp, {**inbox, "query": f"before:{two_days_ago:%Y-%m-%d}"}) == older
    assert await subjects(mcp, {**inbox, "query": "newer_than:3d"}) == recent
    assert await subjects(mcp, {**inbox, "query": "older_than:3d"}) == older
    assert await subjects(mcp, {**inbox, "query": "older_than:1y"}) == ["Budget plan 2025"]
    assert await subjects(mcp, {**inbox, "query": "newer_than:1m -newer_than:3d"}) == ["Holiday photos"]
    assert await subjects(mcp, {**inbox, "query": "larger:15K"}) == ["Quarterly report"]
    assert "Quarterly report" not in await subjects(mcp, {**inbox, "query": "smaller:15K"})
    # Attachments, judged from BODYSTRUCTURE.
    assert await subjects(mcp, {**inbox, "query": "has:attachment"}) == [
        "Invoice 42",
        "Holiday photos",
        "Budget plan 2025",
    ]
    assert await subjects(mcp, {**inbox, "query": "filename:pdf"}) == ["Invoice 42", "Budget plan 2025"]
    assert await subjects(mcp, {**inbox, "query": "filename:jpg budget"}) == []
    assert await subjects(mcp, {**inbox, "query": "-has:attachment budget"}) == [
        "Re: Lunch",
        "Quarterly report",
        "Lunch",
    ]
    assert await subjects(mcp, {**inbox, "query": "{filename:txt filename:pdf} -from:billing"}) == [
        "Holiday photos",
        "Budget plan 2025",
    ]


async def test_the_scope_of_a_query(imap_server: MatrixServer, user: str, mcp: EnvelopeClient) -> None:
    names = seed(imap_server, user)
    # No mailbox: every folder but Trash and Junk with a query, INBOX without one.
    data = await mcp.ok("imap_search_messages", {"query": "subject:budget", "fields": "full"})
    assert (data["mailbox"], sorted(m["subject"] for m in data["messages"])) == (
        "*",
        ["Budget plan 2025", "Old budget"],
    )
    assert (await mcp.ok("imap_search_messages", {"limit": 50}))["total"] == len(INBOX)
    assert await subjects(mcp, {"query": "in:inbox subject:budget"}) == ["Budget plan 2025"]
    # in: a mailbox by name, by its last level in any case, or by role.
    assert await subjects(mcp, {"query": f'in:"{names["archive"]}" budget'}) == ["Old budget"]
    assert await subjects(mcp, {"query": "in:archive budget"}) == ["Old budget"]
    assert await subjects(mcp, {"query": "in:trash budget"}) == ["Deleted budget"]
    assert await subjects(mcp, {"query": "in:spam budget"}) == ["Budget offer!!"]
    # in:anywhere adds Trash and Junk.
    assert sorted(await subjects(mcp, {"query": "in:anywhere subject:budget"})) == [
        "Budget offer!!",
        "Budget plan 2025",
        "Deleted budget",
        "Old budget",
    ]
    # A mailbox named explicitly keeps its meaning; the other filters combine with the query by AND.
    unread = await subjects(mcp, {"mailbox": "*", "query": "budget", "unread_only": True})
    assert sorted(unread) == ["Lunch", "Old budget", "Re: Lunch"]
    assert await subjects(mcp, {"query": "budget", "from": "bob", "subject": "re"}) == ["Re: Lunch"]


async def test_a_query_with_attachments_pages_with_its_cursor(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient
) -> None:
    seed(imap_server, user)
    seen: list[str] = []
    arguments: dict[str, Any] = {"mailbox": "INBOX", "query": "has:attachment", "limit": 1}
    data = await mcp.ok("imap_search_messages", arguments)
    seen += [m["subject"] for m in data["messages"]]
    while "next_cursor" in data:
        data = await mcp.ok("imap_search_messages", {**arguments, "cursor": data["next_cursor"]})
        seen += [m["subject"] for m in data["messages"]]
    assert seen == ["Invoice 42", "Holiday photos", "Budget plan 2025"]
    # Across every folder (merged), likewise.
    seen = []
    arguments = {"query": "filename:pdf", "limit": 1}
    data = await mcp.ok("imap_search_messages", arguments)
    seen += [m["subject"] for m in data["messages"]]
    while "next_cursor" in data:
        data = await mcp.ok("imap_search_messages", {**arguments, "cursor": data["next_cursor"]})
        seen += [m["subject"] for m in data["messages"]]
    assert seen == ["Invoice 42", "Budget plan 2025"]


async def test_a_conjunction_of_ors_is_taken_though_its_expansion_would_be_too_many_clauses(
    mcp: EnvelopeClient,
) -> None:
    # 2^9 clauses would be too many for IMAP, but these are conjunctions of ORs: fine. (The queries the
    # search refuses are refused before any server is reached: tests/pure/test_bad_arguments.py.)
    query = "(a OR b) (c OR d) (e OR f) (g OR h) (i OR j) (k OR l) (m OR n) (o OR p) (q OR r) (s b)"
    envelope = await mcp.call("imap_search_messages", {"query": query})
    assert envelope["success"], envelope


async def test_gmail_s_operators_are_unsupported_elsewhere(mcp: EnvelopeClient) -> None:
    """label:, is:important and category: are known, well formed, and answered by Gmail's search alone
    (tests/integration/gmail/test_gmail.py): elsewhere ``unsupported``, naming the argument and the extension."""
    for query in ("label:work", "is:important budget", "category:promotions"):
        envelope = await mcp.call("imap_search_messages", {"query": query})
        assert envelope["error"]["code"] == "unsupported", envelope
        assert envelope["error"]["details"] == {"parameter": "query", "missing_capability": "X-GM-EXT-1"}
        assert "Gmail's" in envelope["error"]["message"]


async def test_regression_gmails_operators_elsewhere_keep_the_connection_and_a_lone_minus_is_refused(
    dovecot: Dovecot,
) -> None:
    """On a server without Gmail's search, label:, is:important and category: were refused after the
    mailbox's EXAMINE had gone out: its answer was left unread, the connection dropped and the next call
    logged in again. Now refused before any command, on the one connection (its logins counted). A lone
    ``-`` was the word "-", which matched every message: ``invalid_input`` where it stands."""
    user = dovecot.new_user()
    seed(dovecot, user)
    async with rig(account_settings(dovecot, user)) as r:
        await r.client.ok("imap_search_messages", {"mailbox": "INBOX"})
        for query in ("label:work", "is:important budget", "category:promotions"):
            for where in ({"mailbox": "INBOX"}, {"mailbox": "*"}, {}):
                refused = await r.client.fail(
                    "imap_search_messages", {**where, "query": query}, "unsupported"
                )
                assert refused["error"]["details"]["missing_capability"] == "X-GM-EXT-1"
        lone = await r.client.fail("imap_search_messages", {"query": "budget -"}, "invalid_input")
        details = lone["error"]["details"]
        assert (details["parameter"], details["position"]) == ("query", 8)
        assert "right after '-'" in details["expected"]
        assert await subjects(r.client, {"mailbox": "INBOX", "query": "from:bob"}) == ["Re: Lunch", "Lunch"]
        assert r.connection.logins == 1

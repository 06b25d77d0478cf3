"""imap_get_thread end to end: a conversation across INBOX and Sent, oldest first, bounded, flags untouched.

On every server of the matrix (all advertise THREAD=REFERENCES) and on a Dovecot that advertises no THREAD
(the header search alone). Messages are linked the way mail clients link them (References, In-Reply-To),
and the way broken clients do not (no References, only In-Reply-To, or nothing but "Re:" and the subject);
hostile References (thousands of ids, quotes and backslashes inside ids) must stay bounded and harmless.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.accounts import account_settings
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.mail import mailgen
from tests.support.mail.mail_state import flags_of
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.matrix import INBOX_ONLY, SESSION_PASSWORD, MatrixServer

pytestmark = pytest.mark.anyio

TOOL = "imap_get_thread"
BASE = dt.datetime(2025, 5, 1, 9, tzinfo=dt.UTC)
ME = "Test User <user@example.org>"
ALICE = "Alice Johnson <alice.johnson@example.com>"


def mid(name: str) -> str:
    return f"<{name}@thread.example>"


def message(
    name: str,
    hours: int,
    subject: str,
    *,
    from_: str = ALICE,
    references: list[str] = (),  # type: ignore[assignment]
    in_reply_to: str | None = None,
    body: str | None = None,
) -> bytes:
    headers = {}
    if references:
        headers["References"] = " ".join(references)
    if in_reply_to:
        headers["In-Reply-To"] = in_reply_to
    return mailgen.plain_message(
        subject=subject,
        body=body or f"This is {name}.",
        from_=from_,
        date=BASE + dt.timedelta(hours=hours),
        message_id=mid(name),
        headers=headers,
    )


def seed_conversation(server: MatrixServer, user: str) -> str:
    """A conversation of four (two received in INBOX, one sent reply in Sent, one more received), plus
    unrelated mail; returns the server's name of Sent."""
    sent = server.mailbox_name("Sent")
    root = mid("root")
    server.seed(
        user,
        "INBOX",
        [
            message("root", 0, "Budget for Q3"),
            message("other", 1, "Lunch?"),
            message(
                "second",
                5,
                "Re: Budget for Q3",
                references=[root, mid("mine")],
                in_reply_to=mid("mine"),
                body="This is second.\n\nOn Thu, 1 May 2025, Test User wrote:\n> This is mine.\n\n-- \nAlice\n",
            ),
            message("similar", 6, "Budget for Q4"),
        ],
    )
    server.seed(
        user,
        sent,
        [message("mine", 2, "Re: Budget for Q3", from_=ME, references=[root], in_reply_to=root)],
        flags="\\Seen",
    )
    return sent


async def ids_by_subject(mcp: EnvelopeClient, mailbox: str = "INBOX") -> dict[str, str]:
    data = await mcp.ok(
        "imap_search_messages", {"fields": "full", "mailbox": mailbox, "limit": 100, "snippet_chars": 0}
    )
    return {f"{m['subject']}|{m['date']}": m["message_id"] for m in data["messages"]}


async def test_conversation_across_inbox_and_sent_oldest_first_without_setting_flags(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient
) -> None:
    sent = seed_conversation(imap_server, user)
    before = flags_of(imap_server, user, "INBOX")
    inbox = (await mcp.ok("imap_search_messages", {"fields": "full", "limit": 10}))["messages"]
    second = next(m for m in inbox if m["snippet"] == "This is second.")
    data = await mcp.ok(TOOL, {"message_id": second["message_id"]})
    # Compact summaries with their mailbox; the reply's snippet is what Alice wrote, not the quote.
    assert [m["snippet"] for m in data["messages"]] == ["This is root.", "This is mine.", "This is second."]
    assert [m["mailbox"] for m in data["messages"]] == ["INBOX", sent, "INBOX"]
    assert all("message_uri" not in m and "uid" not in m for m in data["messages"])
    assert data["thread_root"] == mid("root")
    # Compact: each value once (no account_id, message_id asked, returned; truncated only when true).
    assert set(data) == {
        "thread_root", "total", "mailboxes", "status", "messages", "next_action", "untrusted_content"
    }  # fmt: skip
    assert (
        data["total"] == 3
        and data["untrusted_content"] == "messages[].from,to,subject,snippet,mailbox; mailboxes,thread_root"
    )
    assert {"INBOX", sent} <= set(data["mailboxes"])
    assert data["next_action"] == {
        "instruction": "Read the newest message of the conversation in full",
        "tool": "imap_get_message",
        "arguments": {"message_id": second["message_id"]},
    }
    # fields: full spells everything out, with full summaries.
    full = await mcp.ok(TOOL, {"message_id": second["message_id"], "fields": "full"})
    assert (full["account_id"], full["message_id"], full["thread_root"]) == (
        "default",
        second["message_id"],
        mid("root"),
    )
    assert (full["total"], full["returned"], full["truncated"], full["issues"]) == (3, 3, False, [])
    assert [m["message_id"] for m in full["messages"]] == [m["message_id"] for m in data["messages"]]
    assert all(m["message_uri"] and "cc" in m and "size_bytes" in m for m in full["messages"])
    assert "messages[].cc" in full["untrusted_content"]["fields"]
    assert flags_of(imap_server, user, "INBOX") == before
    # Asked from the sent reply or the root, the same conversation.
    mine = next(m for m in data["messages"] if m["mailbox"] == sent)
    for start in (mine["message_id"], data["messages"][0]["message_id"]):
        again = await mcp.ok(TOOL, {"message_id": start})
        assert [m["message_id"] for m in again["messages"]] == [m["message_id"] for m in data["messages"]]


async def test_replies_without_references_join_by_in_reply_to_or_where_the_server_threads_by_subject(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient
) -> None:
    imap_server.seed(user, "INBOX", LISBON)
    data = await lisbon_thread(mcp, fields="full")
    # Every server of the matrix advertises THREAD=REFERENCES, which joins the bare reply by its subject.
    assert data["threaded_by_server"] is True
    assert [m["snippet"] for m in data["messages"]] == [
        "This is start.",
        "This is irt-only.",
        "This is bare-reply.",
    ]


LISBON = [
    message("start", 0, "Trip to Lisbon"),
    message("irt-only", 1, "Re: Trip to Lisbon", in_reply_to=mid("start")),
    message("bare-reply", 2, "Re: Trip to Lisbon"),
    message("unrelated", 3, "Trip to Porto"),
]


async def lisbon_thread(mcp: EnvelopeClient, fields: str = "compact") -> dict[str, Any]:
    inbox = (await mcp.ok("imap_search_messages", {"fields": "full", "limit": 10}))["messages"]
    start = next(m for m in inbox if m["snippet"] == "This is start.")
    return await mcp.ok(TOOL, {"message_id": start["message_id"], "fields": fields})


async def test_a_long_conversation_is_cut_to_its_newest_keeping_the_message_asked_about(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient
) -> None:
    chain = [mid("c0")]
    messages = [message("c0", 0, "Release plan")]
    for i in range(1, 8):
        messages.append(
            message(f"c{i}", i, "Re: Release plan", references=list(chain), in_reply_to=chain[-1])
        )
        chain.append(mid(f"c{i}"))
    imap_server.seed(user, "INBOX", messages)
    inbox = (await mcp.ok("imap_search_messages", {"fields": "full", "limit": 10}))["messages"]
    newest = next(m for m in inbox if m["snippet"] == "This is c7.")
    data = await mcp.ok(TOOL, {"message_id": newest["message_id"], "limit": 3})
    assert [m["snippet"] for m in data["messages"]] == ["This is c5.", "This is c6.", "This is c7."]
    assert (data["total"], len(data["messages"]), data["truncated"]) == (8, 3, True)
    oldest = next(m for m in inbox if m["snippet"] == "This is c0.")
    asked = await mcp.call(TOOL, {"message_id": oldest["message_id"], "limit": 3})
    assert [m["snippet"] for m in asked["data"]["messages"]] == ["This is c0.", "This is c6.", "This is c7."]
    assert any("8 messages" in w for w in asked["meta"]["warnings"])
    assert "5 older left out" in asked["summary"]


async def test_hostile_references_stay_bounded_and_harmless(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient
) -> None:
    flood = [f"<id{i}@flood.example>" for i in range(3000)]
    tricky = ['<a"b\\c@x.example>', "<x@y> OR ALL", "not-an-id", "<" + "z" * 300 + "@long.example>"]
    imap_server.seed(
        user,
        "INBOX",
        [
            message("calm", 0, "Hello"),
            message(
                "hostile", 1, "Re: Hello", references=[*tricky, *flood, mid("calm")], in_reply_to=mid("calm")
            ),
            message("bystander", 2, "Weather"),
        ],
    )
    inbox = (await mcp.ok("imap_search_messages", {"fields": "full", "limit": 10}))["messages"]
    hostile = next(m for m in inbox if m["snippet"] == "This is hostile.")
    data = await mcp.ok(TOOL, {"message_id": hostile["message_id"]})
    snippets = [m["snippet"] for m in data["messages"]]
    # In-Reply-To links it (the References header is read only up to its first 16 KiB); the flood's and
    # the odd ids match nothing and nothing else is swept in.
    assert snippets == ["This is calm.", "This is hostile."]
    assert data["thread_root"] and data["thread_root"].startswith("<a")


async def test_a_message_without_any_ids_is_its_own_conversation(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient
) -> None:
    raw = b"From: a@example.com\r\nSubject: x\r\nDate: Thu, 1 May 2025 09:00:00 +0000\r\n\r\nalone\r\n"
    imap_server.seed(user, "INBOX", [raw, message("other", 1, "Something else")])
    inbox = (await mcp.ok("imap_search_messages", {"fields": "full", "limit": 10}))["messages"]
    alone = next(m for m in inbox if m["snippet"] == "alone")
    data = await mcp.ok(TOOL, {"message_id": alone["message_id"]})
    assert [m["snippet"] for m in data["messages"]] == ["alone"]
    assert "thread_root" not in data  # unknown: absent in the compact shape


@INBOX_ONLY
async def test_bad_and_stale_ids(imap_server: MatrixServer, user: str, mcp: EnvelopeClient) -> None:
    imap_server.seed(user, "INBOX", [message("only", 0, "Only")])
    (only,) = (await mcp.ok("imap_search_messages", {"fields": "full"}))["messages"]
    await mcp.fail(TOOL, {"message_id": "nonsense-id"}, "invalid_input")
    await mcp.fail(TOOL, {"message_id": only["message_id"], "limit": 0}, "invalid_input")
    gone = only["message_id"].rsplit(":", 1)[0] + ":999"
    await mcp.fail(TOOL, {"message_id": gone}, "not_found")
    stale = ":".join([*only["message_id"].split(":")[:-2], str(only["uidvalidity"] + 1), "1"])
    await mcp.fail(TOOL, {"message_id": stale}, "conflict")


# --------------------------------------------------------------------------- a server without THREAD


@pytest.fixture(scope="module")
def no_thread_dovecot() -> Iterator[Dovecot]:
    with Dovecot(capabilities="IMAP4rev1 LITERAL+ UNSELECT SPECIAL-USE", password=SESSION_PASSWORD) as server:
        yield server


ROUND_TRIPS = re.compile(r"imap_commands=(\d+) round_trips=(\d+)")


async def test_without_thread_the_header_search_finds_the_conversation(
    no_thread_dovecot: Dovecot, caplog: pytest.LogCaptureFixture
) -> None:
    server = no_thread_dovecot
    user = server.new_user()
    sent = seed_conversation(server, user)
    config = make_config({"default": account_settings(server, user)})
    caplog.set_level(logging.DEBUG, logger="mail_imap_mcp.imap")
    async for mcp in open_client(config):
        inbox = (await mcp.ok("imap_search_messages", {"fields": "full", "limit": 10}))["messages"]
        second = next(m for m in inbox if m["snippet"] == "This is second.")
        caplog.clear()
        data = await mcp.ok(TOOL, {"message_id": second["message_id"], "fields": "full"})
    assert data["threaded_by_server"] is False
    assert [m["snippet"] for m in data["messages"]] == ["This is root.", "This is mine.", "This is second."]
    assert [m["mailbox"] for m in data["messages"]] == ["INBOX", sent, "INBOX"]
    (cost,) = [m for m in (ROUND_TRIPS.search(r.getMessage()) for r in caplog.records) if m]
    # A reply without References joins by In-Reply-To; one with neither (only "Re:") cannot, here.
    server.seed(user, "INBOX", LISBON)
    async for mcp in open_client(config):
        lisbon = await lisbon_thread(mcp)
    assert [m["snippet"] for m in lisbon["messages"]] == ["This is start.", "This is irt-only."]
    print(f"imap_get_thread without THREAD: imap_commands={cost.group(1)} round_trips={cost.group(2)}")
    # EXAMINE, FETCH of the headers, LIST, SEARCH + FETCH in INBOX, EXAMINE + SEARCH + FETCH in Sent.
    assert int(cost.group(2)) <= 9


async def test_round_trips_with_thread(dovecot: Dovecot, caplog: pytest.LogCaptureFixture) -> None:
    user = dovecot.new_user()
    seed_conversation(dovecot, user)
    config = make_config({"default": account_settings(dovecot, user)})
    caplog.set_level(logging.DEBUG, logger="mail_imap_mcp.imap")
    async for mcp in open_client(config):
        inbox = (await mcp.ok("imap_search_messages", {"fields": "full", "limit": 10}))["messages"]
        second = next(m for m in inbox if m["snippet"] == "This is second.")
        caplog.clear()
        data: dict[str, Any] = await mcp.ok(TOOL, {"message_id": second["message_id"], "fields": "full"})
    assert data["threaded_by_server"] is True and data["returned"] == 3
    (cost,) = [m for m in (ROUND_TRIPS.search(r.getMessage()) for r in caplog.records) if m]
    print(f"imap_get_thread with THREAD: imap_commands={cost.group(1)} round_trips={cost.group(2)}")
    assert int(cost.group(2)) <= 9

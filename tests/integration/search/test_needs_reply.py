"""imap_search_messages(needs_reply: true) on the server matrix: exactly the human mail awaiting the
user's answer, on a corpus of lists, auto-replies, bulk and no-reply mail, mail answered (\\Answered, or
by a message in Sent found through special-use, or through sent_mailbox on Courier) and self-sent mail;
combined with other filters and with mailbox '*'; and its round trips pinned on Dovecot."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from tests.support.clients.in_process import AccountFactory, make_config, open_client
from tests.support.mail.mailgen import plain_message
from tests.support.round_trips import Plan, plain_settings, recording, rig
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.matrix import MatrixServer

pytestmark = pytest.mark.anyio

ME = "user@example.org"


def mail(subject: str, from_: str, message_id: str, **headers: str) -> bytes:
    return plain_message(subject, "Text.\n", from_=from_, to=ME, message_id=message_id, headers=headers)


#: Subject -> message; the ones awaiting an answer start with "wait".
INBOX = {
    "wait alice": mail("wait alice", "Alice <alice@example.com>", "<alice-1@example.com>"),
    "flag answered": mail("flag answered", "Bob <bob@example.com>", "<bob-1@example.com>"),
    "list post": mail(
        "list post", "Carol <carol@example.com>", "<list-1@example.com>", **{"List-Id": "<dev.example.com>"}
    ),
    "auto reply": mail(
        "auto reply", "Dan <dan@example.com>", "<auto-1@example.com>", **{"Auto-Submitted": "auto-replied"}
    ),
    "wait auto no": mail(
        "wait auto no", "Eve <eve@example.com>", "<eve-1@example.com>", **{"Auto-Submitted": "no"}
    ),
    "bulk": mail("bulk", "News <news@example.com>", "<bulk-1@example.com>", Precedence="bulk"),
    "junk precedence": mail(
        "junk precedence", "X <x@example.com>", "<junk-1@example.com>", Precedence="junk"
    ),
    "no reply": mail("no reply", "Service <no-reply@service.example>", "<nr-1@example.com>"),
    "noreply": mail("noreply", "noreply@service.example", "<nr-2@example.com>"),
    "bounce": mail("bounce", "MAILER-DAEMON@mx.example.org", "<md-1@example.org>"),
    "self sent": mail("self sent", f"Me <{ME.upper()}>", "<self-1@example.org>"),
    "answered in sent": mail("answered in sent", "Frank <frank@example.com>", "<frank-1@example.com>"),
    "answered by refs": mail("answered by refs", "Gina <gina@example.com>", "<gina-1@example.com>"),
    "wait hugo": mail(
        "wait hugo",
        "Hugo <hugo@example.com>",
        "<hugo-1@example.com>",
        **{"In-Reply-To": "<frank-1@example.com>"},
    ),
}
SENT = [
    plain_message(
        "Re: answered in sent",
        "Done.\n",
        from_=ME,
        to="frank@example.com",
        message_id="<me-1@example.org>",
        headers={"In-Reply-To": "<frank-1@example.com>"},
    ),
    plain_message(
        "Re: other",
        "Ok.\n",
        from_=ME,
        to="gina@example.com",
        message_id="<me-2@example.org>",
        headers={"References": "<root@example.com> <gina-1@example.com>"},
    ),
]
PROJECT = [
    mail("wait in projects", "Ivan <ivan@example.com>", "<ivan-1@example.com>"),
    mail("project list", "Ivan <ivan@example.com>", "<ivan-2@example.com>", **{"List-Id": "<p.example.com>"}),
]


def seed(server: Any, user: str) -> dict[str, Any]:
    server.seed(user, "INBOX", list(INBOX.values()), flags=lambda i: "\\Answered" if i == 1 else "")
    sent = server.mailbox_name("Sent")
    server.seed(user, sent, SENT, flags="\\Seen")
    server.seed(user, server.mailbox_name("Projects"), PROJECT)
    return {"addresses": [ME]} | ({"sent_mailbox": sent} if server.kind == "courier" else {})


def subjects(data: dict[str, Any]) -> list[str]:
    return sorted(m["subject"] for m in data["messages"])


async def test_needs_reply_lists_exactly_the_human_mail_awaiting_an_answer(
    imap_server: MatrixServer, user: str, account: AccountFactory
) -> None:
    settings = seed(imap_server, user)
    async for mcp in open_client(make_config({"default": account(user, **settings)})):
        data = await mcp.ok("imap_search_messages", {"needs_reply": True, "limit": 50})
        assert subjects(data) == ["wait alice", "wait auto no", "wait hugo"]
        everywhere = await mcp.ok("imap_search_messages", {"needs_reply": True, "mailbox": "*", "limit": 50})
        assert subjects(everywhere) == ["wait alice", "wait auto no", "wait hugo", "wait in projects"]
        narrowed = await mcp.ok("imap_search_messages", {"needs_reply": True, "from": "alice"})
        assert subjects(narrowed) == ["wait alice"]
        # Without needs_reply every message is listed; nothing was flagged or changed by the search.
        plain = await mcp.ok("imap_search_messages", {"limit": 50})
        assert len(plain["messages"]) == len(INBOX)


async def test_without_a_sent_mailbox_answered_flags_still_count_and_a_warning_says_so(
    dovecot: Dovecot, user: str, account: AccountFactory
) -> None:
    dovecot.seed(user, "INBOX", [INBOX["wait alice"], INBOX["answered in sent"]])
    async for mcp in open_client(make_config({"default": account(user, addresses=[ME])})):
        envelope = await mcp.call("imap_search_messages", {"needs_reply": True})
        assert envelope["success"]
        assert subjects(envelope["data"]) == ["answered in sent", "wait alice"]
        assert any("no Sent mailbox" in w for w in envelope["meta"]["warnings"])


async def test_regression_l1_a_reused_message_id_does_not_hide_mail_from_needs_reply(
    dovecot: Dovecot, user: str, account: AccountFactory
) -> None:
    # Issue 33 L1: a sender who saw the Message-ID of a message the user answered (it is in the reply's
    # References) reused it, and its message was taken as answered by that reply.
    later = (dt.datetime(2024, 3, 14, 9, 26, 53, tzinfo=dt.UTC) + dt.timedelta(days=2)).isoformat()
    reused = [
        mail("wait mallory", "Mallory <mallory@evil.example>", "<frank-1@example.com>"),
        plain_message(
            "wait frank again",
            "Text.\n",
            from_="Frank <frank@example.com>",
            to=ME,
            message_id="<frank-1@example.com>",
            date=dt.datetime.fromisoformat(later),
        ),
    ]
    dovecot.seed(user, "INBOX", [INBOX["answered in sent"], *reused])
    dovecot.seed(user, "Sent", SENT, flags="\\Seen")
    async for mcp in open_client(make_config({"default": account(user, addresses=[ME])})):
        data = await mcp.ok("imap_search_messages", {"needs_reply": True})
    assert subjects(data) == ["wait frank again", "wait mallory"], data


async def test_a_message_reusing_an_answered_message_id_that_arrives_after_the_answer_is_listed(
    dovecot: Dovecot, user: str, account: AccountFactory
) -> None:
    """Issue 47 item 14: the sender of an answered message sends a new one with the same Message-ID and
    a Date header as old as the first's (the Date is the sender's to write). It reached the server
    after the answer was saved in Sent (INTERNALDATE, the server's own clock), so that answer is not
    its answer: it is listed, the answered one is not."""
    written = dt.datetime(2024, 3, 14, 8, 26, 53, tzinfo=dt.UTC)  # as the answer's Date header says
    reused = plain_message(
        "wait frank reused",
        "Text.\n",
        from_="Frank <frank@example.com>",
        to=ME,
        message_id="<frank-1@example.com>",
        date=written,
    )
    arrivals = [written, written + dt.timedelta(days=3)]
    dovecot.seed(user, "INBOX", [INBOX["answered in sent"], reused], internaldates=arrivals)
    dovecot.seed(user, "Sent", SENT[:1], flags="\\Seen", internaldates=[written + dt.timedelta(days=1)])
    async for mcp in open_client(make_config({"default": account(user, addresses=[ME])})):
        data = await mcp.ok("imap_search_messages", {"needs_reply": True})
    assert subjects(data) == ["wait frank reused"], data


#: A page of needs_reply in one mailbox, after another (which left Sent selected): EXAMINE of the mailbox,
#: the window's UID SEARCH and the page's UID FETCH as any search; then LIST (to find Sent), EXAMINE of
#: Sent with its UID SEARCH for the page's Message-IDs (one round trip), and the UID FETCH of the answers'
#: In-Reply-To and References: six round trips however many messages the page holds.
NEEDS_REPLY_PLAN = Plan(
    ("EXAMINE", "UID SEARCH", "UID FETCH", "LIST", "EXAMINE", "UID SEARCH", "UID FETCH"), 6
)


@pytest.mark.parametrize("extra_answered", [0, 40])
async def test_needs_reply_round_trips_are_pinned_and_do_not_grow_with_the_page(
    dovecot: Dovecot, extra_answered: int
) -> None:
    user = dovecot.new_user("t-rtt")
    settings = seed(dovecot, user)
    more = [
        mail(f"wait more {i}", f"P{i} <p{i}@example.com>", f"<more-{i}@example.com>")
        for i in range(extra_answered)
    ]
    dovecot.seed(user, "INBOX", more)
    replies = [
        plain_message(
            "Re", "x\n", from_=ME, to=f"p{i}@example.com", headers={"In-Reply-To": f"<more-{i}@example.com>"}
        )
        for i in range(extra_answered)
    ]
    dovecot.seed(user, dovecot.mailbox_name("Sent"), replies)
    with recording(dovecot) as recorder:
        async with rig(plain_settings(dovecot, user, recorder.port) | settings, recorder) as r:
            await r.call("imap_search_messages", {"limit": 100, "needs_reply": True})
            data, plan = await r.call("imap_search_messages", {"limit": 100, "needs_reply": True})
    assert subjects(data) == ["wait alice", "wait auto no", "wait hugo"]
    assert plan == NEEDS_REPLY_PLAN

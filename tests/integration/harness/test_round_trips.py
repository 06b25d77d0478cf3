"""Round trips per call: the IMAP plan of every read, pinned, and the same answers over a slow link.

On a real network each round trip costs the link's RTT, so the number of times a call waits for the
server decides what the user waits for (issue 13). Each call below is made through the MCP client
against Dovecot through the wire recorder (``ImapRecorder``, ``security = "plain"`` so the commands are
readable), and the test pins both what was sent (the commands, in order) and how often the client
waited for an answer (``AccountConnection.round_trips``: TCP connect, TLS handshake, and every read that
follows a send, counted on the socket). A change that adds a command or a round trip fails here; one
that removes one updates the plan below and docs/benchmarks.md ("IMAP plan of each call").

The optimisations are checked for correctness too: the same answers with and without a link delay
(``LinkProxy``), a pipelined FETCH that met a flag change made elsewhere runs again and shows it, and
``TCP_NODELAY`` is set on the client socket for plain, STARTTLS and implicit TLS connections.
No timing is asserted.
"""

from __future__ import annotations

import socket
from typing import Any

import pytest

from mail_imap_mcp.app import AppContext
from tests.support.accounts import account_settings
from tests.support.clients.envelope_client import uid_of
from tests.support.clients.in_process import make_config
from tests.support.mail import mailgen
from tests.support.round_trips import Plan, plain_settings, recording, rig
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.imapserver import ImapServer
from tests.support.servers.linkproxy import LinkProxy

pytestmark = pytest.mark.anyio

SUBJECT = "Quarterly invoice"


# The IMAP plan of each call (docs/benchmarks.md, "IMAP plan of each call"). A warm call reuses the
# selection of the previous one and revalidates it with NOOP + STATUS pipelined with its first command.
PLANS: dict[str, Plan] = {
    # TCP connect, greeting (its [CAPABILITY] code is used: no CAPABILITY command), LOGIN (its
    # [CAPABILITY] code likewise), ENABLE QRESYNC sent with EXAMINE and the window's UID SEARCH (no round
    # trip of its own), one UID FETCH of the page.
    "first call after start": Plan(("LOGIN", "ENABLE", "EXAMINE", "UID SEARCH", "UID FETCH"), 6),
    "warm newest page": Plan(("NOOP", "STATUS", "UID SEARCH", "UID FETCH"), 2),
    # The first window (2,000 UIDs) spans this small mailbox: its matches give the total.
    "filtered page": Plan(("NOOP", "STATUS", "UID SEARCH", "UID FETCH"), 2),
    # Header and structure ride with the revalidation; then the text part.
    "get_message": Plan(("NOOP", "STATUS", "UID FETCH", "UID FETCH"), 2),
    "get_message_raw": Plan(("NOOP", "STATUS", "UID FETCH"), 1),
    "list_mailboxes": Plan(("LIST",), 1),
}


def seed(server: ImapServer, user: str) -> None:
    messages = list(mailgen.corpus(30))
    messages.insert(10, mailgen.plain_message(SUBJECT, "Please find the figures attached.\n"))
    server.seed(user, "INBOX", messages)


async def run_script(call: Any) -> dict[str, tuple[dict[str, Any], Plan]]:
    """The calls whose plans are pinned, in an order where each finds the selection of the one before."""
    seen: dict[str, tuple[dict[str, Any], Plan]] = {}
    seen["first call after start"] = await call("imap_search_messages", {"limit": 20})
    seen["warm newest page"] = await call("imap_search_messages", {"limit": 20})
    seen["filtered page"] = await call("imap_search_messages", {"limit": 5, "subject": "invoice"})
    message_id = seen["filtered page"][0]["messages"][0]["message_id"]
    seen["get_message"] = await call("imap_get_message", {"message_id": message_id})
    seen["get_message_raw"] = await call(
        "imap_get_message_raw", {"message_id": message_id, "max_bytes": 2048}
    )
    seen["list_mailboxes"] = await call("imap_list_mailboxes", {})
    return seen


async def test_each_call_sends_its_plan_and_waits_no_more_than_it_allows(dovecot: Dovecot) -> None:
    """Every pinned call sends exactly its commands and waits for the server exactly its round trips."""
    user = dovecot.new_user("t-rtt")
    seed(dovecot, user)
    with recording(dovecot) as recorder:
        async with rig(plain_settings(dovecot, user, recorder.port), recorder) as r:
            seen = await run_script(r.call)
            assert r.connection.logins == 1
    observed = {name: plan for name, (_, plan) in seen.items()}
    assert observed == PLANS


#: A mailbox larger than the first window: one scan, ``UID SEARCH RETURN (COUNT ALL)``, gives the total
#: and every match (a compact UID set), riding with the revalidation. Before issue 22: a COUNT and the
#: first window's SEARCH, two scans of the mailbox in the same round trip.
LARGE_FILTERED_PAGE = Plan(("NOOP", "STATUS", "UID SEARCH", "UID FETCH"), 2)


async def test_a_filtered_page_of_a_large_mailbox_reads_its_total_and_matches_in_one_scan(
    dovecot: Dovecot,
) -> None:
    user = dovecot.new_user("t-rtt")
    dovecot.seed(user, "INBOX", mailgen.corpus(2_600))
    arguments = {"limit": 5, "subject": "invoice"}
    with recording(dovecot) as recorder:
        async with rig(plain_settings(dovecot, user, recorder.port), recorder) as r:
            await r.call("imap_list_mailboxes", {})
            warm, _ = await r.call("imap_search_messages", arguments)
            data, plan = await r.call("imap_search_messages", arguments)
            sent = r.last_sent
    assert plan == LARGE_FILTERED_PAGE
    assert b"RETURN (COUNT ALL)" in sent
    assert data == warm and data["total"] > len(data["messages"]) == 5
    with dovecot.connect(user) as direct:
        direct.select_folder("INBOX", readonly=True)
        expected = sorted(direct.search(["SUBJECT", "invoice"]), reverse=True)
    assert data["total"] == len(expected)
    assert [uid_of(m) for m in data["messages"]] == expected[:5]


async def test_a_flag_changed_elsewhere_is_seen_by_a_pipelined_fetch(dovecot: Dovecot) -> None:
    """get_message's FETCH rides with the revalidation; when that NOOP reports a flag change made by
    another session, the answer is not trusted: the call runs again (one more round trip) and shows it."""
    user = dovecot.new_user("t-rtt")
    seed(dovecot, user)
    with recording(dovecot) as recorder:
        async with rig(plain_settings(dovecot, user, recorder.port), recorder) as r:
            page, _ = await r.call("imap_search_messages", {"limit": 1, "subject": "invoice"})
            (message,) = page["messages"]
            assert "\\Flagged" not in message.get("flags", [])
            other = dovecot.connect(user)
            try:
                other.select_folder("INBOX")
                other.add_flags([uid_of(message)], [b"\\Flagged"])
            finally:
                other.logout()
            data, plan = await r.call("imap_get_message", {"message_id": message["message_id"]})
    assert "\\Flagged" in data["message"]["flags"]
    assert plan.round_trips <= PLANS["get_message"].round_trips + 1


#: A delete (to Trash) and a move of one message by id, each after a page of INBOX: the destination looked
#: up (LIST), the id checked (SELECT sent with its UID SEARCH), the message's size, date and Message-ID read
#: (EXAMINE sent with the UID FETCH), the destination looked at (EXAMINE), then SELECT and UID MOVE.
#: Before: 10 round trips, one a command, and the id checked twice.
TRANSFER_PLAN = Plan(
    ("LIST", "SELECT", "UID SEARCH", "EXAMINE", "UID FETCH", "EXAMINE", "SELECT", "UID MOVE"), 6
)


@pytest.mark.parametrize("action", ["delete", "move"])
async def test_a_delete_or_move_by_id_sends_each_selection_with_its_read(
    dovecot: Dovecot, action: str
) -> None:
    user = dovecot.new_user("t-rtt")
    seed(dovecot, user)
    trash, archive = dovecot.mailbox_name("Trash"), dovecot.mailbox_name("Archive")
    destination = trash if action == "delete" else archive
    dovecot.seed(user, destination, [mailgen.plain_message("there before", "kept\n")])
    with recording(dovecot) as recorder:
        settings = {
            **plain_settings(dovecot, user, recorder.port),
            "write_enabled": True,
            "trash_mailbox": trash,
        }
        async with rig(settings, recorder) as r:
            page, _ = await r.call("imap_search_messages", {"limit": 1, "mailbox": "INBOX"})
            (message,) = page["messages"]
            asked: dict[str, Any] = {"message_ids": [message["message_id"]], "action": action}
            if action == "move":
                asked["destination_mailbox"] = archive
            data, plan = await r.call("imap_apply_to_messages", asked)
    assert plan == TRANSFER_PLAN
    assert [result["outcome"] for result in data["results"]] == [
        "moved_to_trash" if action == "delete" else "moved"
    ]
    with dovecot.connect(user) as direct:  # every message counted: one left INBOX for the destination
        assert direct.folder_status("INBOX", [b"MESSAGES"])[b"MESSAGES"] == 30
        assert direct.folder_status(destination, [b"MESSAGES"])[b"MESSAGES"] == 2
        direct.select_folder("INBOX", readonly=True)
        assert uid_of(message) not in direct.search(["ALL"])


@pytest.mark.parametrize("security", ["plain", "starttls", "tls"])
async def test_nagle_is_off_on_the_client_socket(dovecot: Dovecot, security: str) -> None:
    """TCP_NODELAY on every kind of connection: imapclient writes some commands in two pieces, which
    Nagle and the server's delayed ACK would turn into two extra round trips on a real network."""
    user = dovecot.new_user("t-rtt")
    seed(dovecot, user)
    port = dovecot.tls_port if security == "tls" else dovecot.plain_port
    settings = account_settings(dovecot, user, port=port, security=security)
    async with rig(settings) as r:
        data, plan = await r.call("imap_search_messages", {"limit": 3})
        client = r.connection.connect()
        assert client.socket().getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    assert len(data["messages"]) == 3
    # TCP, greeting, then per mode: TLS handshake (1 with TLS 1.3); STARTTLS, its handshake and the
    # CAPABILITY that must be asked anew after it; then LOGIN, EXAMINE, SEARCH, FETCH.
    extra = {"plain": 0, "tls": 1, "starttls": 3}[security]
    assert plan.round_trips == PLANS["first call after start"].round_trips + extra


def comparable(data: dict[str, Any]) -> Any:
    """A tool's data without what legitimately differs between two runs."""
    if isinstance(data, dict):
        return {k: comparable(v) for k, v in data.items() if k not in {"duration_ms", "request_id"}}
    if isinstance(data, list):
        return [comparable(v) for v in data]
    return data


async def test_same_answers_over_a_slow_link(dovecot: Dovecot) -> None:
    """The pipelined plans give the same data over a link with 2 x 15 ms of delay as directly."""
    user = dovecot.new_user("t-rtt")
    seed(dovecot, user)
    direct_settings = account_settings(dovecot, user)
    async with rig(direct_settings) as r:
        direct = await run_script(r.call)
    with LinkProxy(dovecot.host, dovecot.tls_port, one_way_s=0.015) as link:
        async with rig(account_settings(dovecot, user, port=link.port)) as r:
            slow = await run_script(r.call)
        assert link.accepted == 1
    for name in PLANS:
        assert comparable(slow[name][0]) == comparable(direct[name][0]), name
        assert slow[name][1].round_trips == direct[name][1].round_trips, name


def test_login_capabilities_are_those_of_the_authenticated_session(dovecot: Dovecot) -> None:
    """The capabilities taken from the greeting and LOGIN's response code are what CAPABILITY says."""
    user = dovecot.new_user("t-rtt")
    app = AppContext.from_config(make_config({"default": account_settings(dovecot, user)}))
    try:
        connection = app.connection("default")
        connection.run(lambda session: None)
        with dovecot.connect(user) as direct:
            typ, data = direct._imap.capability()
        assert typ == "OK"
        asked = frozenset(data[-1].decode().upper().split())
        assert connection.capabilities == asked
    finally:
        app.close()

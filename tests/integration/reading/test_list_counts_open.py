"""imap_list_mailboxes with counts keeps the mailbox the session has open (issue 80): NOOP on it, not
UNSELECT, and every STATUS in the one round trip after LIST; with nothing open, INBOX is EXAMINEd there
once (Dovecot reads a closed INBOX's whole uidlist for each STATUS of it: :mod:`mail_imap_mcp.imap.kept_open`).
The counts answered are those of the mailbox as it is when another client appended, expunged or flagged
in the open INBOX just before: through a real MCP client on every server of the matrix (commands and
round trips from the connection's log line), and on Dovecot every command seen on the wire, for the
listing and for a mailbox resource read with counts."""

from __future__ import annotations

import json
import logging
from typing import Any

import imapclient
import pytest
from mcp import Client

from mail_imap_mcp.server import build_server
from mail_imap_mcp.subscriptions.mailbox_resource import mailbox_uri
from tests.support.accounts import account_settings
from tests.support.clients.in_process import make_config, open_client
from tests.support.mail.mailgen import plain_message
from tests.support.round_trips import logged_cost, plain_settings, recording
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.matrix import MatrixServer, on_matrix
from tests.support.shared.index_search import other_client
from tests.support.wire import parse_commands

pytestmark = pytest.mark.anyio

LIST = "imap_list_mailboxes"
COUNTS = {"include_counts": True}
COUNTED = ("messages", "unseen", "uidvalidity", "uidnext")


def seed(server: MatrixServer, user: str) -> None:
    server.seed(user, "INBOX", [plain_message(f"inbox {n}", "a body") for n in range(3)])
    server.seed(
        user, server.mailbox_name("Archive"), [plain_message(f"archive {n}", "a body") for n in range(2)]
    )


def inbox_counts(data: dict[str, Any]) -> dict[str, Any]:
    (inbox,) = (box for box in data["mailboxes"] if box["name"] == "INBOX")
    return {key: inbox[key] for key in COUNTED}


def truth(other: imapclient.IMAPClient) -> dict[str, Any]:
    """INBOX's counts as another connection, with nothing selected, reads them."""
    status = other.folder_status("INBOX", [b"MESSAGES", b"UNSEEN", b"UIDVALIDITY", b"UIDNEXT"])
    return {key: int(status[key.upper().encode()]) for key in COUNTED}


@on_matrix()
async def test_counts_open_inbox_once_then_ask_it_with_noop_in_two_round_trips_and_see_other_clients_changes(
    imap_server: MatrixServer, user: str, caplog: pytest.LogCaptureFixture
) -> None:
    seed(imap_server, user)
    config = make_config({"default": account_settings(imap_server, user)})
    caplog.set_level(logging.DEBUG, logger="mail_imap_mcp.imap")
    async for mcp in open_client(config):
        await mcp.ok(LIST, {})  # logged in, nothing selected
        caplog.clear()
        data = await mcp.ok(LIST, COUNTS)
        counted = sum(1 for box in data["mailboxes"] if box.get("messages") is not None)
        assert counted == data["total"] >= 2 and data["status"] == "ok"
        # LIST, then EXAMINE INBOX and every STATUS at once (one round trip a mailbox before).
        assert logged_cost(caplog) == (counted + 2, 2)
        await mcp.ok("imap_search_messages", {"mailbox": "INBOX", "limit": 5})  # INBOX open
        for _ in range(2):  # NOOP where UNSELECT went: the same two round trips
            caplog.clear()
            data = await mcp.ok(LIST, COUNTS)
            assert logged_cost(caplog) == (counted + 2, 2)
        with other_client(imap_server, user) as other:
            assert inbox_counts(data) == truth(other)
            other.append("INBOX", plain_message("inbox 7", "a body"))
            assert inbox_counts(await mcp.ok(LIST, COUNTS)) == truth(other)
            other.select_folder("INBOX")
            other.add_flags(other.search(["SUBJECT", "inbox 1"]), [b"\\Deleted"])
            other.expunge()
            other.close_folder()
            assert inbox_counts(await mcp.ok(LIST, COUNTS)) == truth(other)
            other.select_folder("INBOX")
            other.add_flags(other.search(["SUBJECT", "inbox 2"]), [b"\\Seen"])
            other.close_folder()
            counts = truth(other)
            assert inbox_counts(await mcp.ok(LIST, COUNTS)) == counts
            assert (counts["messages"], counts["unseen"]) == (3, 2)


async def test_no_unselect_and_inbox_examined_once_on_the_wire(dovecot: Dovecot) -> None:
    user = dovecot.new_user()
    seed(dovecot, user)
    with recording(dovecot) as recorder:
        async for mcp in open_client(make_config({"default": plain_settings(dovecot, user, recorder.port)})):
            await mcp.ok(LIST, {})
            verbs = []
            for _ in range(3):
                recorder.take()
                await mcp.ok(LIST, COUNTS)
                verbs.append([command.verb for out, _ in recorder.take() for command in parse_commands(out)])
            statuses = ["STATUS"] * verbs[0].count("STATUS")
            assert len(statuses) >= 2
            assert verbs == [["LIST", "EXAMINE", *statuses], *[["LIST", "NOOP", *statuses]] * 2]


async def test_a_mailbox_resource_reads_the_open_inbox_counts_with_noop_not_unselect(
    dovecot: Dovecot,
) -> None:
    user = dovecot.new_user()
    seed(dovecot, user)
    with recording(dovecot) as recorder:
        config = make_config({"default": plain_settings(dovecot, user, recorder.port)})
        async with Client(build_server(config)) as client:
            await client.call_tool("imap_search_messages", {"mailbox": "INBOX", "limit": 5})  # INBOX open
            with other_client(dovecot, user) as other:
                for appended in range(2):  # as it is, then after another client's append
                    recorder.take()
                    read = await client.read_resource(mailbox_uri("default", "INBOX"))
                    verbs = [command.verb for out, _ in recorder.take() for command in parse_commands(out)]
                    # NOOP told of the new message: STATUS asked again behind a new EXAMINE.
                    asked = ["NOOP", "STATUS", *(["EXAMINE", "STATUS"] if appended else [])]
                    assert "UNSELECT" not in verbs and verbs[-len(asked) :] == asked
                    found = json.loads(read.contents[0].text)  # type: ignore[union-attr]
                    assert {key: found[key] for key in COUNTED} == truth(other)
                    assert found["messages"] == 3 + appended
                    other.append("INBOX", plain_message("inbox 7", "a body"))

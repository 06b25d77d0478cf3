"""imap_save_draft's replies and revisions through an MCP client on the server matrix (Courier finds its
Drafts folder through drafts_mailbox: it has no SPECIAL-USE).

reply_all takes exactly the right recipients and threading headers from the original; from_address is
one of the account's addresses or refused; replace_message_id leaves exactly one draft (every message
of every mailbox is counted before and after), moves the old draft to Trash and never expunges another
message marked \\Deleted, refuses anything but a \\Draft of the Drafts folder without changing anything,
and its undo puts the old draft back byte for byte.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.accounts import account_settings
from tests.support.clients.in_process import AccountFactory, make_config, open_client
from tests.support.mail.mail_state import message_id_listing, raw_messages
from tests.support.mail.mailgen import plain_message
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.matrix import MatrixServer
from tests.support.shared.write_drafts import added, drafts_for, read

pytestmark = pytest.mark.anyio


TOOL = "imap_save_draft"
ADDRESSES = ["user@example.org", "user.alias@example.org"]

TEAM = plain_message(
    "AW: Re: Quartalsplan",
    "Wer kommt?\n",
    from_="Bob Berg <bob@example.net>",
    to="Test User <USER@example.org>, Carol <carol@example.net>, bob@example.net",
    message_id="<team-3@example.net>",
    headers={
        "Cc": "user.alias@example.org, Dave <dave@example.net>, CAROL@example.net",
        "In-Reply-To": "<team-2@example.net>",
    },
)
LIST_POST = plain_message(
    "[dev] Release",
    "Ship it?\n",
    from_="Erin <erin@example.net>",
    to="dev@lists.example.org",
    message_id="<list-1@example.net>",
    headers={"Reply-To": "dev@lists.example.org", "List-Id": "<dev.lists.example.org>"},
)


async def inbox_id(mcp: Any, subject: str) -> str:
    data = await mcp.ok("imap_search_messages", {"mailbox": "INBOX", "subject": subject})
    (found,) = data["messages"]
    message_id: str = found["message_id"]
    return message_id


async def test_reply_all_has_the_right_recipients_threading_and_sender(
    imap_server: MatrixServer, user: str, account: AccountFactory
) -> None:
    server = imap_server
    server.seed(user, "INBOX", [TEAM, LIST_POST])
    drafts, settings = drafts_for(server, user)
    before = message_id_listing(server, user)
    config = make_config({"default": account(user, addresses=ADDRESSES, **settings)}, write_enabled=True)
    async for mcp in open_client(config):
        # Regression: with Drafts EXAMINEd by the connection, Courier refused the APPEND ("Current box
        # is selected READ-ONLY").
        team = await inbox_id(mcp, "Quartalsplan")
        await mcp.ok("imap_search_messages", {"mailbox": drafts})
        data = await mcp.ok(TOOL, {"in_reply_to": team, "reply_all": True, "body_text": "Ich."})
        message = await read(mcp, data["message_id"])
        assert message["to"] == "Bob Berg <bob@example.net>"
        assert message["cc"] == "Carol <carol@example.net>, Dave <dave@example.net>"
        # The original was sent to the alias too: the reply is from the first of them it names.
        assert message["from"] == "user@example.org"
        assert message["subject"] == "Re: Quartalsplan"
        assert message["headers"]["In-Reply-To"] == "<team-3@example.net>"
        assert message["headers"]["References"] == "<team-2@example.net> <team-3@example.net>"
        reply_all = data["header_message_id"]

        # An explicit send-as identity; a Cc given is added to reply-all's.
        args = {
            "in_reply_to": team,
            "reply_all": True,
            "from_address": "Test <user.alias@example.org>",
            "cc": ["eve@example.net", "dave@example.net"],
        }
        preview = await mcp.ok(TOOL, {**args, "dry_run": True})
        headers = preview["draft"]["headers"]
        assert headers["From"] == "Test <user.alias@example.org>"
        assert headers["Cc"] == "eve@example.net, dave@example.net, Carol <carol@example.net>"

        # A list's Reply-To is the list: the reply goes there, once.
        post = await inbox_id(mcp, "Release")
        data = await mcp.ok(TOOL, {"in_reply_to": post, "reply_all": True, "body_text": "Yes."})
        message = await read(mcp, data["message_id"])
        assert (message["to"], message.get("cc")) == ("dev@lists.example.org", None)
        assert message["subject"] == "Re: [dev] Release"
        list_reply = data["header_message_id"]

        for bad, parameter in (
            ({"from_address": "boss@example.org", "to": ["a@example.com"]}, "from_address"),
            ({"reply_all": True, "to": ["a@example.com"]}, "reply_all"),
        ):
            envelope = await mcp.fail(TOOL, bad, "invalid_input")
            assert envelope["error"]["details"]["parameter"] == parameter
    assert added(before, message_id_listing(server, user)) == {drafts: sorted([reply_all, list_reply])}


async def test_a_revised_draft_moves_the_old_one_to_trash_and_the_undo_brings_it_back_as_it_was(
    imap_server: MatrixServer, user: str, account: AccountFactory
) -> None:
    """Drafts holds a message marked \\Deleted by another client and a non-draft: replacing leaves both
    alone, moves the replaced draft to Trash (never expunged: C1) and the undo's two calls move it back
    byte for byte and the new one to Trash."""
    server = imap_server
    drafts, settings = drafts_for(server, user)
    trash = server.mailbox_name("Trash")
    server.seed(user, trash, [])
    settings = {"trash_mailbox": trash, **settings} if server.kind == "courier" else settings
    server.seed(
        user,
        drafts,
        [plain_message("someone else's deleted", "x"), plain_message("not a draft", "y")],
        flags=["\\Deleted \\Draft", "\\Seen"],
    )
    server.seed(user, "INBOX", [TEAM])
    start = message_id_listing(server, user)
    config = make_config({"default": account(user, addresses=ADDRESSES, **settings)}, write_enabled=True)
    async for mcp in open_client(config):
        first = await mcp.ok(TOOL, {"to": ["bob@example.net"], "subject": "Plan v1", "body_text": "One.\n"})
        first_raw = raw_messages(server, user, drafts)[first["header_message_id"]]
        second = await mcp.ok(
            TOOL,
            {
                "to": ["bob@example.net", "Carol <carol@example.net>"],
                "subject": "Plan v2",
                "body_text": "Two.\n",
                "replace_message_id": first["message_id"],
            },
        )
        assert (second["status"], second["replaced_message_id"]) == ("ok", first["message_id"])
        assert second["replaced_trash_message_id"].startswith("imap:default:")
        after = message_id_listing(server, user)
        assert added(start, after) == {
            drafts: [second["header_message_id"]],
            trash: [first["header_message_id"]],
        }
        message = await read(mcp, second["message_id"])
        assert (message["subject"], message["body_text"]) == ("Plan v2", "Two.\n")

        back, new_to_trash = second["undo"]
        assert second["next_action"] == back and back["instruction"].startswith("Undo (1 of 2)")
        assert back["arguments"]["message_ids"] == [second["replaced_trash_message_id"]]
        await mcp.ok(back["tool"], back["arguments"])
        await mcp.ok(new_to_trash["tool"], new_to_trash["arguments"])
        assert added(start, message_id_listing(server, user)) == {
            drafts: [first["header_message_id"]],
            trash: [second["header_message_id"]],
        }
        assert raw_messages(server, user, drafts)[first["header_message_id"]] == first_raw

        # Not replaceable: a message of the INBOX, a message of Drafts without \Draft, a garbled id.
        unchanged = message_id_listing(server, user)
        drafted = await mcp.ok("imap_search_messages", {"mailbox": drafts, "subject": "not a draft"})
        team = await inbox_id(mcp, "Quartalsplan")
        for target in (team, drafted["messages"][0]["message_id"], "imap:default:Drafts:x:1"):
            envelope = await mcp.fail(
                TOOL, {"to": ["a@example.com"], "replace_message_id": target}, "invalid_input"
            )
            assert envelope["error"]["details"]["parameter"] == "replace_message_id"
        assert message_id_listing(server, user) == unchanged


async def test_without_move_or_uidplus_a_draft_is_not_replaced_and_nothing_changes(
    dovecot_without_uidplus: Dovecot,
) -> None:
    server = dovecot_without_uidplus
    user = server.new_user()
    server.seed(user, "Drafts", [plain_message("older draft", "x")], flags="\\Draft")
    server.seed(user, "Trash", [])
    before = message_id_listing(server, user)
    settings = account_settings(server, user, drafts_mailbox="Drafts", trash_mailbox="Trash")
    async for mcp in open_client(make_config({"default": settings}, write_enabled=True)):
        found = await mcp.ok("imap_search_messages", {"mailbox": "Drafts"})
        old = found["messages"][0]["message_id"]
        envelope = await mcp.fail(
            TOOL, {"to": ["a@example.com"], "replace_message_id": old}, "permission_denied"
        )
        assert envelope["error"]["details"]["missing_capability"] == "MOVE or UIDPLUS"
    assert message_id_listing(server, user) == before


@pytest.mark.parametrize("imap_server", ["dovecot"], indirect=True)
async def test_regression_a_reply_all_to_5000_cc_says_how_many_the_original_names(
    imap_server: MatrixServer, user: str, account: AccountFactory
) -> None:
    """Issue 33 item 14: a reply-all to an original with 5,000 Cc kept 100 with a warning that counted
    317, the addresses of the first 4,000 characters of the Cc header read. The warning now counts the
    whole header (the header block is read up to 256 KB, and its cut is reported on its own)."""
    crowd = ", ".join(f"person{n}@example.net" for n in range(5000))
    imap_server.seed(
        user,
        "INBOX",
        [
            plain_message(
                "All hands",
                "Everyone?\n",
                from_="Boss <boss@example.net>",
                to="user@example.org",
                message_id="<hands@example.net>",
                headers={"Cc": crowd},
            )
        ],
    )
    drafts_for(imap_server, user)
    config = make_config({"default": account(user, addresses=ADDRESSES)}, write_enabled=True)
    async for mcp in open_client(config):
        original = await inbox_id(mcp, "All hands")
        envelope = await mcp.call(TOOL, {"in_reply_to": original, "reply_all": True, "dry_run": True})
        assert envelope["success"], envelope
        headers = envelope["data"]["draft"]["headers"]
        assert headers["To"] == "Boss <boss@example.net>"
        assert headers["Cc"].count("@") == 99
        warnings = [w for w in envelope["meta"]["warnings"] if "recipients" in w]
        assert warnings == [
            "The original names 5001 recipients; the draft keeps the first 100 (To first, then Cc)."
        ], envelope["meta"]["warnings"]

"""imap_save_draft's replace_message_id after the C1 review (issue 33, items 1 and 9), through an MCP client.

A replaced draft is moved to Trash, never expunged; its undo moves it back byte for byte, whatever it
held (HTML only, a text longer than any quote, threading headers); a message with attachments in the
Drafts folder is replaced only once the user confirmed it through the client, and the audit line names
the message that left Drafts. Every mailbox is counted before and after.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tests.support.clients.elicitation import answering
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import AccountFactory, make_config, open_client
from tests.support.mail.mail_state import message_id_listing, raw_messages
from tests.support.mail.mailgen import html_only_message, large_attachment_message, plain_message
from tests.support.servers.matrix import MatrixServer
from tests.support.shared.write_drafts import drafts_for

pytestmark = pytest.mark.anyio

TOOL = "imap_save_draft"
THREADED = {"In-Reply-To": "<root-1@example.net>", "References": "<root-0@example.net> <root-1@example.net>"}
#: Drafts no call of imap_save_draft could write again as they were (before C1 their undo lost them).
HARD_TO_REBUILD = {
    "html only": html_only_message("html only draft", "<p>Hello <b>there</b></p>"),
    "long and threaded": plain_message(
        "long threaded draft", "word " * 6000, message_id="<long-1@example.org>", headers=THREADED
    ),
}


def setup(server: MatrixServer, user: str, drafts: list[bytes]) -> tuple[str, str, dict[str, Any]]:
    """Drafts (holding ``drafts``, flagged \\Draft) and an empty Trash, and the settings that name them."""
    drafts_box, settings = drafts_for(server, user)
    trash = server.mailbox_name("Trash")
    server.seed(user, trash, [])
    server.seed(user, drafts_box, drafts, flags="\\Draft")
    if server.kind == "courier":  # no SPECIAL-USE there
        settings = {**settings, "trash_mailbox": trash}
    return drafts_box, trash, settings


async def only_id(mcp: EnvelopeClient, mailbox: str, subject: str) -> str:
    data = await mcp.ok("imap_search_messages", {"mailbox": mailbox, "subject": subject})
    (found,) = data["messages"]
    message_id: str = found["message_id"]
    return message_id


@pytest.mark.parametrize("imap_server", ["dovecot", "courier"], indirect=True)
@pytest.mark.parametrize("kind", sorted(HARD_TO_REBUILD))
async def test_undo_of_a_replacement_brings_the_old_draft_back_byte_for_byte(
    imap_server: MatrixServer, user: str, account: AccountFactory, kind: str
) -> None:
    server = imap_server
    drafts, trash, settings = setup(server, user, [HARD_TO_REBUILD[kind]])
    ((header_id, original),) = raw_messages(server, user, drafts).items()
    start = message_id_listing(server, user)
    async for mcp in open_client(make_config({"default": account(user, **settings)}, write_enabled=True)):
        old = await only_id(mcp, drafts, "draft")
        new = await mcp.ok(TOOL, {"to": ["a@example.com"], "body_text": "v2", "replace_message_id": old})
        assert (new["status"], new["replaced_message_id"]) == ("ok", old)
        assert message_id_listing(server, user) == {
            **start,
            drafts: [new["header_message_id"]],
            trash: [header_id],
        }
        assert raw_messages(server, user, trash)[header_id] == original
        for step in new["undo"]:
            await mcp.ok(step["tool"], step["arguments"])
    assert message_id_listing(server, user) == {**start, trash: [new["header_message_id"]]}
    assert raw_messages(server, user, drafts) == {header_id: original}


async def test_a_draft_with_attachments_is_replaced_only_when_the_user_confirms(
    dovecot: MatrixServer, user: str, account: AccountFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """The C1 chain's last step: mail with a PDF moved into Drafts and flagged \\Draft is no draft by every
    sign. A client that cannot ask the user is refused, a user who declines changes nothing, and a user who
    accepts gets it moved to Trash, named in the audit line."""
    drafts, trash, settings = setup(
        dovecot, user, [large_attachment_message(40_000, subject="Signed contract")]
    )
    config = make_config({"default": account(user, **settings)}, write_enabled=True)
    start = message_id_listing(dovecot, user)
    args: dict[str, Any] = {"to": ["a@example.com"], "body_text": "v2"}
    async for mcp in open_client(config):  # no elicitation
        args["replace_message_id"] = await only_id(mcp, drafts, "Signed contract")
        refused = await mcp.fail(TOOL, args, "permission_denied")
        assert refused["error"]["details"] == {"parameter": "replace_message_id", "attachments": 1}
        assert "confirm_token" not in str(refused)
        planned = await mcp.ok(TOOL, {**args, "dry_run": True})  # a dry run asks nobody
        assert (planned["saved"], planned["replaced_message_id"]) == (False, None)
    declining = answering("decline")
    async for mcp in open_client(config, elicitation_callback=declining, mode="legacy"):
        await mcp.fail(TOOL, args, "confirmation_required")
    assert message_id_listing(dovecot, user) == start
    caplog.set_level(logging.INFO, logger="mail_imap_mcp.audit")
    accepting = answering("accept")
    async for mcp in open_client(config, elicitation_callback=accepting, mode="legacy"):
        new = await mcp.ok(TOOL, args)
    assert accepting.asked == declining.asked
    assert accepting.asked[0].startswith("Move the draft 'Signed contract' with 1 attachment(s)")
    (header_id,) = start[drafts] or []
    assert message_id_listing(dovecot, user) == {
        **start,
        drafts: [new["header_message_id"]],
        trash: [header_id],
    }
    asked, line = [r.getMessage() for r in caplog.records if r.name == "mail_imap_mcp.audit"]
    assert asked.endswith("action=replace messages=1 outcome=confirmation_required")
    assert line.endswith(
        f"action=replace messages=2 outcome=ok replaced={args['replace_message_id']} "
        f"moved_to_trash={new['replaced_trash_message_id']}"
    )

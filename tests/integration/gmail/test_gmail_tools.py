"""Every other tool on the Gmail emulation, end to end through the MCP client: reading a message, its
attachment and source, the mailbox list with Gmail's roles, drafts, label folders managed as mailboxes,
and what changed since a token."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import account_client
from tests.support.mail import mailgen
from tests.support.servers.gmail import ALL_MAIL, Gmail

pytestmark = pytest.mark.anyio


@pytest.fixture
async def client(gmail: Gmail) -> AsyncIterator[tuple[EnvelopeClient, str]]:
    user = gmail.new_user("o")
    scan = mailgen.large_attachment_message(3000, filename="scan-2026.pdf", subject="Scanned contract")
    gmail.seed(user, "INBOX", [scan, mailgen.plain_message("Lunch", "Friday at noon?")])
    async for mcp in account_client(gmail, user, write_enabled=True):
        yield mcp, user


async def test_read_tools(gmail: Gmail, client: tuple[EnvelopeClient, str]) -> None:
    mcp, user = client
    boxes = await mcp.ok("imap_list_mailboxes", {})
    roles = {box["name"]: box["special_use"] for box in boxes["mailboxes"]}
    assert (
        roles[ALL_MAIL] == "\\All"
        and roles["[Gmail]/Trash"] == "\\Trash"
        and roles["[Gmail]/Sent Mail"] == "\\Sent"
    )
    found = await mcp.ok("imap_search_messages", {"mailbox": "*"})
    scan = next(m for m in found["messages"] if m["subject"] == "Scanned contract")
    message = await mcp.ok("imap_get_message", {"message_id": scan["message_id"]})
    assert message["message"]["body_text"].startswith("Please find the scanned document")
    (attached,) = message["message"]["attachments"]
    assert (attached["filename"], attached["content_type"]) == ("scan-2026.pdf", "application/pdf")
    part = await mcp.call(
        "imap_get_attachment", {"message_id": scan["message_id"], "part_id": attached["part_id"]}
    )
    assert part["success"], part
    raw = await mcp.ok("imap_get_message_raw", {"message_id": scan["message_id"]})
    assert raw["total_size_bytes"] == raw["returned_bytes"] == scan.get("size", raw["total_size_bytes"])
    token = (await mcp.ok("imap_get_changes", {"mailbox": ALL_MAIL}))["changes_token"]
    await mcp.ok(
        "imap_update_message_flags",
        {"message_ids": [scan["message_id"]], "operation": "add", "flags": ["\\Seen"]},
    )
    changed = await mcp.ok("imap_get_changes", {"mailbox": ALL_MAIL, "since": token})
    assert changed["changed"] == [{"message_id": scan["message_id"], "flags": ["\\Seen"]}]
    # Archived by another client (Inbox removed): still in All Mail, so nothing was expunged there.
    with gmail.connect(user) as imap:
        imap.select_folder("INBOX")
        imap.remove_gmail_labels(imap.search("ALL"), ["\\Inbox"])
    later = await mcp.ok("imap_get_changes", {"mailbox": ALL_MAIL, "since": changed["changes_token"]})
    assert not later.get("expunged") and not later.get("new")


async def test_drafts_and_label_folders(gmail: Gmail, client: tuple[EnvelopeClient, str]) -> None:
    mcp, user = client
    draft = await mcp.ok(
        "imap_save_draft", {"to": ["bob@example.com"], "subject": "Hi", "body_text": "Hello"}
    )
    assert draft["mailbox"] == "[Gmail]/Drafts" and draft["located_by"] == "appenduid"
    drafts = await mcp.ok("imap_search_messages", {"mailbox": "*", "fields": "full"})
    assert next(m for m in drafts["messages"] if m["subject"] == "Hi")["labels"] == ["Draft"]
    await mcp.ok("imap_manage_mailbox", {"action": "create", "mailbox": "Projects/2026"})
    with gmail.connect(user) as imap:
        assert imap.folder_exists("Projects/2026")

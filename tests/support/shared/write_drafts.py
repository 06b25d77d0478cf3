"""What tests/integration/drafts_and_sending/test_write_drafts.py shares with other test modules."""

from __future__ import annotations

from typing import Any

from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.mail.mail_state import MessageIdListing
from tests.support.servers.matrix import MatrixServer


def drafts_for(server: MatrixServer, user: str) -> tuple[str, dict[str, Any]]:
    """The user's Drafts folder (created where the server does not make it) and the account settings it
    needs: Courier marks no folder \\Drafts, so it is configured there."""
    drafts = server.mailbox_name("Drafts")
    server.seed(user, drafts, [])
    return drafts, ({"drafts_mailbox": drafts} if server.kind == "courier" else {})


def added(before: MessageIdListing, after: MessageIdListing) -> dict[str, list[str]]:
    """Message-IDs per mailbox that are in ``after`` but not in ``before`` (and checks none went away)."""
    assert before.keys() == after.keys()
    new = {}
    for name, ids in after.items():
        old = list(before[name] or [])
        for found in ids or []:
            if found in old:
                old.remove(found)
            else:
                new.setdefault(name, []).append(found)
        assert not old, f"messages disappeared from {name}: {old}"
    return new


async def read(mcp: EnvelopeClient, message_id: str) -> dict[str, Any]:
    message: dict[str, Any] = (await mcp.ok("imap_get_message", {"message_id": message_id}))["message"]
    return message

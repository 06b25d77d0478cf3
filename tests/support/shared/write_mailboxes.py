"""What tests/integration/writes/test_write_mailboxes.py shares with other test modules."""

from __future__ import annotations

from typing import Any

from mail_imap_mcp.config import Config
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import AccountFactory, make_config
from tests.support.mail.mailgen import plain_message

TOOL = "imap_manage_mailbox"


def messages(n: int, label: str) -> list[bytes]:
    return [plain_message(subject=f"{label} {i}", body=f"{label} body {i}") for i in range(n)]


def writable(account: AccountFactory, user: str, **settings: Any) -> Config:
    return make_config({"default": account(user, **settings)}, write_enabled=True)


async def confirmed(mcp: EnvelopeClient, args: dict[str, Any]) -> dict[str, Any]:
    """Call once (confirmation_required), then as its next_action says; return the data."""
    envelope = await mcp.fail(TOOL, args, "confirmation_required")
    next_action = envelope["data"]["next_action"]
    assert next_action["tool"] == TOOL
    assert next_action["arguments"]["confirm_token"] == envelope["error"]["details"]["confirm_token"]
    assert args.items() <= next_action["arguments"].items()
    return await mcp.ok(TOOL, next_action["arguments"])

"""The write gate: with writes off, write tools are not listed, and a call to one anyway changes
nothing and says which setting would allow it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mail_imap_mcp.config.switches import WRITE_ENABLED
from mail_imap_mcp.tools.registry import TOOLS
from tests.support.clients.in_process import AccountFactory, make_config, open_client
from tests.support.mail import mailgen
from tests.support.servers.dovecot import Dovecot

pytestmark = pytest.mark.anyio

# The tools write_enabled lists and gates: sending (send_enabled; tests/integration/drafts_and_sending/test_send.py) and
# unsubscribing (unsubscribe_enabled; test_unsubscribe.py) have switches of their own, never write_enabled.
WRITE_TOOLS = sorted(spec.name for spec in TOOLS if spec.listed_with.setting is WRITE_ENABLED)


def write_calls(message_id: str) -> dict[str, dict[str, Any]]:
    """A valid call of every write tool (the gate is the only thing that may stop it)."""
    return {
        "imap_update_message_flags": {
            "message_ids": [message_id],
            "operation": "add",
            "flags": ["\\Flagged"],
        },
        "imap_apply_to_messages": {
            "message_ids": [message_id],
            "action": "copy",
            "destination_mailbox": "INBOX",
        },
        "imap_manage_mailbox": {"action": "create", "mailbox": "New"},
        "imap_save_draft": {"to": ["a@example.org"], "subject": "s", "body_text": "b"},
    }


async def test_with_writes_off_write_tools_are_unlisted_and_refuse_naming_the_setting(
    dovecot: Dovecot, user: str, account: AccountFactory
) -> None:
    dovecot.seed(user, "INBOX", [mailgen.plain_message("keep", "x")])
    config = make_config({"default": account(user)})
    async for mcp in open_client(config):
        names = {tool.name for tool in (await mcp.client.list_tools()).tools}
        assert not names & set(WRITE_TOOLS)
        assert not names & {"imap_get_operation", "imap_cancel_operation"}
        message_id = (await mcp.ok("imap_search_messages"))["messages"][0]["message_id"]
        calls = write_calls(message_id)
        for tool in WRITE_TOOLS:
            envelope = await mcp.call(tool, calls[tool])
            assert envelope["error"]["code"] == "permission_denied", (tool, envelope["error"])
            assert "write_enabled" in envelope["error"]["message"]
        after = await mcp.ok("imap_search_messages")
        assert after["total"] == 1
        assert "\\Flagged" not in after["messages"][0].get("flags", [])
        boxes = [box["name"] for box in (await mcp.ok("imap_list_mailboxes"))["mailboxes"]]
        assert "New" not in boxes


async def test_writes_on_for_one_account_lists_them_and_gates_the_other(
    dovecot: Dovecot, account: AccountFactory
) -> None:
    reader, writer = dovecot.new_user(), dovecot.new_user()
    config = make_config({"reader": account(reader), "writer": {**account(writer), "write_enabled": True}})
    async for mcp in open_client(config):
        names = {tool.name for tool in (await mcp.client.list_tools()).tools}
        assert set(WRITE_TOOLS) <= names
        envelope = await mcp.fail(
            "imap_manage_mailbox",
            {"account_id": "reader", "action": "create", "mailbox": "New"},
            "permission_denied",
        )
        assert "write_enabled = true in [accounts.reader]" in envelope["error"]["message"]


async def test_every_write_is_audited_to_the_json_lines_file_without_content(
    dovecot: Dovecot, user: str, tmp_path: Path
) -> None:
    import json
    import os
    import sys

    from mcp import Client, StdioServerParameters

    from tests.support.accounts import PASSWORD_ENV, account_settings, config_toml
    from tests.support.clients.envelope_client import EnvelopeClient

    audit = tmp_path / "audit.jsonl"
    config = tmp_path / "config.toml"
    config.write_text(
        config_toml({"default": account_settings(dovecot, user)})
        + f"\n[server]\nwrite_enabled = true\naudit_file = {json.dumps(str(audit))}\n"
    )
    server = str(Path(sys.executable).parent / "mail-imap-mcp")
    params = StdioServerParameters(
        command=server,
        args=["serve", "--config", str(config)],
        env={PASSWORD_ENV: dovecot.password, "PATH": os.environ["PATH"]},
    )
    async with Client(params) as client:
        mcp = EnvelopeClient(client)
        await mcp.ok("imap_manage_mailbox", {"action": "create", "mailbox": "Secret Project X"})
        await mcp.fail("imap_manage_mailbox", {"action": "delete", "mailbox": "INBOX"}, "invalid_input")
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(line["tool"], line["action"]) for line in lines] == [
        ("imap_manage_mailbox", "create"),
        ("imap_manage_mailbox", "delete"),
    ]
    assert lines[0]["outcome"] == "ok" and lines[0]["request_id"].startswith("req_")
    assert lines[0]["account"] == "default" and "time" in lines[0]
    assert "Secret" not in audit.read_text()


async def test_regression_a_write_after_the_server_dropped_the_idle_connection_reconnects(
    dovecot: Dovecot, user: str, account: AccountFactory
) -> None:
    # Found by the nothing-lost machine: the first write after an idle disconnect answered unavailable
    # ("could not re-establish it") although nothing had been sent. Nothing sent: safe to reconnect.
    config = make_config({"default": account(user)}, write_enabled=True)
    async for mcp in open_client(config):
        await mcp.ok("imap_list_mailboxes")
        dovecot.kick(user)
        created = await mcp.ok("imap_manage_mailbox", {"action": "create", "mailbox": "After Idle"})
        assert created["mailbox"] == "After Idle"
        names = [box["name"] for box in (await mcp.ok("imap_list_mailboxes"))["mailboxes"]]
        assert names.count("After Idle") == 1

"""imap_manage_mailbox's rename into a name the server makes special-use, through an MCP client.

The test Dovecot gives ``\\Archive`` by name (``mailbox Archive { special_use = \\Archive }`` in its config,
as it gives ``\\Junk`` to ``Junk``): an ordinary folder renamed to ``Archive`` would become a special-use
folder, never renamed back by the tool. (``Junk`` is refused before: a search of every mailbox leaves a
folder so named out, marked or not: test_write_mailbox_hidden_names.py.) Every test counts the account's
messages (the Message-IDs of every mailbox) before and after.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tests.support.clients.in_process import AccountFactory, make_config, open_client
from tests.support.mail.mail_state import message_id_listing
from tests.support.servers.faultproxy import FaultProxy
from tests.support.servers.matrix import MatrixServer
from tests.support.shared.write_mailboxes import TOOL, confirmed, messages, writable

pytestmark = pytest.mark.anyio

RENAME = {"action": "rename", "mailbox": "Old", "destination_mailbox": "Archive"}


def audit_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "mail_imap_mcp.audit"]


async def test_a_rename_that_makes_a_folder_special_use_is_undone_at_once(
    dovecot: MatrixServer, user: str, account: AccountFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """Renamed to ``Archive``, LIST shows the folder ``\\Archive``: it is renamed back at once, the call answers
    invalid_input naming destination_mailbox, both renames are audited, and every message is where it was."""
    caplog.set_level(logging.INFO, logger="mail_imap_mcp.audit")
    dovecot.seed(user, "Old", messages(3, "old"))
    dovecot.seed(user, "INBOX", messages(1, "inbox"))
    before = message_id_listing(dovecot, user)
    async for mcp in open_client(writable(account, user)):
        first = await mcp.fail(TOOL, RENAME, "confirmation_required")
        envelope = await mcp.fail(TOOL, first["data"]["next_action"]["arguments"], "invalid_input")
        error = envelope["error"]
        assert error["details"]["parameter"] == "destination_mailbox"
        assert (error["details"]["mailbox_now"], error["details"]["special_use"]) == ("Old", "\\Archive")
        assert "undone" in error["message"] and "'Old' again" in error["message"], error["message"]
    assert message_id_listing(dovecot, user) == before
    lines = audit_lines(caplog)
    assert any("action=rename_back messages=3 outcome=ok" in line for line in lines), lines
    assert any("action=rename messages=0 outcome=invalid_input" in line for line in lines), lines


async def test_renaming_into_a_listed_special_use_folders_name_is_refused_first(
    dovecot: MatrixServer, user: str, account: AccountFactory
) -> None:
    """Where LIST shows ``Archive`` special-use already, the name is refused before anything is sent, in
    words that say why (not only that it exists)."""
    dovecot.seed(user, "Old", messages(2, "old"))
    dovecot.seed(user, "Archive", messages(1, "kept"))
    before = message_id_listing(dovecot, user)
    async for mcp in open_client(writable(account, user)):
        envelope = await mcp.fail(TOOL, RENAME, "invalid_input")
        assert envelope["error"]["details"]["parameter"] == "destination_mailbox"
        assert "special-use \\Archive" in envelope["error"]["message"], envelope["error"]["message"]
    assert message_id_listing(dovecot, user) == before


async def test_a_failed_rename_back_names_the_folder_now_and_the_steps_that_restore_it(
    dovecot: MatrixServer, user: str, account: AccountFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """The rename back never reaches the server (the fault proxy drops it and resets the connection):
    the answer says the folder is now ``Archive`` (found by LIST on a new connection), with the steps to
    restore it; following them with the tools brings every message back to ``Old``."""
    caplog.set_level(logging.INFO, logger="mail_imap_mcp.audit")
    dovecot.seed(user, "Old", messages(3, "old"))
    before = message_id_listing(dovecot, user)
    with FaultProxy(dovecot.host, dovecot.plain_port) as proxy:
        proxy.drop_when_sent(b" RENAME ", times=2)
        settings = account(user, host="127.0.0.1", port=proxy.port, security="plain", ca_file=None)
        async for mcp in open_client(make_config({"default": settings}, write_enabled=True)):
            first = await mcp.fail(TOOL, RENAME, "confirmation_required")
            envelope = await mcp.fail(TOOL, first["data"]["next_action"]["arguments"], "invalid_input")
            assert proxy.drops == 1
            error = envelope["error"]
            details: dict[str, Any] = error["details"]
            assert (details["parameter"], details["mailbox_now"]) == ("destination_mailbox", "Archive")
            assert "it is now 'Archive'" in error["message"], error["message"]
            assert len(details["steps"]) == 3
            assert message_id_listing(dovecot, user) == {"INBOX": [], "Archive": before["Old"]}

            step = envelope["data"]["next_action"]
            assert step["arguments"] == {"account_id": "default", "action": "create", "mailbox": "Old"}
            await mcp.ok(step["tool"], step["arguments"])
            found = await mcp.ok("imap_search_messages", {"mailbox": "Archive"})
            ids = [message["message_id"] for message in found["messages"]]
            move = {"action": "move", "message_ids": ids, "destination_mailbox": "Old"}
            assert (await mcp.ok("imap_apply_to_messages", move))["status"] == "ok"
    assert message_id_listing(dovecot, user) == {"INBOX": [], "Archive": [], "Old": before["Old"]}
    lines = audit_lines(caplog)
    assert any("action=rename_back messages=3 outcome=outcome_unknown" in line for line in lines), lines


async def test_an_ordinary_rename_still_lands_with_its_messages(
    dovecot: MatrixServer, user: str, account: AccountFactory
) -> None:
    """The check after RENAME leaves a rename into an ordinary name as it was."""
    dovecot.seed(user, "Old", messages(2, "old"))
    before = message_id_listing(dovecot, user)
    async for mcp in open_client(writable(account, user)):
        data = await confirmed(mcp, {**RENAME, "destination_mailbox": "Spam-ish"})
        assert (data["result_mailbox"], data["changed"]) == ("Spam-ish", True)
    assert message_id_listing(dovecot, user) == {"INBOX": before["INBOX"], "Spam-ish": before["Old"]}


async def test_a_delete_cut_after_the_rename_aside_says_the_name_the_mailbox_has_now(
    dovecot: MatrixServer, user: str, account: AccountFactory
) -> None:
    """Delete renames the mailbox aside before it deletes it: a connection lost when the DELETE of that
    name is sent is outcome_unknown (never sent again), and the answer names where LIST finds the
    mailbox now, where it said only that the mailbox may or may not have
    changed and the mailbox sat under a name nobody was told (found by the random write test on Cyrus)."""
    with dovecot.connect(user) as other:
        other.create_folder("Empty")
    before = message_id_listing(dovecot, user)
    with FaultProxy(dovecot.host, dovecot.plain_port) as proxy:
        proxy.drop_when_sent(b" DELETE ", times=1)
        settings = account(user, host="127.0.0.1", port=proxy.port, security="plain", ca_file=None)
        async for mcp in open_client(make_config({"default": settings}, write_enabled=True)):
            first = await mcp.fail(TOOL, {"action": "delete", "mailbox": "Empty"}, "confirmation_required")
            result = await mcp.ok(TOOL, first["data"]["next_action"]["arguments"])
            assert proxy.drops == 1
            assert result["status"] == "partial" and not result["changed"]
            (issue,) = result["issues"]
            now = result["result_mailbox"]
            assert issue["code"] == "outcome_unknown" and not issue["retryable"]
            # The DELETE never reached the server: the mailbox is under the name it was renamed to.
            listed = set(message_id_listing(dovecot, user))
            assert now.startswith("Empty-deleting-") and now in listed and "Empty" not in listed
            assert f"now named {now!r}" in issue["message"] and "rename it back" in issue["message"]
    after = message_id_listing(dovecot, user)
    assert sum(map(len, after.values())) == sum(map(len, before.values()))  # no message anywhere changed

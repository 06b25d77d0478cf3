"""imap_list_mailboxes with include_counts, where the server refuses one folder's STATUS (issue 78 item 2).

A folder the user may see but not read (a Dovecot ACL of ``lookup`` only) answers STATUS with NO: the
call still lists every mailbox, with a partial status and an issue naming that folder, through the real
MCP client and valid against the tool's output schema (the result-size bound once answered
``internal`` there).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support.accounts import PASSWORD_ENV, account_settings
from tests.support.clients.in_process import make_config, open_client
from tests.support.mail.mailgen import plain_message
from tests.support.servers.dovecot import ACL_CONFIG, Dovecot
from tests.support.servers.matrix import SESSION_PASSWORD

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def acl_dovecot() -> Iterator[Dovecot]:
    """A Dovecot with ACLs (a folder's ``dovecot-acl`` file)."""
    with Dovecot(extra_config=ACL_CONFIG, password=SESSION_PASSWORD) as server:
        os.environ[PASSWORD_ENV] = server.password  # as the session's servers do (the same password)
        yield server


async def test_a_folder_whose_status_is_refused_leaves_the_others_counted(acl_dovecot: Dovecot) -> None:
    server, user = acl_dovecot, acl_dovecot.new_user()
    server.seed(user, "INBOX", [plain_message("hello", "a body")])
    server.seed(user, "Readable", [plain_message("kept", "a body")])
    server.ensure_folder(user, "Private")
    (server.folder_path(user, "Private") / "dovecot-acl").write_text("owner l\n")
    config = make_config({"default": account_settings(server, user)})
    async for mcp in open_client(config):
        data = await mcp.ok("imap_list_mailboxes", {"include_counts": True})
        counts = {box["name"]: box.get("messages") for box in data["mailboxes"]}
        assert counts == {"INBOX": 1, "Readable": 1, "Private": None}
        assert data["status"] == "partial" and data["returned"] == data["total"] == 3
        (issue,) = data["issues"]
        assert issue["code"] == "status_failed" and "'Private'" in issue["message"]
        # Issue 89 item 18: a refusal for want of permission stays one: not retryable, the server's words said.
        assert issue["retryable"] is False and "NOPERM" in issue["message"], issue

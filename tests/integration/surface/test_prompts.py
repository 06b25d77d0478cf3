"""The prompts' ``mailbox`` argument completed from the account's own mailboxes on a real Dovecot, through
the SDK client in both protocol eras (issue 60 item 3); the team's per-user completion is in
``test_team_auth.py``."""

from __future__ import annotations

import pytest
from mcp import Client
from mcp_types import PromptReference, ResourceTemplateReference

from mail_imap_mcp.server import build_server
from tests.support.accounts import account_settings
from tests.support.clients.in_process import make_config
from tests.support.mail import mailgen
from tests.support.servers.dovecot import Dovecot

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_mailbox_is_completed_from_the_named_accounts_mailboxes(dovecot: Dovecot, mode: str) -> None:
    mine, other = dovecot.new_user("t-pmine"), dovecot.new_user("t-pother")
    dovecot.seed(mine, "Newsletters", [mailgen.plain_message("weekly", "news")])
    dovecot.seed(other, "Secret", [mailgen.plain_message("hidden", "text")])
    config = make_config({"mine": account_settings(dovecot, mine), "other": account_settings(dovecot, other)})
    async with Client(build_server(config), mode=mode) as client:
        ref = PromptReference(type="ref/prompt", name="clean_up_newsletters")
        mailboxes = await client.complete(ref, {"name": "mailbox", "value": ""}, {"account_id": "mine"})
        assert "Newsletters" in mailboxes.completion.values and "INBOX" in mailboxes.completion.values
        assert "Secret" not in mailboxes.completion.values
        typed = await client.complete(ref, {"name": "mailbox", "value": "news"}, {"account_id": "mine"})
        assert typed.completion.values == ["Newsletters"]
        # An account that is not configured completes to nothing (no error, no other account's names).
        nowhere = await client.complete(ref, {"name": "mailbox", "value": ""}, {"account_id": "nowhere"})
        assert nowhere.completion.values == []
        # A resource template's mailbox is completed the same way.
        template = ResourceTemplateReference(
            type="ref/resource", uri="imap://{account_id}/mailbox/{mailbox}/message/{uidvalidity}/{uid}"
        )
        resource = await client.complete(template, {"name": "mailbox", "value": "S"}, {"account_id": "other"})
        assert resource.completion.values == ["Secret"]

"""Rules in team mode (issue 91 item 6), through the MCP SDK's client on Dovecot: two users, each bound to
an account of their own (``users``), each a Dovecot user with scripts of their own. Each manages the rules
of their account only: the other's account is unknown to them (not_found, its rules never named), a
change they ask of it reaches no server, and the rule each saved is in their own scripts alone."""

from __future__ import annotations

import pytest

import mail_imap_mcp.envelope.mcp as envelope_mcp
from mail_imap_mcp.services.rules_script import OWN_SCRIPT
from tests.support.accounts import account_settings
from tests.support.clients.in_process import make_config, open_client
from tests.support.servers.sieve import SieveDovecot
from tests.support.shared.rules import TOOL, sieve_scripts

pytestmark = pytest.mark.anyio

ANN, BOB = "ann@corp.example", "bob@corp.example"


async def test_each_team_user_manages_only_the_rules_of_the_account_bound_to_them(
    sieve_dovecot: SieveDovecot, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = sieve_dovecot
    logins = {ANN: server.new_user(), BOB: server.new_user()}
    for login in logins.values():
        with server.connect(login) as client:
            client.create_folder("School")
    accounts = {
        name: account_settings(
            server, logins[user], sieve={"port": server.managesieve_port}, rules_enabled=True, users=[user]
        )
        for name, user in (("ann", ANN), ("bob", BOB))
    }
    caller = {"user": ANN}  # the user a request's verified token names (HTTP); in process, set here
    monkeypatch.setattr(envelope_mcp, "user_of", lambda context: caller["user"])
    monkeypatch.setattr(envelope_mcp, "user_as_given", lambda context: caller["user"])
    rule = {"action": "save", "name": "School", "query": "from:school.example", "mailbox": "School"}
    async for mcp in open_client(make_config(accounts)):
        saved = await mcp.ok(TOOL, {**rule, "account_id": "ann"})
        assert saved["changed"] is True and saved["account_id"] == "ann"
        for arguments in (
            {"action": "list"},
            {**rule, "name": "Mine now"},
            {"action": "delete", "name": "School"},
            {"action": "undo"},
        ):
            refused = await mcp.fail(TOOL, {**arguments, "account_id": "bob"}, "not_found")
            assert "bob" in refused["error"]["message"], refused
        with sieve_scripts(server, logins[BOB]) as scripts:
            assert scripts.list_scripts() == []  # nothing of ann's calls reached bob's scripts

        caller["user"] = BOB
        theirs = await mcp.ok(TOOL, {"action": "list", "account_id": "bob"})
        assert theirs["rules"] == []  # ann's rule is hers alone
        await mcp.ok(TOOL, {**rule, "name": "Club", "query": "from:club.example", "account_id": "bob"})
        await mcp.fail(TOOL, {"action": "get", "name": "School", "account_id": "ann"}, "not_found")
        await mcp.fail(TOOL, {"action": "undo", "account_id": "ann"}, "not_found")

        caller["user"] = ANN
        mine = await mcp.ok(TOOL, {"action": "list", "account_id": "ann"})
        assert [r["name"] for r in mine["rules"]] == ["School"]
    for user, name in ((ANN, "School"), (BOB, "Club")):
        with sieve_scripts(server, logins[user]) as scripts:
            script = scripts.get_script(OWN_SCRIPT)
        assert f'"name": "{name}"' in script and script.count('"name": ') == 1, script

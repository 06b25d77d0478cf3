"""imap_manage_rules through the MCP SDK's client on Dovecot (Pigeonhole's ManageSieve) and Cyrus
(timsieved): "file mail from the school in School" tried on the user's mail, then saved; a message
delivered through LMTP lands in School; the user's own rule in their active script still runs and every
byte of their script is kept; undo gives them their script back; hostile input is invalid_input naming the
part, and a script over the server's limit is its refusal, nothing changed."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.services import search as search_module
from mail_imap_mcp.services.rules_script import OWN_SCRIPT, find_section
from mail_imap_mcp.tools.manage_rules import dry_run as dry_run_module
from tests.support.accounts import PASSWORD_ENV, account_settings, config_toml
from tests.support.clients.elicitation import answering
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.clients.index_clients import wait_ready
from tests.support.patience import eventually
from tests.support.servers.sieve import SieveCyrus, SieveDovecot
from tests.support.shared.rules import SENDS, TOOL, landed, message, rules_config, sieve_scripts

pytestmark = pytest.mark.anyio

#: The user's own script, with a rule of theirs (CRLF, a comment block: kept byte for byte).
USERS = (
    '# my own rules\r\nrequire ["fileinto"];\r\n/* bills */\r\nif header :contains "subject" "Rechnung" '
    '{\r\n  fileinto "{bills}";\r\n}\r\n'
)


@pytest.mark.parametrize("fixture", ["sieve_dovecot", "sieve_cyrus"])
async def test_a_rule_from_the_school_is_tried_saved_run_on_delivery_and_undone(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    server: SieveDovecot | SieveCyrus = request.getfixturevalue(fixture)
    user = server.new_user()
    school, bills = server.mailbox_name("School"), server.mailbox_name("Bills")
    with server.connect(user) as client:
        client.create_folder(school)
        client.create_folder(bills)
    server.seed(
        user,
        "INBOX",
        [
            message("Frau Lehrer <lehrer@school.example>", "Elternabend"),
            message("<friend@example.net>", "Lunch?"),
            message("=?UTF-8?Q?Sch=C3=BCle?= <office@school.example>", "Zeugnis"),
        ],
    )
    users = USERS.replace("{bills}", bills)
    with sieve_scripts(server, user) as scripts:
        scripts.put_script("mine", users)
        scripts.activate("mine")

    rule = {"action": "save", "name": "School", "query": "from:school.example", "mailbox": "School"}
    async for mcp in open_client(rules_config(server, user, rules_enabled=True)):
        accounts = await mcp.ok("imap_list_accounts")
        assert accounts["accounts"][0]["rules"] == "on"
        tried = await mcp.ok(TOOL, {**rule, "action": "try"})
        assert (tried["changed"], tried["dry_run"]["matched"], tried["dry_run"]["of"]) == (False, 2, 3)
        assert [found["subject"] for found in tried["dry_run"]["newest"]] == ["Zeugnis", "Elternabend"]
        assert "Would have matched 2 of your last 3 messages in INBOX (file into" in tried["dry_run"]["words"]
        with sieve_scripts(server, user) as scripts:
            assert [entry.name for entry in scripts.list_scripts()] == ["mine"]  # nothing saved

        saved = await mcp.call(TOOL, rule)
        assert saved["success"] is True, saved
        assert "Would have matched 2 of your last 3" in saved["summary"]
        data = saved["data"]
        assert data["changed"] is True and data["dry_run"]["matched"] == 2
        assert [(r["name"], r["enabled"]) for r in data["rules"]] == [("School", True)]
        assert f'fileinto "{school}";' in data["rules"][0]["sieve"]
        listed = await mcp.ok(TOOL, {"action": "list"})
        assert [r["name"] for r in listed["rules"]] == ["School"]

        with sieve_scripts(server, user) as scripts:  # the user's script: every byte of it kept
            mine = scripts.get_script("mine")
            start, end = find_section(mine) or (0, 0)
            assert mine[:start] + mine[end:] == users and end > start
            include = scripts.capabilities().offers("include")
            assert (OWN_SCRIPT in {entry.name for entry in scripts.list_scripts()}) is include
            assert ("mine", True) in {(entry.name, entry.active) for entry in scripts.list_scripts()}

        server.deliver(user, message("<office@school.example>", "Schulfest"))
        server.deliver(user, message("<shop@example.com>", "Rechnung 42"))
        server.deliver(user, message("<friend@example.net>", "Kino?"))
        eventually(
            lambda: landed(server, user, [school, bills]) == {school: ["Schulfest"], bills: ["Rechnung 42"]},
            what="the school's message in School, the bill filed by the user's own rule",
        )
        assert "Kino?" in landed(server, user, ["INBOX"])["INBOX"]

        undone = await mcp.ok(TOOL, {"action": "undo"})
        assert undone["rules"] == [] and undone["changed"] is True
        with sieve_scripts(server, user) as scripts:
            assert scripts.get_script("mine") == users  # their script, as it was
            assert ("mine", True) in {(entry.name, entry.active) for entry in scripts.list_scripts()}
            assert OWN_SCRIPT not in {entry.name for entry in scripts.list_scripts()}
        redone = await mcp.ok(TOOL, {"action": "undo"})  # undo of the undo: the rule again
        assert [r["name"] for r in redone["rules"]] == ["School"]


async def test_hostile_input_is_invalid_input_naming_the_part_and_changes_nothing(
    sieve_dovecot: SieveDovecot,
) -> None:
    server, user = sieve_dovecot, sieve_dovecot.new_user()
    with server.connect(user) as client:
        client.create_folder("School")
    base = {"action": "save", "name": "School", "query": "from:school.example", "mailbox": "School"}
    refused = {
        "name": {**base, "name": "evil\r\nrequire"},
        "query": {**base, "query": "from:school\x00.example"},
        "flags": {**base, "flags": ["\\Seen\r\nstop;"]},
        "mailbox": {**base, "mailbox": "School${hex:22}"},
    }
    async for mcp in open_client(rules_config(server, user, rules_enabled=True)):
        for parameter, arguments in refused.items():
            envelope = await mcp.fail(TOOL, arguments, "invalid_input")
            assert envelope["error"]["details"]["parameter"] == parameter, envelope["error"]
        huge = await mcp.fail(TOOL, {**base, "query": "x" * 501}, "invalid_input")
        assert huge["error"]["details"]["parameter"] == "query"
        path = await mcp.fail(TOOL, {**base, "mailbox": "../../etc/passwd"}, "invalid_input")
        assert (
            path["error"]["details"]["parameter"] == "mailbox" and "creates none" in path["error"]["message"]
        )
        unsayable = await mcp.fail(TOOL, {**base, "query": "from:school is:unread"}, "invalid_input")
        assert "'is:unread' cannot be said in a rule" in unsayable["error"]["message"]
        missing = await mcp.fail(TOOL, {"action": "delete", "name": "nope"}, "not_found")
        assert "No rule named 'nope'" in missing["error"]["message"]
        with sieve_scripts(server, user) as scripts:
            assert scripts.list_scripts() == []  # nothing reached the server

        # A script over the server's limit (8,000 bytes a script): its refusal, in its words; the rules
        # saved before it kept.
        failure: dict[str, Any] = {}
        for number in range(20):
            words = " OR ".join(f"subject:word{number}x{i:04d}" for i in range(20))  # 500 characters at most
            envelope = await mcp.call(TOOL, {**base, "name": f"Rule {number}", "query": words})
            if not envelope["success"]:
                failure = envelope
                break
        assert failure["error"]["code"] == "limit_exceeded", failure
        listed = await mcp.ok(TOOL, {"action": "list"})
        assert len(listed["rules"]) == number


async def test_rules_are_unlisted_until_turned_on_and_list_accounts_says_why(
    sieve_dovecot: SieveDovecot,
) -> None:
    server, user = sieve_dovecot, sieve_dovecot.new_user()
    async for mcp in open_client(rules_config(server, user)):
        tools = {tool.name for tool in (await mcp.client.list_tools()).tools}
        assert TOOL not in tools
        accounts = await mcp.ok("imap_list_accounts")
        assert accounts["accounts"][0]["rules"] == "off (rules_enabled)"


@pytest.mark.parametrize("fixture", ["sieve_dovecot", "sieve_cyrus"])
async def test_a_rule_turned_off_files_nothing_and_the_last_one_deleted_leaves_an_empty_script(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    """Without a script of the user's: the rules' own is the active one; turned off, the rule's block is
    commented out and a delivered message stays in INBOX; deleted, the script holds comments alone, which
    the server takes."""
    server: SieveDovecot | SieveCyrus = request.getfixturevalue(fixture)
    user = server.new_user()
    school = server.mailbox_name("School")
    with server.connect(user) as client:
        client.create_folder(school)
    rule = {"action": "save", "name": "School", "query": "from:school.example", "mailbox": school,
            "flags": ["\\Flagged"]}  # fmt: skip
    async for mcp in open_client(rules_config(server, user, rules_enabled=True)):
        saved = await mcp.ok(TOOL, rule)
        assert saved["where"] == f"their own script {OWN_SCRIPT!r}, the active one"
        assert saved["rules"][0]["actions"] == ["add flags \\Flagged", f"file into {school}", "stop"]
        off = await mcp.ok(TOOL, {"action": "disable", "name": "School"})
        assert off["rules"][0]["enabled"] is False
        server.deliver(user, message("<office@school.example>", "Schulfest"))
        eventually(
            lambda: landed(server, user, ["INBOX"])["INBOX"] == ["Schulfest"], what="the message in INBOX"
        )
        await mcp.ok(TOOL, {"action": "enable", "name": "School"})
        server.deliver(user, message("<office@school.example>", "Zeugnis"))
        eventually(
            lambda: landed(server, user, [school])[school] == ["Zeugnis"], what="the message in School"
        )
        gone = await mcp.ok(TOOL, {"action": "delete", "name": "School"})
        assert gone["rules"] == [] and gone["changed"] is True
        assert (await mcp.ok(TOOL, {"action": "list"}))["rules"] == []
    with sieve_scripts(server, user) as scripts:
        assert "\nif " not in scripts.get_script(OWN_SCRIPT)


async def test_a_forwarding_rule_waits_for_the_users_approval_of_its_text_and_only_to_allowed_recipients(
    sieve_dovecot: SieveDovecot,
) -> None:
    """A standing send: ``redirect`` only where the account sends, only to allowed_recipients, and saved
    only once the user approved its exact Sieve through their client (elicitation; no token, no agent; the
    approval page for a client without it: test_rule_approval.py); declined or unaskable, nothing is saved. Pigeonhole's sieve-test shows what the saved rule does."""
    server, user = sieve_dovecot, sieve_dovecot.new_user()
    config = rules_config(server, user, rules_enabled=True, **SENDS)
    forward = {
        "action": "save",
        "name": "Invoices",
        "query": "subject:Rechnung",
        "redirect": ["ann@allowed.test"],
    }

    async for mcp in open_client(config):  # a client that cannot ask its user
        outside = await mcp.fail(TOOL, {**forward, "redirect": ["bob@elsewhere.test"]}, "permission_denied")
        assert outside["error"]["details"]["setting"] == "allowed_recipients"
        assert outside["error"]["details"]["recipients"] == ["bob@elsewhere.test"]
        unasked = await mcp.fail(TOOL, forward, "permission_denied")
        assert "only the user may approve its exact text" in unasked["error"]["message"]
        assert "confirm_token" not in str(unasked)
    declining = answering("decline")
    async for mcp in open_client(config, elicitation_callback=declining):
        await mcp.fail(TOOL, forward, "confirmation_required")
    with sieve_scripts(server, user) as scripts:
        assert scripts.list_scripts() == []  # nothing saved

    accepting = answering("accept")
    async for mcp in open_client(config, elicitation_callback=accepting):
        saved = await mcp.ok(TOOL, forward)
        assert saved["rules"][0]["actions"] == ["forward a copy to ann@allowed.test", "stop"]
        (question,) = accepting.asked
        assert (
            'redirect :copy "ann@allowed.test";' in question
            and saved["rules"][0]["sieve"].strip() in question
        )
    with sieve_scripts(server, user) as scripts:
        script = scripts.get_script(OWN_SCRIPT)
    done = server.sieve_test(script, message("<shop@example.com>", "Rechnung 7"))
    assert "redirect message to: <ann@allowed.test>" in done and "store message in folder: INBOX" in done
    assert "redirect" not in server.sieve_test(script, message("<shop@example.com>", "Hallo"))

    async for mcp in open_client(
        rules_config(server, user, rules_enabled=True)
    ):  # an account that does not send
        tools = {tool.name: tool for tool in (await mcp.client.list_tools()).tools}
        assert "redirect" not in tools[TOOL].input_schema["properties"]
        refused = await mcp.fail(TOOL, forward, "permission_denied")
        assert refused["error"]["details"]["setting"] == "send_enabled"


async def test_the_dry_run_tries_only_the_newest_messages_of_a_larger_inbox(
    sieve_dovecot: SieveDovecot, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Of an INBOX larger than the dry run's reach (5,000; 3 here), only the newest are counted."""
    monkeypatch.setattr(dry_run_module, "LAST", 3)
    server, user = sieve_dovecot, sieve_dovecot.new_user()
    with server.connect(user) as client:
        client.create_folder("School")
    school = [message("<office@school.example>", f"Brief {n}") for n in range(3)]
    others = [message("<friend@example.net>", f"Hi {n}") for n in range(2)]
    server.seed(user, "INBOX", [*school, *others])  # the newest 3: one from the school, two not
    tried = {"action": "try", "query": "from:school.example", "mailbox": "School"}
    async for mcp in open_client(rules_config(server, user, rules_enabled=True)):
        dry = (await mcp.ok(TOOL, tried))["dry_run"]
    assert (dry["matched"], dry["of"]) == (1, 3)
    assert [found["subject"] for found in dry["newest"]] == ["Brief 2"]
    assert "Would have matched 1 of your last 3 messages in INBOX" in dry["words"]


async def test_the_dry_run_is_answered_by_the_local_index_where_the_account_keeps_one(
    sieve_dovecot: SieveDovecot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answered: list[bool] = []
    index_page = search_module.index_page

    def recorded(*args: Any, **kwargs: Any) -> Any:
        answer = index_page(*args, **kwargs)
        answered.append(answer is not None)
        return answer

    monkeypatch.setattr(search_module, "index_page", recorded)
    server, user = sieve_dovecot, sieve_dovecot.new_user()
    with server.connect(user) as client:
        client.create_folder("School")
    server.seed(
        user,
        "INBOX",
        [
            message("Frau Lehrer <lehrer@school.example>", "Elternabend"),
            message("<friend@example.net>", "Lunch?"),
            message("<office@school.example>", "Zeugnis"),
        ],
    )
    account = account_settings(server, user, sieve={"port": server.managesieve_port}, rules_enabled=True)
    config = make_config({"default": account}, index=True, index_dir=str(tmp_path / "ix"))
    app = AppContext.from_config(config)
    async for mcp in open_client(config, app):
        assert await wait_ready(mcp) == "ready"
        answered.clear()
        tried = await mcp.ok(TOOL, {"action": "try", "query": "from:school.example", "mailbox": "School"})
    assert answered == [True]  # the index answered the dry run's search
    dry = tried["dry_run"]
    assert (dry["matched"], dry["of"]) == (2, 3)
    assert [found["subject"] for found in dry["newest"]] == ["Zeugnis", "Elternabend"]


async def test_over_stdio_the_rule_is_saved_audited_and_files_a_deliveredmessage(
    sieve_dovecot: SieveDovecot, tmp_path: Path
) -> None:
    """The bundle's path: ``mail-imap-mcp serve`` spawned over stdio by the SDK's client, its config file
    with ``[accounts.default.sieve]``; the change is in the audit file, without the rule's content."""
    server, user = sieve_dovecot, sieve_dovecot.new_user()
    with server.connect(user) as client:
        client.create_folder("School")
    audit = tmp_path / "audit.jsonl"
    config = tmp_path / "config.toml"
    config.write_text(
        config_toml({"default": account_settings(server, user, rules_enabled=True)})
        + f"\n[accounts.default.sieve]\nport = {server.managesieve_port}\n"
        + f"\n[server]\naudit_file = {json.dumps(str(audit))}\n"
    )
    params = StdioServerParameters(
        command=str(Path(sys.executable).parent / "mail-imap-mcp"),
        args=["serve", "--config", str(config)],
        env={PASSWORD_ENV: server.password, "PATH": os.environ["PATH"]},
    )
    rule = {"action": "save", "name": "School", "query": "from:school.example", "mailbox": "School"}
    async with Client(params) as session:
        saved = await EnvelopeClient(session).ok(TOOL, rule)
    assert saved["changed"] is True and saved["dry_run"]["of"] == 0
    server.deliver(user, message("<office@school.example>", "Schulfest"))
    eventually(
        lambda: landed(server, user, ["School"])["School"] == ["Schulfest"], what="the message in School"
    )
    (line,) = [json.loads(text) for text in audit.read_text().splitlines()]
    assert (line["tool"], line["action"], line["outcome"]) == (TOOL, "rule:save", "ok")
    assert "school.example" not in audit.read_text()

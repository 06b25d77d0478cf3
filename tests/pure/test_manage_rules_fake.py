"""imap_manage_rules through the MCP SDK's client on the in-memory ManageSieve (the pure tier: no server;
what needs no mail, as the fake holds the scripts): list and get, turning a rule off and on, delete and
undo, a server without include (the rules a marked section of the user's script), a script changed by
hand a conflict, and the rules of an account only where its switch is on."""

from __future__ import annotations

from contextlib import nullcontext
from datetime import date
from functools import partial
from typing import Any

import pytest
from mcp import Client

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import Config
from mail_imap_mcp.query import parse
from mail_imap_mcp.query.sieve import sieve_condition
from mail_imap_mcp.server import build_server
from mail_imap_mcp.services.rules import RulesState, change_rules
from mail_imap_mcp.services.rules_script import OWN_SCRIPT, Rule, WrittenRule, compile_rule, find_section
from tests.support.mail.memory_sieve import PIGEONHOLE_EXTENSIONS, MemorySieve

pytestmark = pytest.mark.anyio

TOOL = "imap_manage_rules"
USERS = 'require ["fileinto"];\nif header :contains "subject" "Rechnung" {\n  fileinto "Bills";\n}\n'
CONFIG = Config.model_validate(
    {
        "accounts": {
            "a": {"host": "imap.example.org", "username": "me", "password_env": "P", "rules_enabled": True}
        },
        "server": {"index": False},
    }
)


def _with_rules(sieve: MemorySieve, *names: str) -> MemorySieve:
    for name in names:
        query = f"from:{name.lower()}.example"
        written = compile_rule(
            Rule(name, query, mailbox=name), sieve_condition(parse(query, today=date(2026, 11, 29)).tree)
        )
        change_rules(sieve, None, partial(_appended, written))
    return sieve


def _appended(written: WrittenRule, state: RulesState) -> tuple[list[WrittenRule], str]:
    return [*state.rules, written], f"saved {written.rule.name}"


async def _call(client: Client, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(TOOL, arguments)
    envelope: dict[str, Any] = result.structured_content or {}
    return envelope


def _app(sieve: MemorySieve, config: Config = CONFIG) -> AppContext:
    app = AppContext.from_config(config)
    app.sieve_opener = lambda account, credentials: nullcontext(sieve)
    return app


async def test_list_get_off_on_delete_and_undo_through_the_client() -> None:
    sieve = _with_rules(MemorySieve(scripts={"mine": USERS}, active="mine"), "School", "Club")
    app = _app(sieve)
    try:
        async with Client(build_server(CONFIG, app)) as client:
            listed = await _call(client, {"action": "list"})
            assert [r["name"] for r in listed["data"]["rules"]] == ["School", "Club"]
            assert "included from your active script 'mine'" in listed["data"]["where"]
            got = await _call(client, {"action": "get", "name": "Club"})
            assert got["data"]["rules"][0]["actions"] == ["file into Club", "stop"]
            off = await _call(client, {"action": "disable", "name": "School"})
            assert off["data"]["rules"][0]["enabled"] is False and off["data"]["changed"] is True
            assert "#- if " in sieve.scripts[OWN_SCRIPT]
            on = await _call(client, {"action": "enable", "name": "School"})
            assert on["data"]["rules"][0]["enabled"] is True
            gone = await _call(client, {"action": "delete", "name": "Club"})
            assert gone["success"] is True and gone["data"]["rules"] == []
            back = await _call(client, {"action": "undo"})
            assert [r["name"] for r in back["data"]["rules"]] == ["School", "Club"]
            missing = await _call(client, {"action": "get", "name": "Nope"})
            assert missing["error"]["code"] == "not_found"
            nameless = await _call(client, {"action": "delete"})
            assert nameless["error"]["details"]["parameter"] == "name"
            sieve.scripts[OWN_SCRIPT] = sieve.scripts[OWN_SCRIPT].replace('"School"', '"Elsewhere"')
            before = dict(sieve.scripts)
            edited = await _call(client, {"action": "delete", "name": "Club"})
            assert edited["error"]["code"] == "conflict" and sieve.scripts == before
    finally:
        app.close()
    mine = sieve.scripts["mine"]
    start, end = find_section(mine) or (0, 0)
    assert mine[:start] + mine[end:] == USERS and sieve.active == "mine"


async def test_without_include_the_rules_are_a_marked_section_and_undo_gives_the_script_back() -> None:
    extensions = " ".join(name for name in PIGEONHOLE_EXTENSIONS.split() if name != "include")
    sieve = MemorySieve(extensions=extensions, scripts={"mine": USERS}, active="mine")
    _with_rules(sieve, "School")
    app = _app(sieve)
    try:
        async with Client(build_server(CONFIG, app)) as client:
            listed = await _call(client, {"action": "list"})
            assert "a marked section of your active script 'mine'" in listed["data"]["where"]
            assert [r["name"] for r in listed["data"]["rules"]] == ["School"]
            await _call(client, {"action": "undo"})
    finally:
        app.close()
    assert sieve.scripts == {"mine": USERS, "mail-imap-mcp-undo": sieve.scripts["mail-imap-mcp-undo"]}

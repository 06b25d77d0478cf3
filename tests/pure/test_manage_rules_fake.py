"""imap_manage_rules through the MCP SDK's client on the in-memory ManageSieve (the pure tier: no server;
what needs no mail, as the fake holds the scripts): list and get, turning a rule off and on, delete and
undo, a server without include (the rules a marked section of the user's script), a script changed by
hand a conflict, and the rules of an account only where its switch is on."""

from __future__ import annotations

import logging
from contextlib import nullcontext
from datetime import date
from functools import partial
from typing import Any

import pytest
from mcp import Client

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.asking.answers import Answer
from mail_imap_mcp.asking.page_server.request import Renderer
from mail_imap_mcp.asking.review import Review
from mail_imap_mcp.config import Config
from mail_imap_mcp.envelope import mcp as envelope_mcp
from mail_imap_mcp.query import parse
from mail_imap_mcp.query.sieve import sieve_condition
from mail_imap_mcp.server import build_server
from mail_imap_mcp.services.rules import RulesState, change_rules
from mail_imap_mcp.services.rules_script import OWN_SCRIPT, Rule, WrittenRule, compile_rule, find_section
from mail_imap_mcp.tools.manage_rules import checks
from mail_imap_mcp.tools.manage_rules.models import DryRun
from tests.support.mail.memory_sieve import PIGEONHOLE_EXTENSIONS, MemorySieve
from tests.support.patience import eventually_async

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


#: CONFIG's account sending to @allowed.test only.
SENDS = Config.model_validate(
    {
        "accounts": {
            "a": {**CONFIG.accounts["a"].model_dump(mode="json", exclude_defaults=True), "send_enabled": True,
                  "smtp": {"host": "smtp.example.org"}, "allowed_recipients": ["@allowed.test"]}
        },
        "server": {"index": False},
    }
)  # fmt: skip
FORWARD = {
    "action": "save",
    "name": "Invoices",
    "query": "subject:Rechnung",
    "redirect": ["ann@allowed.test"],
}


def _no_mail(monkeypatch: pytest.MonkeyPatch) -> None:
    """The dry run answered without mail (the fake holds scripts only): none of 12 messages matched."""

    def tried(app: Any, account_id: str, rule: Rule, tree: Any) -> DryRun:
        return DryRun(mailbox="INBOX", matched=0, of=12, newest=[], words="Would have matched 0 of 12.")

    monkeypatch.setattr(checks, "dry_run", tried)


async def _decided(client: Client, envelope: dict[str, Any]) -> dict[str, Any]:
    """The call's own envelope, or, where it waits in the background, its operation's once it ended."""
    background = (envelope.get("data") or {}).get("background")
    if background is None:
        return envelope

    async def ended() -> dict[str, Any] | None:
        detail = await _call_tool(client, "imap_get_operation", {"operation_id": background["operation_id"]})
        done: dict[str, Any] = detail["data"]
        return None if done["operation"]["state"] in ("accepted", "running") else done

    done = await eventually_async(ended, within=30, interval=0.01, what="the approval's operation")
    return {"success": done["error"] is None, "data": done["result"], "error": done["error"]}


async def _call_tool(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    envelope: dict[str, Any] = (await client.call_tool(tool, arguments)).structured_content or {}
    return envelope


async def _on_the_page(
    sieve: MemorySieve, config: Config, arguments: dict[str, Any], decision: Answer
) -> tuple[dict[str, Any], list[tuple[Review, str]]]:
    """The call's answer through a client without elicitation, whose user answers ``decision`` on the
    approval page; and each review the page showed, with its HTML."""
    app = _app(sieve, config)
    shown: list[tuple[Review, str]] = []

    def page(review: Review, digest: str, render: Renderer) -> Answer:
        shown.append((review, render(review, digest).body_html()))
        return decision

    app.approval_page = page
    try:
        async with Client(build_server(config, app)) as client:
            answer = await _decided(client, await _call(client, arguments))
    finally:
        app.close()
    return answer, shown


@pytest.mark.parametrize("decision", [Answer.APPROVED, Answer.DECLINED, Answer.EXPIRED])
async def test_a_forwarding_rule_without_elicitation_is_approved_on_the_page_or_saves_nothing(
    decision: Answer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A client without elicitation: the page asks (the way asking/ chooses), shows the rule's Sieve text
    whole and each action with its recipients; only the user's approval there saves it. One audit line
    says how it ended."""
    caplog.set_level(logging.INFO, "mail_imap_mcp.audit")
    _no_mail(monkeypatch)
    sieve = MemorySieve()
    answer, shown = await _on_the_page(sieve, SENDS, FORWARD, decision)
    ((review, html),) = shown
    question = review.question()
    (line,) = [record.getMessage() for record in caplog.records if record.name == "mail_imap_mcp.audit"]
    outcome = "ok" if decision is Answer.APPROVED else "confirmation_required"
    assert f"action=rule:save messages=0 outcome={outcome}" in line, line
    assert 'redirect :copy "ann@allowed.test";' in question and "subject" in question
    assert "forward a copy of each matching message to ann@allowed.test" in question
    assert "Forwards to:\n  ann@allowed.test" in question
    assert "redirect :copy &quot;ann@allowed.test&quot;;" in html and "Forwards to" in html
    if decision is Answer.APPROVED:
        assert answer["success"] is True, answer
        assert answer["data"]["rules"][0]["actions"] == ["forward a copy to ann@allowed.test", "stop"]
        assert 'redirect :copy "ann@allowed.test";' in sieve.scripts[OWN_SCRIPT]
        assert answer["data"]["as_saved"]["words"].startswith("As saved on the server: would have matched")
        return
    assert answer["error"]["code"] == "confirmation_required", answer
    said = "declined" if decision is Answer.DECLINED else "expired"
    assert (
        answer["error"]["details"] == {"approval": said} and "nothing was saved" in answer["error"]["message"]
    )
    assert sieve.scripts == {}


async def test_a_forwarding_rule_is_refused_where_nobody_can_be_asked_and_no_token_stands_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_mail(monkeypatch)
    sieve = MemorySieve()
    app = _app(sieve, SENDS)  # no elicitation, no page (not a stdio server on the user's desktop)
    try:
        async with Client(build_server(SENDS, app)) as client:
            refused = await _call(client, FORWARD)
            token = await _call(client, {**FORWARD, "confirm_token": "x" * 40})
    finally:
        app.close()
    assert refused["error"]["code"] == "permission_denied", refused
    assert "only the user may approve its exact text" in refused["error"]["message"]
    assert "confirm_token" not in str(refused) and token["error"]["details"]["parameter"] == "confirm_token"
    assert sieve.scripts == {}


@pytest.mark.parametrize(("argument", "why"), [("reject", "backscatter"), ("ereject", "backscatter"),
                                               ("notify", "outside allowed_recipients")])  # fmt: skip
async def test_reject_and_notify_are_invalid_input_naming_the_argument_and_why(
    argument: str, why: str
) -> None:
    app = _app(MemorySieve(), SENDS)
    try:
        async with Client(build_server(SENDS, app)) as client:
            refused = await _call(client, {**FORWARD, "redirect": [], argument: "Go away."})
    finally:
        app.close()
    assert (
        refused["error"]["code"] == "invalid_input" and refused["error"]["details"]["parameter"] == argument
    )
    assert "is not offered" in refused["error"]["message"] and why in refused["error"]["message"], refused


def _allowing(*entries: str) -> Config:
    """SENDS with ``entries`` as its account's allowed_recipients."""
    raw = SENDS.model_dump(mode="json", exclude_defaults=True)
    raw["accounts"]["a"]["allowed_recipients"] = list(entries)
    return Config.model_validate(raw)


#: SENDS's account allowing an address, a domain and its subdomains.
REPLIES = _allowing("Boss@Example.org", "@allowed.test", "*.corp.example")
AWAY = {
    "action": "save",
    "name": "Away",
    "query": "from:@",
    "vacation": "I am away until Monday.\r\nYour mail waits for me.",
    "vacation_subject": "Away until Monday",
}
#: The guard around the reply: the From header's sender and the envelope's, each one of allowed_recipients.
GUARD = (
    "  if allof(\n"
    '    anyof(address :is "from" ["boss@example.org"], address :domain :is "from" ["allowed.test"], '
    'address :domain :matches "from" ["*.corp.example"]),\n'
    '    anyof(envelope :is "from" ["boss@example.org"], envelope :domain :is "from" ["allowed.test"], '
    'envelope :domain :matches "from" ["*.corp.example"])\n'
    "  ) {\n"
    '    vacation :days 7 :subject "Away until Monday" "I am away until Monday.\nYour mail waits for me.";\n'
    "  }\n"
)


@pytest.mark.parametrize("decision", [Answer.APPROVED, Answer.DECLINED])
async def test_a_vacation_rule_replies_only_to_allowed_senders_and_is_saved_only_once_approved(
    decision: Answer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 91's vacation replies as standing sends: the reply is wrapped in a test that the sender, by
    the From header and by the envelope (where the reply goes), is one of allowed_recipients; the page
    says in words whom it replies to and with what, shows the reply's text and the Sieve text whole; only
    the user's approval saves it."""
    _no_mail(monkeypatch)
    sieve = MemorySieve()
    answer, shown = await _on_the_page(sieve, REPLIES, AWAY, decision)
    ((review, html),) = shown
    question = review.question()
    words = "reply to mail from boss@example.org, @allowed.test, *.corp.example with 'Away until Monday'"
    assert "Replies to mail from" in html and "I am away until Monday." in html and "envelope :is" in html
    assert words in question and GUARD in question, question
    assert "Replies to mail from:\n  boss@example.org\n  @allowed.test\n  *.corp.example" in question
    assert "I am away until Monday.\nYour mail waits for me." in question
    assert review.closing == (
        "Save the rule 'Away' that replies to mail from boss@example.org, @allowed.test, *.corp.example with "
        "'Away until Monday'"
    )
    if decision is Answer.DECLINED:
        assert answer["error"]["code"] == "confirmation_required" and sieve.scripts == {}, answer
        return
    assert answer["success"] is True, answer
    script = sieve.scripts[OWN_SCRIPT]
    assert GUARD in script and script.count("vacation :days") == 1
    assert 'require ["envelope", "vacation"];' in script
    (rule,) = answer["data"]["rules"]
    assert rule["actions"] == [f"{words} (once in 7 days to each sender)", "stop"]


async def test_allowed_recipients_of_anyone_let_a_vacation_rule_reply_to_anyone_as_the_page_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_mail(monkeypatch)
    sieve = MemorySieve()
    answer, shown = await _on_the_page(sieve, _allowing("*"), AWAY, Answer.APPROVED)
    assert answer["success"] is True, answer
    assert "Replies to mail from:\n  anyone (allowed_recipients is *)" in shown[0][0].question()
    assert "envelope" not in sieve.scripts[OWN_SCRIPT] and "\n  vacation :days 7" in sieve.scripts[OWN_SCRIPT]


@pytest.mark.parametrize(
    ("days", "every"), [(1, "once a day"), (30, "once in 30 days"), (365, "once in 365 days")]
)
async def test_vacation_days_is_the_replys_interval_shown_on_the_page(
    days: int, every: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vacation_days is Sieve's ``:days`` (the server clamps it to its own bounds, RFC 5230 4.1): the page
    and the rule's actions say it in words; the rest of the guarded reply is as with the default week."""
    _no_mail(monkeypatch)
    sieve = MemorySieve()
    answer, shown = await _on_the_page(sieve, REPLIES, {**AWAY, "vacation_days": days}, Answer.APPROVED)
    assert answer["success"] is True, answer
    guard = GUARD.replace("vacation :days 7", f"vacation :days {days}")
    assert guard in sieve.scripts[OWN_SCRIPT] and guard in shown[0][0].question()
    (rule,) = answer["data"]["rules"]
    assert rule["actions"][0].endswith(f"({every} to each sender)"), rule
    app = _app(sieve, REPLIES)
    try:
        async with Client(build_server(REPLIES, app)) as client:  # read again from the script: the same days
            (got,) = (await _call(client, {"action": "get", "name": "Away"}))["data"]["rules"]
    finally:
        app.close()
    assert got["actions"] == rule["actions"]


@pytest.mark.parametrize(
    ("arguments", "config", "extensions", "code", "parameter"),
    [
        ({"vacation_days": 0}, REPLIES, PIGEONHOLE_EXTENSIONS, "invalid_input", "vacation_days"),
        ({"vacation_days": 366}, REPLIES, PIGEONHOLE_EXTENSIONS, "invalid_input", "vacation_days"),
        ({"vacation_days": 3, "vacation": None, "vacation_subject": None}, REPLIES, PIGEONHOLE_EXTENSIONS,
         "invalid_input", "vacation_days"),
        ({"vacation_days": 3, "vacation": None, "vacation_subject": None, "mailbox": "INBOX"}, CONFIG,
         PIGEONHOLE_EXTENSIONS, "permission_denied", "send_enabled"),
        ({"vacation_subject": None}, REPLIES, PIGEONHOLE_EXTENSIONS, "invalid_input", "vacation_subject"),
        ({"vacation": None}, REPLIES, PIGEONHOLE_EXTENSIONS, "invalid_input", "vacation"),
        ({"vacation": "Away.\n# rule {}"}, REPLIES, PIGEONHOLE_EXTENSIONS, "invalid_input", "vacation"),
        ({"vacation": "x" * 2001}, REPLIES, PIGEONHOLE_EXTENSIONS, "invalid_input", "vacation"),
        ({"vacation_subject": "Away\r\nBcc: eve@evil.test"}, REPLIES, PIGEONHOLE_EXTENSIONS, "invalid_input",
         "vacation_subject"),
        ({}, CONFIG, PIGEONHOLE_EXTENSIONS, "permission_denied", "send_enabled"),
        ({}, _allowing("@allowed.test", "*.ex*ample.test"), PIGEONHOLE_EXTENSIONS, "invalid_input", "vacation"),
        ({}, REPLIES, "fileinto envelope imap4flags", "invalid_input", "vacation"),
        ({}, REPLIES, "fileinto vacation imap4flags", "invalid_input", "vacation"),
    ],
    ids=["days 0", "days 366", "days without a reply", "days where sending is off", "no subject", "no text", "a line of #", "text too long", "CRLF in the subject", "sending off",
         "a wildcard in allowed_recipients",
         "no vacation extension", "no envelope extension"],
)  # fmt: skip
async def test_a_vacation_rule_is_refused_naming_what_is_missing_and_nothing_is_asked_or_saved(
    arguments: dict[str, Any],
    config: Config,
    extensions: str,
    code: str,
    parameter: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_mail(monkeypatch)
    sieve = MemorySieve(extensions=extensions)
    asked = {key: value for key, value in {**AWAY, **arguments}.items() if value is not None}
    refused, shown = await _on_the_page(sieve, config, asked, Answer.APPROVED)
    assert refused["error"]["code"] == code, refused
    details = refused["error"]["details"]
    assert details.get("parameter", details.get("setting")) == parameter, refused
    assert shown == [] and sieve.scripts == {}


async def test_in_team_mode_a_caller_manages_only_the_rules_of_the_accounts_bound_to_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two users, each bound to an account of their own (``users``): each lists and changes the rules
    of theirs; the other's account is unknown to them, and its scripts untouched."""
    settings = CONFIG.accounts["a"].model_dump(mode="json", exclude_defaults=True)
    team = Config.model_validate(
        {
            "accounts": {
                "ann": {**settings, "username": "ann", "users": ["ann@corp.example"]},
                "bob": {**settings, "username": "bob", "users": ["bob@corp.example"]},
            },
            "server": {"index": False},
        }
    )
    scripts = {"ann": _with_rules(MemorySieve(), "School"), "bob": _with_rules(MemorySieve(), "Club")}
    app = AppContext.from_config(team)
    app.sieve_opener = lambda account, credentials: nullcontext(scripts[account.username])
    caller = {"user": "ann@corp.example"}
    monkeypatch.setattr(envelope_mcp, "user_of", lambda context: caller["user"])
    monkeypatch.setattr(envelope_mcp, "user_as_given", lambda context: caller["user"])
    bobs = dict(scripts["bob"].scripts)
    try:
        async with Client(build_server(team, app)) as client:
            mine = await _call(client, {"action": "list", "account_id": "ann"})
            assert [r["name"] for r in mine["data"]["rules"]] == ["School"]
            for arguments in ({"action": "list"}, {"action": "delete", "name": "Club"}, {"action": "undo"}):
                other = await _call(client, {**arguments, "account_id": "bob"})
                assert other["success"] is False and other["error"]["code"] == "not_found", other
                assert "Club" not in str(other)
            gone = await _call(client, {"action": "delete", "name": "School", "account_id": "ann"})
            assert gone["data"]["changed"] is True
            caller["user"] = "bob@corp.example"
            theirs = await _call(client, {"action": "list", "account_id": "bob"})
            assert [r["name"] for r in theirs["data"]["rules"]] == ["Club"]
            refused = await _call(client, {"action": "undo", "account_id": "ann"})
            assert refused["error"]["code"] == "not_found", refused
    finally:
        app.close()
    assert scripts["bob"].scripts == bobs and "School" not in scripts["ann"].scripts[OWN_SCRIPT]


@pytest.mark.parametrize(
    ("active", "extensions", "round_trips"),
    [
        (None, PIGEONHOLE_EXTENSIONS, 1),
        ("mine", PIGEONHOLE_EXTENSIONS, 1),
        ("mine", "fileinto imap4flags", 2),
    ],
)
async def test_listing_rules_takes_one_round_trip_after_login(
    active: str | None, extensions: str, round_trips: int
) -> None:
    """The list and the rules' own script pipelined; a user's script that only includes them is not read.
    Without include the rules are a section of the user's script: that one is read too."""
    sieve = MemorySieve(extensions=extensions, scripts={"mine": USERS} if active else {}, active=active)
    _with_rules(sieve, "School")
    sieve.round_trips = 0
    app = _app(sieve)
    try:
        async with Client(build_server(CONFIG, app)) as client:
            listed = await _call(client, {"action": "list"})
    finally:
        app.close()
    assert [r["name"] for r in listed["data"]["rules"]] == ["School"]
    assert sieve.round_trips == round_trips


async def test_a_try_reads_no_script_and_learns_the_extensions_from_the_first_session_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_mail(monkeypatch)
    sieve, opened = MemorySieve(), []
    app = AppContext.from_config(CONFIG)
    app.sieve_opener = lambda account, credentials: opened.append(account) or nullcontext(sieve)
    tried = {"action": "try", "query": "from:school.example", "flags": ["\\Seen"]}
    try:
        async with Client(build_server(CONFIG, app)) as client:
            first, again = await _call(client, tried), await _call(client, tried)
            body = await _call(client, {**tried, "query": "Zeugnis"})  # the body extension
            sieve.extensions = "fileinto"  # a server without imap4flags: known at its next session
            await _call(client, {"action": "list"})
            refused = await _call(client, tried)
    finally:
        app.close()
    assert first["success"] and again["success"] and body["success"], (first, again, body)
    assert first["data"]["where"].startswith("not read") and sieve.round_trips == 1 and len(opened) == 2
    assert refused["error"]["details"]["parameter"] == "flags", refused

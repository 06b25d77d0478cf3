"""A vacation rule (issue 91's vacation replies as standing sends) on Dovecot: saved through the MCP SDK's
client once the user approved its exact text (elicitation), the script the server holds replies, as
Pigeonhole's ``sieve-test`` runs it, to mail whose sender is one of allowed_recipients by the From header
and by the envelope (where the reply goes), and to no other: not to a stranger, not to a forged From whose
return path is a stranger's, not to a look-alike domain. Without elicitation the approval page (headless
Chromium) says in words whom it replies to and with what. Cyrus's timsieved checks and stores the same
rule."""

from __future__ import annotations

import pytest

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.asking.page import approval_page
from mail_imap_mcp.services.rules_script import OWN_SCRIPT
from tests.support.clients import chromium
from tests.support.clients.background import decided
from tests.support.clients.elicitation import answering
from tests.support.clients.in_process import open_client
from tests.support.patience import eventually
from tests.support.servers.sieve import SieveCyrus, SieveDovecot
from tests.support.shared.rules import TOOL, rules_config, sieve_scripts

pytestmark = pytest.mark.anyio

#: An account that sends to one address and one domain.
REPLIES = {
    "send_enabled": True,
    "allowed_recipients": ["boss@example.org", "@allowed.test"],
    "smtp": {"host": "smtp.example.org"},
}
AWAY = {
    "action": "save",
    "name": "Away",
    "query": "from:@",
    "vacation": "I am away until Monday.\nYour mail waits for me.",
    "vacation_subject": "Away until Monday",
}
#: The From header, the envelope's sender, and whether the rule replies.
SENDERS = [
    ("Boss <boss@example.org>", "boss@example.org", True),
    ("=?UTF-8?Q?J=C3=B6rg?= <joerg@allowed.test>", "joerg@allowed.test", True),
    ("Eve <eve@elsewhere.test>", "eve@elsewhere.test", False),
    ("Boss <boss@example.org>", "eve@elsewhere.test", False),  # a forged From: the reply would go to Eve
    ("Eve <eve@elsewhere.test>", "joerg@allowed.test", False),
    ("<office@allowed.test.evil.test>", "office@allowed.test.evil.test", False),  # a look-alike domain
    ("<boss@example.org.evil.test>", "boss@example.org.evil.test", False),
]


async def test_the_saved_vacation_rule_replies_to_allowed_senders_alone(sieve_dovecot: SieveDovecot) -> None:
    server, user = sieve_dovecot, sieve_dovecot.new_user()
    accepting = answering("accept")
    config = rules_config(server, user, rules_enabled=True, **REPLIES)
    async for mcp in open_client(config, elicitation_callback=accepting):
        saved = await mcp.ok(TOOL, AWAY)
    (question,) = accepting.asked
    assert "Replies to mail from:\n  boss@example.org\n  @allowed.test" in question, question
    assert "replies to mail from boss@example.org, @allowed.test with 'Away until Monday'" in question
    assert saved["rules"][0]["sieve"].strip() in question  # the Sieve text approved, whole
    with sieve_scripts(server, user) as scripts:
        script = scripts.get_script(OWN_SCRIPT)
    address = f"{user}@mail.test"
    replied = {}
    for header, envelope, _ in SENDERS:
        raw = f"From: {header}\r\nTo: {address}\r\nSubject: Hallo\r\nMessage-ID: <{envelope}.1@test>\r\n\r\nHi.\r\n"
        done = server.sieve_test(script, raw.encode(), sender=envelope, recipient=address)
        assert "store message in folder: INBOX" in done, done  # kept, whatever it replied
        replied[(header, envelope)] = "send vacation message" in done
        if replied[(header, envelope)]:
            assert (
                "subject : Away until Monday" in done and "I am away until Monday.\nYour mail waits" in done
            )
    assert replied == {(header, envelope): replies for header, envelope, replies in SENDERS}


async def test_timsieved_takes_the_vacation_rule_as_approved(sieve_cyrus: SieveCyrus) -> None:
    """Cyrus's timsieved checks and stores the same rule (its multi-line reply, the envelope test); there
    is no sieve-test for Cyrus, so what it runs is Pigeonhole's proof above."""
    server, user = sieve_cyrus, sieve_cyrus.new_user()
    accepting = answering("accept")
    async for mcp in open_client(
        rules_config(server, user, rules_enabled=True, **REPLIES), elicitation_callback=accepting
    ):
        saved = await mcp.ok(TOOL, AWAY)
    with sieve_scripts(server, user) as scripts:
        script = scripts.get_script(OWN_SCRIPT)
    assert saved["rules"][0]["sieve"] in script and 'envelope :domain :is "from" ["allowed.test"]' in script


@pytest.mark.skipif(not chromium.installed(), reason="chromium and chromium-driver are not installed")
async def test_on_the_approval_page_the_user_reads_whom_the_rule_replies_to_and_with_what(
    sieve_dovecot: SieveDovecot,
) -> None:
    """A client without elicitation: the page, in headless Chromium, says in words whom the rule replies to
    and with what subject, shows the reply's text and the Sieve text; "Approve" saves it."""
    server, user = sieve_dovecot, sieve_dovecot.new_user()
    config = rules_config(server, user, rules_enabled=True, **REPLIES)
    app = AppContext.from_config(config)
    seen: list[str] = []
    app.approval_page = approval_page(chromium.pressing_browser("approve", seen), timeout_s=60)
    async for mcp in open_client(config, app):
        answer = await decided(mcp, await mcp.call(TOOL, AWAY))
    eventually(lambda: bool(seen), what="the page shown")
    (page,) = seen
    assert "reply to mail from boss@example.org, @allowed.test with 'Away until Monday'" in page, page
    assert "Replies to mail from" in page and "I am away until Monday." in page
    assert 'envelope :domain :is "from" ["allowed.test"]' in page
    assert answer["success"] is True, answer
    with sieve_scripts(server, user) as scripts:
        assert "vacation :days 7" in scripts.get_script(OWN_SCRIPT)


async def test_vacation_days_is_the_interval_pigeonhole_runs(sieve_dovecot: SieveDovecot) -> None:
    """vacation_days: the reply's interval, as approved ('once in 2 days'), in the script the server holds,
    which Pigeonhole compiles and runs (sieve-test: the reply to the allowed sender, every 172,800 seconds;
    none to a stranger); 0 is invalid_input naming it."""
    server, user = sieve_dovecot, sieve_dovecot.new_user()
    accepting = answering("accept")
    config = rules_config(server, user, rules_enabled=True, **REPLIES)
    async for mcp in open_client(config, elicitation_callback=accepting):
        saved = await mcp.ok(TOOL, {**AWAY, "vacation_days": 2})
        refused = await mcp.fail(TOOL, {**AWAY, "vacation_days": 0}, "invalid_input")
    assert refused["error"]["details"]["parameter"] == "vacation_days", refused
    (question,) = accepting.asked
    assert "with 'Away until Monday' (once in 2 days to each sender)" in question, question
    with sieve_scripts(server, user) as scripts:
        script = scripts.get_script(OWN_SCRIPT)
    assert saved["rules"][0]["sieve"] in script and 'vacation :days 2 :subject "Away until Monday"' in script
    address = f"{user}@mail.test"
    for envelope, replies in (("boss@example.org", True), ("eve@elsewhere.test", False)):
        raw = f"From: <{envelope}>\r\nTo: {address}\r\nSubject: Hallo\r\nMessage-ID: <{envelope}.2@test>\r\n\r\nHi.\r\n"
        done = server.sieve_test(script, raw.encode(), sender=envelope, recipient=address)
        assert ("send vacation message" in done) is replies, done
        assert ("seconds : 172800" in done) is replies, done  # two days, as Pigeonhole counts the interval

"""A rule that forwards mail (a standing send) approved on the approval page, the way asking/ chooses for
a client without elicitation, through the MCP SDK's client on Dovecot (Pigeonhole) and Cyrus (timsieved):
the page, in headless Chromium, shows the rule's Sieve text whole and each action with its recipients in
words; "Approve" saves it, "Don't approve" and a page whose time ran out save nothing, and no token or
agent stands in for the user."""

from __future__ import annotations

import pytest

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.asking.page import approval_page
from mail_imap_mcp.services.rules_script import OWN_SCRIPT
from tests.support.clients import chromium
from tests.support.clients.background import decided
from tests.support.clients.in_process import open_client
from tests.support.fake_clock import FakeClock
from tests.support.patience import eventually
from tests.support.servers.sieve import SieveCyrus, SieveDovecot
from tests.support.shared.rules import SENDS, TOOL, rules_config, sieve_scripts

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not chromium.installed(), reason="chromium and chromium-driver are not installed"),
]

FORWARD = {
    "action": "save",
    "name": "Invoices",
    "query": "subject:Rechnung",
    "redirect": ["ann@allowed.test"],
}


@pytest.mark.parametrize("press", ["approve", "decline"])
@pytest.mark.parametrize("fixture", ["sieve_dovecot", "sieve_cyrus"])
async def test_a_forwarding_rule_is_saved_only_once_approved_on_the_page(
    fixture: str, press: str, request: pytest.FixtureRequest
) -> None:
    server: SieveDovecot | SieveCyrus = request.getfixturevalue(fixture)
    user = server.new_user()
    config = rules_config(server, user, rules_enabled=True, **SENDS)
    app = AppContext.from_config(config)
    seen: list[str] = []
    app.approval_page = approval_page(chromium.pressing_browser(press, seen), timeout_s=60)
    async for mcp in open_client(config, app):  # no elicitation: the page asks
        answer = await decided(mcp, await mcp.call(TOOL, FORWARD))
    eventually(lambda: bool(seen), what="the page shown")
    (page,) = seen
    assert 'redirect :copy "ann@allowed.test";' in page and 'header :contains "subject" "Rechnung"' in page
    assert "forward a copy of each matching message to ann@allowed.test" in page and "Forwards to" in page
    with sieve_scripts(server, user) as scripts:
        names = {entry.name for entry in scripts.list_scripts()}
        script = scripts.get_script(OWN_SCRIPT) if OWN_SCRIPT in names else ""
    if press == "decline":
        assert answer["error"]["code"] == "confirmation_required", answer
        assert answer["error"]["details"] == {"approval": "declined"} and names == set()
        return
    assert answer["success"] is True, answer
    assert answer["data"]["rules"][0]["actions"] == ["forward a copy to ann@allowed.test", "stop"]
    assert 'redirect :copy "ann@allowed.test";' in script
    assert answer["data"]["as_saved"]["matched"] == answer["data"]["dry_run"]["matched"] == 0


async def test_a_page_whose_time_ran_out_saves_nothing_and_says_so(sieve_dovecot: SieveDovecot) -> None:
    """The user presses "Approve" after the page's time ran out (on the clock it is timed by)."""
    server, user = sieve_dovecot, sieve_dovecot.new_user()
    config = rules_config(server, user, rules_enabled=True, **SENDS)
    app = AppContext.from_config(config)
    clock, pages = FakeClock(4055.0984759064563), []  # a start test_send.py found 300 s off by a rounding
    app.approval_page = approval_page(
        chromium.late_browser(clock, 300, "approve", pages), timeout_s=300, clock=clock
    )
    async for mcp in open_client(config, app):
        failed = await decided(mcp, await mcp.call(TOOL, FORWARD))
    eventually(lambda: bool(pages), what="the page answered")
    ((_, answered),) = pages
    assert answered.startswith("Expired")
    assert failed["error"]["code"] == "confirmation_required", failed
    assert (
        failed["error"]["details"] == {"approval": "expired"}
        and "nothing was saved" in failed["error"]["message"]
    )
    with sieve_scripts(server, user) as scripts:
        assert scripts.list_scripts() == []

"""A call on an account nobody signed in to takes the user to the sign-in page (issue 48 item 5): by URL-mode
elicitation where the client declares it (2025-11-25: a request during the call; 2026-07-28: an
``input_required`` result and the call again), else by the server opening the browser; the loopback
listener of that attempt waits in the background, and the call after the user signed in works. Against
node-oidc-provider, whose tokens Dovecot checks, with a real Secret Service; the "user" at the browser is
tests/support/clients/oidc_browser.py (a real Chromium drives it in tests/integration/sign_in/test_sign_in_chromium.py).
The sign-in URL appears in the elicitation alone, never in an envelope.
"""

from __future__ import annotations

import json
import re
import shutil
import time
import urllib.error
from typing import Any

import anyio.to_thread
import pytest
from mcp_types import ElicitRequestParams, ElicitRequestURLParams, ElicitResult

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.credentials.sign_in_flow import SignInAttempts
from mail_imap_mcp.credentials.token_keychain import KeychainRefreshTokens
from mail_imap_mcp.envelope import user_page
from mail_imap_mcp.imap.token_check import new_sign_in_refusal
from mail_imap_mcp.net.browser import BrowserOpener
from tests.support.clients.in_process import make_config, open_client
from tests.support.clients.oidc_browser import approve
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.oidc_provider import OidcProvider
from tests.support.shared.sign_in_on_call import Launches, SignedOut, Visitor, stdio_like_client
from tests.support.shared.sign_in_tokens import ACCOUNT, sign_in_account
from tests.support.shared.sign_in_tokens import keychain as keychain

pytestmark = [
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
    pytest.mark.anyio,
]


@pytest.fixture
def account(oidc: OidcProvider, oidc_dovecot: Dovecot, keychain: KeychainRefreshTokens) -> SignedOut:
    user = oidc_dovecot.new_user()
    return SignedOut(user, sign_in_account(oidc_dovecot, user, oidc), keychain, Launches())


@pytest.fixture(params=["legacy", "auto"], ids=["2025-11-25", "2026-07-28"])
def mode(request: pytest.FixtureRequest) -> str:
    """The client's protocol: up to 2025-11-25 (elicitation during the call) or 2026-07-28 (input_required)."""
    return str(request.param)


def is_launch_address(url: str) -> bool:
    """Whether ``url`` is a sign-in listener's launch address, which holds no secret (issue 56 item 1):
    it forwards this OS user's browser to the authorization URL."""
    return re.fullmatch(r"http://127\.0\.0\.1:\d+/start", url) is not None


def assert_no_url(envelope: dict[str, Any], oidc: OidcProvider) -> None:
    assert oidc.issuer not in json.dumps(envelope), envelope


async def test_a_client_with_url_elicitation_takes_the_user_to_sign_in_and_the_call_then_works(
    oidc: OidcProvider, mode: str, account: SignedOut
) -> None:
    visitor = Visitor(account.user)
    async for mcp in stdio_like_client(account, elicitation_callback=visitor, mode=mode):
        assert mcp.client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        data = await mcp.ok("imap_list_mailboxes")
        assert "INBOX" in {box["name"] for box in data["mailboxes"]}
        again = await mcp.ok("imap_list_mailboxes")  # signed in: no page again
        assert again["mailboxes"] == data["mailboxes"]
    (shown,) = visitor.shown
    assert is_launch_address(shown.url) and ACCOUNT in shown.message
    assert (shown.elicitation_id is not None) is (mode == "legacy")  # an id only up to 2025-11-25
    assert account.keychain.load() is not None
    assert account.launches.urls == []  # the client showed the page: no browser of the server's


async def test_a_user_who_declines_to_go_is_answered_sign_in_required_and_nothing_is_stored(
    oidc: OidcProvider, mode: str, account: SignedOut
) -> None:
    visitor = Visitor(account.user, action="decline")
    async for mcp in stdio_like_client(account, elicitation_callback=visitor, mode=mode):
        envelope = await mcp.fail("imap_list_mailboxes", None, "auth_failed")
    details = envelope["error"]["details"]
    assert details["reason"] == "sign_in_required" and details["elicitation"] == "decline", details
    assert_no_url(envelope, oidc)
    assert len(visitor.shown) == 1 and account.keychain.load() is None and account.launches.urls == []


async def test_consent_declined_at_the_provider_stores_nothing_and_says_sign_in_required(
    oidc: OidcProvider, mode: str, account: SignedOut
) -> None:
    visitor = Visitor(account.user, decline=True)
    before = oidc.token_requests
    async for mcp in stdio_like_client(account, elicitation_callback=visitor, mode=mode):
        envelope = await mcp.fail("imap_list_mailboxes", None, "auth_failed")
    assert envelope["error"]["details"]["reason"] == "sign_in_required"
    assert_no_url(envelope, oidc)
    assert account.keychain.load() is None and oidc.token_requests == before


async def test_a_client_without_elicitation_gets_the_browser_opened_once_and_the_call_after_sign_in_works(
    oidc: OidcProvider, account: SignedOut
) -> None:
    async for mcp in stdio_like_client(account):
        first = await mcp.fail("imap_list_mailboxes", None, "auth_failed")
        details = first["error"]["details"]
        assert details["reason"] == "sign_in_required" and details["browser_opened"] is True, details
        assert "opened in the user's browser" in first["error"]["message"]
        second = await mcp.fail("imap_list_mailboxes", None, "auth_failed")
        assert second["error"]["details"]["browser_opened"] is False  # the same attempt: not again
        for envelope in (first, second):  # no terminal command: the page is open to them
            assert "mail-imap-mcp login" not in json.dumps(envelope), envelope
            assert "sign-in page open to them" in envelope["error"]["message"], envelope
        (url,) = account.launches.urls
        assert is_launch_address(url)
        for envelope in (first, second):
            assert_no_url(envelope, oidc)
        await anyio.to_thread.run_sync(approve, url, account.user)  # the user signs in in that browser
        data = await mcp.ok("imap_list_mailboxes")
        assert "INBOX" in {box["name"] for box in data["mailboxes"]}
    assert account.keychain.load() is not None


async def test_a_server_without_sign_ins_over_http_only_says_to_run_login(account: SignedOut) -> None:
    visitor = Visitor(account.user)
    config = make_config({ACCOUNT: account.settings})
    async for mcp in open_client(config, elicitation_callback=visitor, mode="legacy"):
        envelope = await mcp.fail("imap_list_mailboxes", None, "auth_failed")
    details = envelope["error"]["details"]
    assert details["reason"] == "sign_in_required" and "browser_opened" not in details
    assert visitor.shown == [] and account.keychain.load() is None


async def test_a_client_that_fails_to_show_the_page_falls_back_to_the_browser(account: SignedOut) -> None:
    visitor = Visitor(account.user, action="fail")
    async for mcp in stdio_like_client(account, elicitation_callback=visitor, mode="legacy"):
        envelope = await mcp.fail("imap_list_mailboxes", None, "auth_failed")
        assert envelope["error"]["details"]["browser_opened"] is True, envelope
        (url,) = account.launches.urls
        assert url == visitor.shown[0].url
        await anyio.to_thread.run_sync(approve, url, account.user)
        await mcp.ok("imap_list_mailboxes")


class Away:
    """An elicitation callback: the user agrees to go to the page, then (after ``away_s``) does nothing
    there; the pages shown are kept, so the test can sign in at one later."""

    def __init__(self, away_s: float = 0.0) -> None:
        self.away_s = away_s
        self.shown: list[ElicitRequestURLParams] = []

    async def __call__(self, context: Any, params: ElicitRequestParams) -> ElicitResult:
        assert isinstance(params, ElicitRequestURLParams), params
        self.shown.append(params)
        await anyio.sleep(self.away_s)
        return ElicitResult(action="accept")


async def test_the_wait_after_an_accepted_page_runs_out_and_a_sign_in_after_it_still_counts(
    oidc: OidcProvider, account: SignedOut, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """The user accepted the page but did not sign in within the call's wait (120 s, shortened here):
    the call answers sign_in_required saying the user accepted, stores nothing, and the attempt (10
    minutes) goes on: the user signing in after the call ended makes the next call work, with no page
    shown again (regression: a call made while the server redeemed the code showed the page again)."""
    monkeypatch.setattr(user_page, "PAGE_WAIT_S", 1.5)
    away = Away()
    user, keychain, launches = account.user, account.keychain, account.launches
    async for mcp in stdio_like_client(account, elicitation_callback=away, mode=mode):
        started = time.monotonic()
        envelope = await mcp.fail("imap_list_mailboxes", None, "auth_failed")
        assert time.monotonic() - started >= 1.5  # it waited for the user
        details = envelope["error"]["details"]
        assert details["reason"] == "sign_in_required" and details["elicitation"] == "accept", details
        assert f"mail-imap-mcp login {ACCOUNT}" not in json.dumps(envelope)  # the page stays open to them
        assert "sign-in page open to them" in envelope["error"]["message"], envelope
        assert_no_url(envelope, oidc)
        assert keychain.load() is None
        (shown,) = away.shown
        # Late, at the same attempt's page; the next call comes while the server still redeems the code
        # (its token request slowed): it waits for that instead of showing the page again.
        oidc.set_token_delay(1.0)
        try:
            await anyio.to_thread.run_sync(approve, shown.url, user)
            data = await mcp.ok("imap_list_mailboxes")
        finally:
            oidc.set_token_delay(0)
        assert "INBOX" in {box["name"] for box in data["mailboxes"]}
        with pytest.raises(urllib.error.URLError):  # the listener took one answer and closed
            await anyio.to_thread.run_sync(approve, shown.url, user)
    assert len(away.shown) == 1 and keychain.load() is not None and launches.urls == []


@pytest.mark.parametrize("mode", ["legacy", "auto"], ids=["2025-11-25", "2026-07-28"])
async def test_an_answer_arriving_after_its_sign_in_attempt_ended_asks_nothing_again(
    oidc: OidcProvider, account: SignedOut, mode: str
) -> None:
    """The user answers the page after its attempt ended (10 minutes; 1 s here): up to 2025-11-25 the
    call ends at once; from 2026-07-28 the retry carries the ended attempt's request_state, which is
    refused without a new page (never a loop of pages). Nothing is stored, no browser opened, and the
    ended attempt's page no longer signs in."""
    user, keychain, launches = account.user, account.keychain, account.launches
    config = make_config({ACCOUNT: account.settings})
    app = AppContext.from_config(config)
    app.sign_ins = SignInAttempts(
        config.accounts,
        BrowserOpener(allowed=True, environ={}, platform="darwin", launch=launches),
        attempt_s=1.0,
        check=new_sign_in_refusal,
    )
    away = Away(away_s=2.5)
    async for mcp in open_client(config, app, elicitation_callback=away, mode=mode):
        envelope = await mcp.fail("imap_list_mailboxes", None, "auth_failed")
    details = envelope["error"]["details"]
    assert details["reason"] == "sign_in_required" and details["elicitation"] == "accept", details
    assert "browser_opened" not in details
    assert_no_url(envelope, oidc)
    (shown,) = away.shown  # asked once: the late retry brought no second page
    assert keychain.load() is None and launches.urls == []
    with pytest.raises(
        urllib.error.URLError
    ):  # the ended attempt's listener is closed: its page leads nowhere
        await anyio.to_thread.run_sync(approve, shown.url, user)
    assert keychain.load() is None


async def test_a_sign_in_as_another_account_is_refused_by_the_mail_server_and_not_kept(
    account: SignedOut, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 56 item 4, for the sign-in a call starts: the user signed in at the provider as another
    account; Dovecot refuses that token for the account's username, so nothing is kept and the call
    still needs the sign-in."""
    visitor = Visitor("mallory")
    with caplog.at_level("INFO", logger="mail_imap_mcp.sign_in"):
        async for mcp in stdio_like_client(account, elicitation_callback=visitor, mode="legacy"):
            envelope = await mcp.fail("imap_list_mailboxes", None, "auth_failed")
    assert envelope["error"]["details"]["reason"] == "sign_in_required", envelope
    assert account.keychain.load() is None
    assert f"refused to log in as {account.user} with the new sign-in" in caplog.text, caplog.text

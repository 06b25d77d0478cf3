"""One access token for every connection of a signed-in account (issue 48 item 1): the pool's (tool
calls), a mailbox watcher's (a resource subscription) and the local index's background sync each log in to
Dovecot with the token the built-in sign-in got from node-oidc-provider; when it nears its expiry and all
three log in again at once (Dovecot drops their sessions), the provider counts exactly one token-endpoint
request for them. In process, through the SDK's client, with a real Secret Service.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.credentials.token_keychain import KeychainRefreshTokens
from mail_imap_mcp.index import runtime
from mail_imap_mcp.server import build_server
from mail_imap_mcp.subscriptions.mailbox_resource import mailbox_uri
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config
from tests.support.clients.index_clients import wait_ready
from tests.support.clients.updates import Updates
from tests.support.mail.mailgen import make_message
from tests.support.patience import patient
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.oidc_provider import OidcProvider, sign_in, wait_for
from tests.support.shared.sign_in_tokens import ACCOUNT, sign_in_account
from tests.support.shared.sign_in_tokens import keychain as keychain
from tests.support.shared.sign_in_tokens import user as user

pytestmark = [
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
    pytest.mark.anyio,
    pytest.mark.waits,
    pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed"),
]

#: The access tokens' lifetime here: more than the 30 s of validity a login asks of a token (so the three
#: connections share the first one), little enough that it nears its expiry within the test.
TOKEN_TTL_S = 45
#: When a token has less than this left, a login fetches a new one (SharedToken.token's min_valid_s).
MIN_VALID_S = 30


def logins(dovecot: Dovecot, login: str) -> int:
    """How many times ``login`` logged in to ``dovecot`` with an OAuth2 token (its log's lines)."""
    return len(re.findall(rf"Login: user=<{re.escape(login)}>, method=XOAUTH2", dovecot.log_path.read_text()))


async def wait_until(condition: object, within: float = 30.0) -> None:
    with anyio.fail_after(patient(within)):
        while not condition():  # type: ignore[operator]
            await anyio.sleep(0.1)


async def test_the_pool_a_watcher_and_the_index_sync_share_one_token_and_one_refresh(
    oidc: OidcProvider,
    oidc_dovecot: Dovecot,
    user: str,
    keychain: KeychainRefreshTokens,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runtime, "RESYNC_S", 0.5)  # the index sync comes back within a second
    oidc_dovecot.seed(user, "INBOX", [make_message(number) for number in range(3)])
    oidc.set_access_token_ttl(TOKEN_TTL_S)
    try:
        keychain.save(str(sign_in(oidc, user)["refresh_token"]))  # signed in, as login leaves it
        config = make_config(
            {ACCOUNT: sign_in_account(oidc_dovecot, user, oidc)},
            index=True,
            index_dir=str(tmp_path / "ix"),
            watch_poll_interval_s=0.4,
        )
        app = AppContext.from_config(config)
        updates = Updates()
        before, logged_in = oidc.token_requests, logins(oidc_dovecot, user)
        client = Client(build_server(config, app), mode="legacy", message_handler=updates.message_handler)
        async with client:
            mcp = EnvelopeClient(client)
            await mcp.ok("imap_list_mailboxes")  # the pool's connection: the first token
            first_token_by = time.monotonic()
            assert await wait_ready(mcp) == "ready"  # the index sync's connection
            uri = mailbox_uri(ACCOUNT, "INBOX")
            await client.subscribe_resource(uri)  # the watcher's connection
            await wait_until(lambda: logins(oidc_dovecot, user) >= logged_in + 3)
            assert logins(oidc_dovecot, user) == logged_in + 3
            wait_for(lambda: oidc.token_requests >= before + 1)
            assert oidc.token_requests == before + 1  # three connections, one token
            oidc.set_access_token_ttl(3600)  # the next token outlasts the test

            # The token nears its expiry; then Dovecot drops every session of the account, so all three
            # connections log in again at about the same moment.
            await anyio.sleep(first_token_by + (TOKEN_TTL_S - MIN_VALID_S) + 1 - time.monotonic())
            oidc_dovecot.kick(user)
            await mcp.ok("imap_list_mailboxes")  # the pool's connection again
            await wait_until(lambda: logins(oidc_dovecot, user) >= logged_in + 6)
            # The watcher is back: another client's change is reported.
            started = time.monotonic()
            await anyio.to_thread.run_sync(oidc_dovecot.seed, user, "INBOX", [make_message(9)])
            assert await updates.first_after(started, uri, within=10) is not None
            await client.unsubscribe_resource(uri)
        await anyio.to_thread.run_sync(app.close)
    finally:
        oidc.set_access_token_ttl(3600)
    time.sleep(0.5)  # a request made late would have been logged by now
    assert oidc.token_requests == before + 2, oidc.token_requests - before  # one for the expiry
    assert logins(oidc_dovecot, user) >= logged_in + 6


async def test_a_watcher_reconnecting_outside_any_call_gets_a_new_token(
    oidc: OidcProvider, oidc_dovecot: Dovecot, user: str, keychain: KeychainRefreshTokens
) -> None:
    """Regression: a connection outside a call (no deadline: a watcher's reconnection) asked the token
    endpoint with an infinite timeout, which the HTTP client refuses (OverflowError): once its token had
    ended, a watcher never logged in again until a tool call got a new one. Here the provider ends the
    token and Dovecot drops the session; with no tool call, the watcher gets a new token (one request) and
    reports the next change."""
    keychain.save(str(sign_in(oidc, user)["refresh_token"]))
    config = make_config({ACCOUNT: sign_in_account(oidc_dovecot, user, oidc)}, watch_poll_interval_s=0.4)
    app = AppContext.from_config(config)
    updates = Updates()
    before = oidc.token_requests
    client = Client(build_server(config, app), mode="legacy", message_handler=updates.message_handler)
    async with client:
        uri = mailbox_uri(ACCOUNT, "INBOX")
        await client.subscribe_resource(uri)
        wait_for(lambda: oidc.token_requests >= before + 1)
        logged_in = logins(oidc_dovecot, user)
        for token in oidc.access_tokens(user):
            oidc.forget_access_token(token)
        oidc_dovecot.kick(user)
        await wait_until(lambda: logins(oidc_dovecot, user) > logged_in)  # the watcher is back
        started = time.monotonic()
        await anyio.to_thread.run_sync(oidc_dovecot.seed, user, "INBOX", [make_message(9)])
        assert await updates.first_after(started, uri, within=10) is not None
        await client.unsubscribe_resource(uri)
    await anyio.to_thread.run_sync(app.close)
    time.sleep(0.5)  # a request made late would have been logged by now
    assert oidc.token_requests == before + 2  # the first token, and one after the refusal

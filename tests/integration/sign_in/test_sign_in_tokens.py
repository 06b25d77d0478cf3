"""The built-in sign-in's token source (issue 48): an account with ``oauth2_provider`` logs in with access
tokens it gets by spending the refresh token kept in the keychain (a real Secret Service), against
node-oidc-provider on loopback, whose tokens Dovecot checks by introspection. Through the SDK's MCP
client in process.
"""

from __future__ import annotations

import itertools
import logging
import shutil
import urllib.error
import urllib.parse
import urllib.request

import pytest

from mail_imap_mcp.credentials.token_keychain import KeychainRefreshTokens
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.imapserver import free_ports
from tests.support.servers.oidc_provider import PUBLIC_CLIENT, OidcProvider, sign_in, wait_for
from tests.support.shared.sign_in_tokens import ACCOUNT, outcomes, refresh_refused, sign_in_account
from tests.support.shared.sign_in_tokens import keychain as keychain
from tests.support.shared.sign_in_tokens import refresh_token as refresh_token
from tests.support.shared.sign_in_tokens import user as user

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


@pytest.mark.anyio
async def test_a_signed_in_account_logs_in_with_a_refreshed_token_and_keeps_the_rotated_one(
    oidc: OidcProvider, oidc_dovecot: Dovecot, user: str, keychain: KeychainRefreshTokens, refresh_token: str
) -> None:
    first = refresh_token
    before = oidc.token_requests
    (envelope,) = await outcomes(sign_in_account(oidc_dovecot, user, oidc))
    assert envelope["success"] is True, envelope
    wait_for(lambda: oidc.token_requests == before + 1)
    rotated = keychain.load()
    assert rotated is not None and rotated != first
    assert refresh_refused(oidc, first)  # spent: only the rotated one signs in now


@pytest.mark.anyio
async def test_an_access_token_that_expires_mid_session_is_refreshed_with_one_token_request(
    oidc: OidcProvider, oidc_dovecot: Dovecot, user: str, refresh_token: str
) -> None:
    # Tokens of 10 s: less than the 30 s a login wants left, so each login after an expiry asks for a new
    # one; and time enough for Dovecot to ask the provider about it on a busy machine (with 2 s, a slow
    # login found its new token expired and asked once more).
    oidc.set_access_token_ttl(10)
    before, asked_before = oidc.token_requests, oidc.metadata_requests
    ahead = itertools.count(11, 11)

    def expire_and_drop_the_connection() -> None:
        # The provider's clock moves past the access token's expiry (Dovecot would refuse it): no wait.
        oidc.set_clock_offset(next(ahead))
        oidc_dovecot.kick(user)

    try:
        envelopes = await outcomes(
            sign_in_account(oidc_dovecot, user, oidc),
            3,
            expire_and_drop_the_connection,
            "imap_search_messages",
            {"mailbox": "INBOX"},
        )
    finally:
        oidc.set_access_token_ttl(3600)
        oidc.set_clock_offset(0)
    assert [envelope["success"] for envelope in envelopes] == [True, True, True], envelopes
    # One at the first login, one after each expiry: never one per connection or per retry.
    wait_for(lambda: oidc.token_requests >= before + 3)
    assert oidc.token_requests == before + 3, oidc.token_requests - before
    # The issuer's endpoints were asked for once, at the first: a refresh is one request, not two.
    assert oidc.metadata_requests == asked_before + 1, oidc.metadata_requests - asked_before


@pytest.mark.anyio
async def test_after_a_fetch_that_failed_the_issuer_is_asked_for_its_endpoints_again(
    oidc: OidcProvider, oidc_dovecot: Dovecot, user: str, keychain: KeychainRefreshTokens
) -> None:
    # Regression: the endpoints are kept from one refresh to the next, but not past a failure (the
    # provider may have moved them): nobody signed in yet, then the user signs in, then a token expires.
    oidc.set_access_token_ttl(10)
    asked_before = oidc.metadata_requests
    steps = iter(
        [
            lambda: keychain.save(str(sign_in(oidc, user)["refresh_token"])),
            lambda: (oidc.set_clock_offset(11), oidc_dovecot.kick(user)),
        ]
    )
    try:
        envelopes = await outcomes(
            sign_in_account(oidc_dovecot, user, oidc),
            3,
            lambda: next(steps)(),
            "imap_search_messages",
            {"mailbox": "INBOX"},
        )
    finally:
        oidc.set_access_token_ttl(3600)
        oidc.set_clock_offset(0)
    assert envelopes[0]["error"]["details"]["reason"] == "sign_in_required", envelopes[0]
    assert [envelope["success"] for envelope in envelopes[1:]] == [True, True], envelopes
    # The first call's, the second's (the first failed), and the test's own sign-in's: not the third's.
    wait_for(lambda: oidc.metadata_requests >= asked_before + 3)
    assert oidc.metadata_requests == asked_before + 3, oidc.metadata_requests - asked_before


@pytest.mark.anyio
async def test_an_account_nobody_signed_in_to_says_to_sign_in(
    oidc: OidcProvider, oidc_dovecot: Dovecot, user: str, keychain: KeychainRefreshTokens
) -> None:
    before = oidc.token_requests
    (envelope,) = await outcomes(sign_in_account(oidc_dovecot, user, oidc))
    error = envelope["error"]
    assert error["code"] == "auth_failed"
    assert error["details"]["reason"] == "sign_in_required"
    assert f"mail-imap-mcp login {ACCOUNT}" in error["message"]
    assert f"mail-imap-mcp login {ACCOUNT}" in envelope["data"]["next_action"]["instruction"]
    assert oidc.token_requests == before


@pytest.mark.anyio
async def test_a_revoked_refresh_token_says_to_sign_in_again(
    oidc: OidcProvider, oidc_dovecot: Dovecot, user: str, refresh_token: str
) -> None:
    form = {"token": refresh_token, "client_id": PUBLIC_CLIENT}
    urllib.request.urlopen(
        oidc.metadata()["revocation_endpoint"], urllib.parse.urlencode(form).encode()
    ).close()
    (envelope,) = await outcomes(sign_in_account(oidc_dovecot, user, oidc))
    assert envelope["error"]["details"]["reason"] == "sign_in_required", envelope
    assert refresh_token not in str(envelope)


@pytest.mark.anyio
async def test_a_provider_that_is_down_keeps_the_sign_in(
    oidc: OidcProvider, oidc_dovecot: Dovecot, user: str, keychain: KeychainRefreshTokens, refresh_token: str
) -> None:
    down = f"http://127.0.0.1:{free_ports('127.0.0.1')[0]}"
    settings = sign_in_account(
        oidc_dovecot,
        user,
        oidc,
        oauth2_issuer=None,
        oauth2_authorization_url=f"{down}/auth",
        oauth2_token_url=f"{down}/token",
    )
    (envelope,) = await outcomes(settings)
    error = envelope["error"]
    assert error["code"] == "auth_failed" and error["retryable"] is True, error
    assert "reason" not in error["details"]
    assert "could not be reached" in error["message"]
    assert keychain.load() == refresh_token


@pytest.mark.anyio
async def test_an_access_token_the_server_refuses_is_replaced_once_and_no_token_is_logged(
    oidc: OidcProvider,
    oidc_dovecot: Dovecot,
    user: str,
    refresh_token: str,
    keychain: KeychainRefreshTokens,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The provider ends the access token the server holds before its expiry (so Dovecot refuses it):
    the login asks for a new one once and succeeds; no token reaches a log record or an envelope."""
    caplog.set_level(logging.DEBUG)
    access_tokens: list[str] = []

    def end_the_access_token_and_drop_the_connection() -> None:
        # The provider reports each token it issues on its stderr, read by a thread that may lag on a
        # busy machine: wait for the one the first call's refresh got (the sign-in's came first).
        wait_for(lambda: len(oidc.access_tokens(user)) >= 2)
        access_tokens.extend(oidc.access_tokens(user))
        for token in access_tokens:
            oidc.forget_access_token(token)
        oidc_dovecot.kick(user)

    before = oidc.token_requests
    envelopes = await outcomes(
        sign_in_account(oidc_dovecot, user, oidc),
        2,
        end_the_access_token_and_drop_the_connection,
        "imap_search_messages",
        [{"mailbox": "INBOX", "query": word} for word in ("alpha", "beta")],  # not answered from a cache
    )
    assert [envelope["success"] for envelope in envelopes] == [True, True], envelopes
    wait_for(lambda: oidc.token_requests >= before + 2)
    assert oidc.token_requests == before + 2
    assert access_tokens
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "refused the OAuth2 token" in logged
    for secret in [refresh_token, keychain.load() or "", *access_tokens]:
        assert secret and secret not in logged and secret not in str(envelopes)

"""The built-in sign-in's token source (issue 48): an account with ``oauth2_provider`` logs in with access
tokens it gets by spending the refresh token kept in the keychain (a real Secret Service), against
node-oidc-provider on loopback, whose tokens Dovecot checks by introspection. Through the SDK's MCP
client in process.
"""

from __future__ import annotations

import itertools
import json
import logging
import shutil
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import keyring
import pytest

from mail_imap_mcp.credentials.secret_service import GreetingKeyring
from mail_imap_mcp.credentials.token_keychain import KEYCHAIN_SERVICE, KeychainRefreshTokens
from tests.support.accounts import account_settings
from tests.support.clients.in_process import make_config, open_client
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.imapserver import free_ports
from tests.support.servers.oidc_provider import MAIL_SCOPE, PUBLIC_CLIENT, OidcProvider, sign_in, wait_for
from tests.support.servers.secret_service import SecretService

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")

ACCOUNT = "default"


class SignInEntries(KeychainRefreshTokens):
    """The one sign-in kept in this test's own keychain, whatever its key: the server names its entries
    by the sign-in's identity (``sign_in_key``); before any is there, the account id's, as a release
    before named them (a token saved here is then taken over by the server's first use)."""

    def __init__(self, backend: GreetingKeyring) -> None:
        super().__init__(ACCOUNT)
        self._backend = backend

    def kept_keys(self) -> set[str]:
        """The keys of the sign-ins kept in the keychain."""
        items = self._backend.get_preferred_collection().search_items({"service": KEYCHAIN_SERVICE})
        return {str(item.get_attributes().get("username", "")).split("/")[0] for item in items}

    def _user(self, slot: str) -> str:
        found = sorted(self.kept_keys() - {ACCOUNT})
        assert len(found) <= 1, f"more than one sign-in kept: {found}"
        self.key = found[0] if found else ACCOUNT
        return super()._user(slot)


@pytest.fixture
def keychain(secret_service: SecretService, monkeypatch: pytest.MonkeyPatch) -> Iterator[SignInEntries]:
    """The account's refresh token entries, in this test's own Secret Service."""
    for name, value in secret_service.environment().items():
        monkeypatch.setenv(name, value)
    before = keyring.get_keyring()
    backend = GreetingKeyring()
    keyring.set_keyring(backend)
    try:
        yield SignInEntries(backend)
    finally:
        keyring.set_keyring(before)


def sign_in_account(
    dovecot: Dovecot, user: str, oidc: OidcProvider | None, **overrides: Any
) -> dict[str, Any]:
    settings = {
        "password_env": None,
        "auth": "xoauth2",
        "oauth2_provider": "custom",
        "oauth2_client_id": PUBLIC_CLIENT,
        "oauth2_issuer": oidc.issuer if oidc else None,
        "oauth2_scopes": ["openid", "offline_access", MAIL_SCOPE],
        **overrides,
    }
    return account_settings(dovecot, user, **settings)


async def outcomes(
    settings: dict[str, Any],
    calls: int = 1,
    between: Any = None,
    tool: str = "imap_list_mailboxes",
    arguments: dict[str, Any] | list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """The envelopes of ``calls`` calls of ``tool`` in one session (``between()`` runs between two);
    ``arguments`` of each call, or the same for all."""
    envelopes = []
    async for mcp in open_client(make_config({ACCOUNT: settings})):
        for number in range(calls):
            if number and between is not None:
                between()
            given = arguments[number] if isinstance(arguments, list) else arguments
            envelopes.append(await mcp.call(tool, given))
    return envelopes


@pytest.fixture
def user(oidc_dovecot: Dovecot) -> str:
    return oidc_dovecot.new_user()


@pytest.fixture
def refresh_token(oidc: OidcProvider, user: str, keychain: KeychainRefreshTokens) -> str:
    """``user`` signed in: the refresh token of a sign-in, stored in the keychain as ``login`` stores it."""
    token = str(sign_in(oidc, user)["refresh_token"])
    keychain.save(token)
    return token


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


def refresh_refused(oidc: OidcProvider, refresh_token: str) -> bool:
    form = {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": PUBLIC_CLIENT}
    try:
        urllib.request.urlopen(
            oidc.metadata()["token_endpoint"], urllib.parse.urlencode(form).encode()
        ).close()
    except urllib.error.HTTPError as refused:
        return refused.code == 400 and json.loads(refused.read()).get("error") == "invalid_grant"
    return False


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

"""What tests/integration/sign_in/test_sign_in_tokens.py shares with other test modules."""

from __future__ import annotations

import json
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
from tests.support.servers.oidc_provider import MAIL_SCOPE, PUBLIC_CLIENT, OidcProvider, sign_in
from tests.support.servers.secret_service import SecretService

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


def refresh_refused(oidc: OidcProvider, refresh_token: str) -> bool:
    form = {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": PUBLIC_CLIENT}
    try:
        urllib.request.urlopen(
            oidc.metadata()["token_endpoint"], urllib.parse.urlencode(form).encode()
        ).close()
    except urllib.error.HTTPError as refused:
        return refused.code == 400 and json.loads(refused.read()).get("error") == "invalid_grant"
    return False

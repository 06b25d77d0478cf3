"""A team's server signing in as the organisation's application (issue 48 item 6): the client credentials
grant at node-oidc-provider (the application's own token: no user signs in, nothing is kept), a
``per_user`` template choosing each team user's mailbox, and Dovecot letting the application open the
mailboxes it was allowed (its ``oauth2`` passdb as a master passdb: ``<user>*<application>`` with the
application's token, checked by introspection), as Microsoft 365 lets an app registration with
IMAP.AccessAsApp open the mailboxes an admin gave it. A real ``serve --transport http`` process, each
user with the team identity provider's token through the SDK's HTTP client."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.mail import mailgen
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.http_server import http_client
from tests.support.servers.identity_provider import IdentityProvider
from tests.support.servers.oidc_provider import (
    MAIL_SCOPE,
    SERVICE_CLIENT,
    SERVICE_SECRET,
    OidcProvider,
    wait_for,
)
from tests.support.servers.team import serve_per_user

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
]


@pytest.fixture
def idp() -> Iterator[IdentityProvider]:
    with IdentityProvider() as provider:
        yield provider


@pytest.fixture
def app_dovecot(oidc: OidcProvider) -> Iterator[Dovecot]:
    """A Dovecot where the provider's application token opens any mailbox as ``<user>*<application>``."""
    with Dovecot(oauth2_introspection_url=oidc.introspection_url, oauth2_master=True) as server:
        yield server


def application_account(oidc: OidcProvider, tmp_path: Path, secret: str) -> dict[str, object]:
    """The template of an account signing in as the application, Microsoft-shaped (its tenant), with its
    token endpoint pointed at the local provider and the secret in a file of the user's alone."""
    secret_file = tmp_path / "app-secret"
    secret_file.write_text(secret)
    secret_file.chmod(0o600)
    return {
        "username": f"{{user}}*{SERVICE_CLIENT}",  # Dovecot's master login; Microsoft 365: "{user}"
        "password_env": None,
        "auth": "xoauth2",
        "oauth2_provider": "microsoft",
        "oauth2_tenant": "contoso.onmicrosoft.com",
        "oauth2_client_credentials": True,
        "oauth2_client_id": SERVICE_CLIENT,
        "oauth2_client_secret_file": str(secret_file),
        "oauth2_token_url": oidc.metadata()["token_endpoint"],
        "oauth2_scopes": [MAIL_SCOPE],  # Microsoft: https://outlook.office365.com/.default
    }


async def test_each_team_user_opens_their_own_mailbox_with_one_application_token(
    tmp_path: Path, oidc: OidcProvider, app_dovecot: Dovecot, idp: IdentityProvider
) -> None:
    alice, bob = app_dovecot.new_user("t-alice"), app_dovecot.new_user("t-bob")
    for user in (alice, bob):
        app_dovecot.seed(user, "INBOX", [mailgen.plain_message(f"mail of {user}", "x")])
    before = oidc.token_requests
    server = serve_per_user(
        tmp_path, app_dovecot, idp, [alice, bob], own=application_account(oidc, tmp_path, SERVICE_SECRET)
    )
    try:
        for user in (alice, bob):
            async with http_client(server.url, idp.jwt(user, audience=server.url)) as mcp:
                found = await mcp.ok("imap_search_messages", {"account_id": "own", "fields": "full"})
                assert [message["subject"] for message in found["messages"]] == [f"mail of {user}"]
    finally:
        server.stop()
    wait_for(lambda: oidc.token_requests >= before + 1)
    assert oidc.token_requests == before + 1  # one application token for both users


async def test_a_wrong_application_secret_fails_clearly_and_asks_nobody_to_sign_in(
    tmp_path: Path, oidc: OidcProvider, app_dovecot: Dovecot, idp: IdentityProvider
) -> None:
    alice = app_dovecot.new_user("t-alice")
    server = serve_per_user(
        tmp_path, app_dovecot, idp, [alice], own=application_account(oidc, tmp_path, "not-the-secret")
    )
    try:
        async with http_client(server.url, idp.jwt(alice, audience=server.url)) as mcp:
            envelope = await mcp.call("imap_search_messages", {"account_id": "own"})
    finally:
        server.stop()
    error = envelope["error"]
    assert error["code"] == "auth_failed", error
    assert "invalid_client" in error["message"], error["message"]
    assert "reason" not in error["details"] and "login" not in error["message"]
    assert SERVICE_SECRET not in str(envelope) and "not-the-secret" not in str(envelope)

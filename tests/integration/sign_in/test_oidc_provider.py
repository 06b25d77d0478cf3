"""The test authorization server itself (tests/support/servers/oidc_provider.py): node-oidc-provider's tokens log
in to Dovecot over XOAUTH2 and OAUTHBEARER, checked by Dovecot's ``oauth2`` passdb through the
provider's introspection endpoint, so the built-in sign-in's tests log in with real tokens. A token
without the mail scope, one from another issuer and a revoked one are refused by Dovecot."""

from __future__ import annotations

import imaplib
import json
import shutil
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from mail_imap_mcp.net.sasl import oauth_initial_response
from tests.support.patience import patient
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.oidc_provider import PUBLIC_CLIENT, OidcProvider, sign_in, wait_for

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


#: Dovecot's answer to a token it checked and refused (not a check it could not make: "[UNAVAILABLE]").
REFUSED = "[AUTHENTICATIONFAILED]"


def imap_login(server: Dovecot, user: str, token: str, mechanism: str) -> str:
    """What ``server`` answers ``user``'s login with ``token`` over ``mechanism``: ``OK``, or its words
    and what its log says of ``user`` (why Dovecot could not check a token is only there)."""
    with imaplib.IMAP4_SSL(server.host, server.tls_port, ssl_context=server.client_ssl_context()) as client:
        response = oauth_initial_response(mechanism, user, token, server.host, server.tls_port)
        try:
            client.authenticate(mechanism, lambda _challenge: response)
        except imaplib.IMAP4.error as refused:
            logged = [
                line for line in server.log_path.read_text(errors="replace").splitlines() if user in line
            ]
            return "\n".join([str(refused), *logged[-10:]])
        return "OK" if client.state == "AUTH" else client.state


@pytest.mark.parametrize("mechanism", ["XOAUTH2", "OAUTHBEARER"])
def test_dovecot_accepts_the_providers_access_token(
    oidc: OidcProvider, oidc_dovecot: Dovecot, mechanism: str
) -> None:
    user = oidc_dovecot.new_user()
    tokens = sign_in(oidc, user)
    assert imap_login(oidc_dovecot, user, tokens["access_token"], mechanism) == "OK"
    assert REFUSED in imap_login(oidc_dovecot, oidc_dovecot.new_user(), tokens["access_token"], mechanism)


def test_dovecot_refuses_a_token_without_the_mail_scope(oidc: OidcProvider, oidc_dovecot: Dovecot) -> None:
    user = oidc_dovecot.new_user()
    tokens = sign_in(oidc, user, scope="openid offline_access other")
    assert REFUSED in imap_login(oidc_dovecot, user, tokens["access_token"], "XOAUTH2")


def test_dovecot_refuses_a_token_of_another_issuer(oidc_dovecot: Dovecot, tmp_path: Path) -> None:
    user = oidc_dovecot.new_user()
    with OidcProvider(tmp_path) as other:
        tokens = sign_in(other, user)
    assert REFUSED in imap_login(oidc_dovecot, user, tokens["access_token"], "XOAUTH2")


def test_a_revoked_token_is_refused(oidc: OidcProvider, oidc_dovecot: Dovecot) -> None:
    user = oidc_dovecot.new_user()
    tokens = sign_in(oidc, user)
    revoke = {"token": tokens["access_token"], "client_id": PUBLIC_CLIENT}
    post(oidc.metadata()["revocation_endpoint"], revoke)
    assert REFUSED in imap_login(oidc_dovecot, user, tokens["access_token"], "XOAUTH2")


def test_refresh_tokens_rotate_and_a_spent_one_is_refused(oidc: OidcProvider, oidc_dovecot: Dovecot) -> None:
    user = oidc_dovecot.new_user()
    tokens = sign_in(oidc, user)
    refresh = {
        "grant_type": "refresh_token",
        "refresh_token": tokens["refresh_token"],
        "client_id": PUBLIC_CLIENT,
    }
    before = oidc.token_requests
    token_endpoint = oidc.metadata()["token_endpoint"]
    renewed = post(token_endpoint, refresh)
    assert renewed["refresh_token"] != tokens["refresh_token"]
    assert imap_login(oidc_dovecot, user, renewed["access_token"], "XOAUTH2") == "OK"
    with pytest.raises(urllib.error.HTTPError) as reused:
        post(token_endpoint, refresh)
    assert reused.value.code == 400
    wait_for(lambda: oidc.token_requests == before + 2)


def post(url: str, form: dict[str, str]) -> dict[str, Any]:
    with urllib.request.urlopen(url, urllib.parse.urlencode(form).encode(), timeout=patient(30)) as answer:
        body = answer.read()
    return json.loads(body) if body else {}

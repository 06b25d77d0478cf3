"""The checks an ID token passes before anything of it is shown (net/oauth.py ``id_token_problem``, issue 56
item 4): its issuer (where the client knows it; Microsoft's any tenant), its audience, its expiry (with a
leeway) and the nonce of the request it answers. Who a sign-in is, the mail server decides."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from mail_imap_mcp.config.sign_in import SignInSettings
from mail_imap_mcp.credentials.oauth_client import oauth_client
from mail_imap_mcp.net.oauth import (
    ID_TOKEN_LEEWAY_S,
    Endpoints,
    OAuthClient,
    TokenResponse,
    id_token_problem,
    signed_in_as,
)
from mail_imap_mcp.net.tokens import AccessToken

NOW = 1_800_000_000.0
CLIENT = OAuthClient(
    Endpoints("https://p.test/auth", "https://p.test/token"), "app", ("openid",), issuer="https://p.test"
)
GOOD: dict[str, Any] = {
    "iss": "https://p.test",
    "aud": "app",
    "exp": NOW + 60,
    "nonce": "n1",
    "email": "a@x.test",
}


def answer(claims: dict[str, Any] | None) -> TokenResponse:
    token = None
    if claims is not None:
        payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
        token = f"e30.{payload}.sig"
    return TokenResponse(AccessToken("access", NOW + 3600), "refresh", id_token=token)


def test_a_token_that_checks_out_has_no_problem_and_names_who() -> None:
    assert id_token_problem(answer(GOOD), CLIENT, "n1", NOW) is None
    assert id_token_problem(answer(None), CLIENT, "n1", NOW) is None  # no ID token: nothing to check
    assert signed_in_as(answer(GOOD)) == "a@x.test"
    assert signed_in_as(answer({**GOOD, "email_verified": False, "sub": "s"})) == "s"


@pytest.mark.parametrize(
    ("changed", "said"),
    [
        ({"iss": "https://attacker.test"}, "issued by 'https://attacker.test'"),
        ({"aud": "another-app"}, "for another application"),
        ({"aud": ["x", "y"]}, "for another application"),
        ({"exp": NOW - ID_TOKEN_LEEWAY_S - 1}, "expired"),
        ({"exp": "never"}, "expired"),
        ({"nonce": "another sign-in's"}, "another sign-in (nonce)"),
    ],
)
def test_a_token_of_another_issuer_client_time_or_sign_in_is_refused(
    changed: dict[str, Any], said: str
) -> None:
    problem = id_token_problem(answer({**GOOD, **changed}), CLIENT, "n1", NOW)
    assert problem is not None and said in problem


def test_within_the_leeway_and_without_a_nonce_to_match_it_passes() -> None:
    late = {**GOOD, "exp": NOW - ID_TOKEN_LEEWAY_S + 1}
    assert id_token_problem(answer(late), CLIENT, "n1", NOW) is None
    assert id_token_problem(answer({**GOOD, "nonce": None}), CLIENT, None, NOW) is None  # the device grant
    assert id_token_problem(answer({**GOOD, "aud": ["app", "other"]}), CLIENT, "n1", NOW) is None
    assert id_token_problem(answer({"x": 1} | {}), CLIENT, "n1", NOW) is not None


def _settings(**values: Any) -> SignInSettings:
    return SignInSettings.model_validate({"oauth2_client_id": "app", **values})


def test_each_providers_issuer_is_known_where_its_own_endpoints_are_used() -> None:
    google = oauth_client(_settings(oauth2_provider="google"))
    assert google.issuer == "https://accounts.google.com"
    for iss in ("https://accounts.google.com", "accounts.google.com"):  # Google writes both
        token = answer({**GOOD, "iss": iss, "aud": "app"})
        assert id_token_problem(token, google, "n1", NOW) is None
    common = oauth_client(_settings(oauth2_provider="microsoft"))
    tenant = "https://login.microsoftonline.com/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0"
    assert id_token_problem(answer({**GOOD, "iss": tenant}), common, "n1", NOW) is None
    guid = "72f988bf-86f1-41af-91ab-2d7cd011db47"
    own = oauth_client(_settings(oauth2_provider="microsoft", oauth2_tenant=guid))
    assert id_token_problem(answer({**GOOD, "iss": tenant}), own, "n1", NOW) is not None
    by_hand = _settings(
        oauth2_provider="microsoft",
        oauth2_authorization_url="https://a.test",
        oauth2_token_url="https://t.test",
    )
    assert oauth_client(by_hand).issuer is None

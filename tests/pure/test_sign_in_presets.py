"""The built-in sign-in's presets (config/sign_in.py): Microsoft's tenant in the endpoints' path and its
IMAP scope with offline_access; Google's mail scope, revocation endpoint and access_type=offline; an
override replaces one endpoint only. The URLs are as the providers document them (docs/providers.md),
not checked against their live services."""

from __future__ import annotations

import urllib.parse

import pytest

from mail_imap_mcp.config import AccountConfig, ConfigError
from mail_imap_mcp.config.sign_in import SignInProvider, SignInSettings
from mail_imap_mcp.credentials.oauth_client import oauth_client
from mail_imap_mcp.net.oauth import authorization_request


def settings(**given: object) -> SignInSettings:
    return SignInSettings.model_validate({"oauth2_client_id": "client", **given})


@pytest.mark.parametrize("tenant", ["common", "organizations", "consumers", "contoso.onmicrosoft.com"])
def test_microsoft_names_the_tenant_in_every_endpoint_and_asks_offline_access(tenant: str) -> None:
    client = oauth_client(settings(oauth2_provider="microsoft", oauth2_tenant=tenant))
    base = f"https://login.microsoftonline.com/{tenant}/oauth2/v2.0"
    assert (client.endpoints.authorization, client.endpoints.token, client.endpoints.device) == (
        f"{base}/authorize",
        f"{base}/token",
        f"{base}/devicecode",
    )
    assert client.endpoints.revocation is None
    assert client.scopes == ("https://outlook.office.com/IMAP.AccessAsUser.All", "offline_access")
    assert client.client_secret is None


def test_google_asks_the_mail_scope_offline_and_offers_revocation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_SECRET", "s3cret")
    client = oauth_client(settings(oauth2_provider="google", oauth2_client_secret_env="GOOGLE_SECRET"))
    assert client.scopes == ("https://mail.google.com/",)
    assert client.endpoints.revocation == "https://oauth2.googleapis.com/revoke"
    assert ("access_type", "offline") in client.extra_authorization
    assert client.client_secret == "s3cret" and "s3cret" not in repr(client)


def test_an_override_replaces_one_endpoint() -> None:
    client = oauth_client(settings(oauth2_provider="google", oauth2_token_url="https://tokens.example.org/t"))
    assert client.endpoints.token == "https://tokens.example.org/t"
    assert client.endpoints.authorization == "https://accounts.google.com/o/oauth2/v2/auth"


def test_a_missing_client_secret_variable_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_SECRET", raising=False)
    with pytest.raises(ConfigError, match="GOOGLE_SECRET"):
        oauth_client(settings(oauth2_provider="google", oauth2_client_secret_env="GOOGLE_SECRET"))


def test_an_applications_own_sign_in_asks_microsofts_default_scope_of_its_tenant(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("APP_SECRET", "app-secret")
    given = settings(
        oauth2_provider="microsoft",
        oauth2_tenant="contoso.onmicrosoft.com",
        oauth2_client_credentials=True,
        oauth2_client_secret_env="APP_SECRET",
    )
    assert given.sign_in_problem(per_user=True) is None  # one application token serves every user
    client = oauth_client(given)
    assert (
        client.endpoints.token
        == "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/token"
    )
    assert client.scopes == ("https://outlook.office365.com/.default",)
    assert client.client_secret == "app-secret"


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"oauth2_provider": "google"}, "Google has no client credentials grant for Gmail"),
        ({"oauth2_provider": "microsoft"}, "needs the application's secret"),
        (
            {
                "oauth2_provider": "microsoft",
                "oauth2_client_secret_env": "S",
                "oauth2_tenant": "organizations",
            },
            "needs your tenant's id or domain in oauth2_tenant, not 'organizations'",
        ),
        (
            {"oauth2_provider": "custom", "oauth2_client_secret_env": "S"},
            "needs oauth2_issuer or oauth2_token_url",
        ),
    ],
    ids=["google", "no secret", "shared tenant", "custom without endpoint"],
)
def test_an_applications_own_sign_in_says_what_it_lacks(given: dict[str, object], said: str) -> None:
    problem = settings(oauth2_client_credentials=True, **given).sign_in_problem(per_user=True)
    assert problem is not None and said in problem, problem


@pytest.mark.parametrize("sends", [False, True], ids=["reads only", "send_enabled"])
def test_a_microsoft_account_that_sends_also_asks_the_smtp_send_scope(sends: bool) -> None:
    """Microsoft's SMTP submission takes https://outlook.office.com/SMTP.Send (its IMAP/SMTP OAuth page):
    asked, beside the IMAP scope, only of an account that sends; Google's mail scope covers SMTP too."""
    account = {
        "host": "outlook.office365.com",
        "username": "me@contoso.com",
        "auth": "xoauth2",
        "oauth2_provider": "microsoft",
        "oauth2_client_id": "client",
        "send_enabled": sends,
        "allowed_recipients": ["@contoso.com"],
    }
    scopes = oauth_client(AccountConfig.model_validate(account)).scopes
    imap = ("https://outlook.office.com/IMAP.AccessAsUser.All", "offline_access")
    assert scopes == ((*imap, "https://outlook.office.com/SMTP.Send") if sends else imap)
    chosen = oauth_client(AccountConfig.model_validate({**account, "oauth2_scopes": ["a", "b"]})).scopes
    assert chosen == ("a", "b")  # scopes set by the user are taken as they are


#: The prompt each provider's sign-in asks, and Google's access_type (issue 78 item 3): consent only where a
#: refresh token needs it (OpenID Connect's offline_access; Google's later sign-ins); Microsoft issues one
#: without it, and answers it with "Need admin approval" in a tenant where users may not consent.
PROMPTS = {
    SignInProvider.MICROSOFT: ("select_account", None),
    SignInProvider.GOOGLE: ("consent", "offline"),
    SignInProvider.CUSTOM: ("consent", None),
}


def test_every_provider_has_its_prompt_here() -> None:
    assert set(PROMPTS) == set(SignInProvider)


@pytest.mark.parametrize("provider", list(SignInProvider))
def test_the_authorization_url_asks_consent_only_where_a_refresh_token_needs_it(
    provider: SignInProvider,
) -> None:
    given = settings(
        oauth2_provider=provider,
        oauth2_authorization_url="https://sign-in.example.org/authorize",
        oauth2_token_url="https://sign-in.example.org/token",
    )
    url = authorization_request(oauth_client(given), "http://127.0.0.1:8400/callback").url
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    prompt, access_type = PROMPTS[provider]
    assert query["prompt"] == [prompt]
    assert query.get("access_type") == ([access_type] if access_type else None)

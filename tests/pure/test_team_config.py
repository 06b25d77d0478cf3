"""The settings of a team's server: [http.auth], [state], and accounts that belong to users."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from mail_imap_mcp.app.scopes import accounts_of
from mail_imap_mcp.config import Config, HttpAuthSettings
from mail_imap_mcp.index.engines.sqlite.location import user_index_path
from mail_imap_mcp.state import ANONYMOUS, USER_CLAIM
from mail_imap_mcp.transport.oauth import AccessTokenVerifier, TokenRefused

AUTH = {
    "issuer": "https://sso.example",
    "audience": "https://mail.example/mcp",
    "jwks_url": "https://sso.example/jwks",
}


def account(**extra: Any) -> dict[str, Any]:
    return {"host": "imap.example", "username": "u", "password_env": "P", **extra}


def config(accounts: dict[str, dict[str, Any]], **sections: Any) -> Config:
    return Config.model_validate({"accounts": accounts, **sections})


def test_a_template_is_filled_in_for_each_user_in_username_addresses_and_helper_arguments() -> None:
    template = config(
        {
            "own": account(
                username="{user}*master",
                password_env=None,
                password_command=["pass", "show", "mail/{user}"],
                addresses=["{user}@corp.example"],
                per_user=True,
            ),
            "oauth": account(
                username="{user}@corp.example",
                password_env=None,
                auth="xoauth2",
                oauth2_token_command=["gcloud-token", "--subject={user}@corp.example"],
                per_user=True,
            ),
        },
        http={"auth": AUTH},
    )
    alice = accounts_of(template, "alice")
    assert alice.accounts["own"].username == "alice*master"
    assert alice.accounts["own"].password_command == ["pass", "show", "mail/alice"]
    assert alice.accounts["own"].addresses == ["alice@corp.example"]
    assert alice.accounts["oauth"].oauth2_token_command == ["gcloud-token", "--subject=alice@corp.example"]
    assert template.accounts["own"].username == "{user}*master"  # the template itself is unchanged


def test_an_account_serves_the_users_it_lists_a_template_everyone_signed_in_and_nobody_else() -> None:
    team = config(
        {
            "support": account(users=["Alice@corp.example", "bob@corp.example"]),
            "own": account(username="{user}", per_user=True),
            "few": account(username="{user}", per_user=True, users=["bob@corp.example"]),
        },
        http={"auth": AUTH},
    )
    assert sorted(accounts_of(team, "alice@corp.example").accounts) == ["own", "support"]
    assert sorted(accounts_of(team, "bob@corp.example").accounts) == ["few", "own", "support"]
    assert sorted(accounts_of(team, "eve@corp.example").accounts) == ["own"]
    # A one-person server's caller (stdio, the shared token) gets no template: there is nobody to fill in.
    assert sorted(accounts_of(team, ANONYMOUS).accounts) == ["support"]


def test_with_http_auth_every_account_says_whose_it_is() -> None:
    with pytest.raises(ValidationError, match=r"say whose account 'work' is"):
        config({"work": account()}, http={"auth": AUTH})


def test_http_auth_replaces_the_shared_token_and_needs_one_way_to_check_tokens() -> None:
    with pytest.raises(ValidationError, match="remove token_env"):
        config({"w": account(users=["a"])}, http={"auth": AUTH, "token_env": "T"})
    with pytest.raises(ValidationError, match="exactly one of jwks_url"):
        config({"w": account(users=["a"])}, http={"auth": {**AUTH, "jwks_url": None}})
    with pytest.raises(ValidationError, match="needs client_id"):
        config(
            {"w": account(users=["a"])},
            http={"auth": {**AUTH, "jwks_url": None, "introspection_url": "https://sso.example/i"}},
        )
    with pytest.raises(ValidationError, match="HS256 cannot be accepted"):
        config({"w": account(users=["a"])}, http={"auth": {**AUTH, "algorithms": ["HS256"]}})


def test_a_server_listening_beyond_loopback_may_rely_on_access_tokens() -> None:
    http = {"auth": AUTH, "host": "0.0.0.0", "allowed_hosts": ["mail.example"]}
    assert config({"w": account(users=["a"])}, http=http).http.auth is not None


def test_state_takes_a_redis_url_or_the_variable_holding_it() -> None:
    assert config({"w": account()}, state={"redis_url": "redis://127.0.0.1:6379/0"}).state.resolve_url() == (
        "redis://127.0.0.1:6379/0"
    )
    from_env = config({"w": account()}, state={"redis_url_env": "REDIS"}).state
    assert from_env.resolve_url({"REDIS": "redis://:pw@cache:6379/1"}) == "redis://:pw@cache:6379/1"
    with pytest.raises(ValidationError, match="must start with redis://"):
        config({"w": account()}, state={"redis_url": "http://cache"})


def test_a_template_that_fills_in_nobody_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"put \{user\} in username"):
        config({"own": account(username="shared@corp.example", per_user=True)}, http={"auth": AUTH})


def test_index_per_user_is_off_by_default_and_only_for_an_account_served_to_team_users() -> None:
    served = config({"own": account(username="{user}", per_user=True)}, http={"auth": AUTH})
    assert served.accounts["own"].index_per_user is False
    shared = config({"s": account(users=["a@corp.example"], index_per_user=True)}, http={"auth": AUTH})
    assert shared.accounts["s"].index_per_user
    with pytest.raises(ValidationError, match="index_per_user = true indexes the mailbox of each team user"):
        config({"w": account(index_per_user=True)})


def test_a_team_users_index_file_is_named_by_a_keyed_tag_of_the_user_and_the_account() -> None:
    def named(user: str, account_id: str = "own") -> str:
        return user_index_path(Path("/ix"), account_id, user).name

    alice = named("alice@corp.example")
    assert alice == named("alice@corp.example")  # the same file at every call
    assert len({alice, named("bob@corp.example"), named("alice@corp.example", "other")}) == 3
    assert alice.startswith("own~") and alice.endswith(".sqlite3") and "alice" not in alice


def test_regression_keys_and_introspection_in_the_clear_are_refused_beyond_loopback() -> None:
    """Over plain http anyone on the path could hand over their own signing keys and sign any user."""
    for name in ("issuer", "jwks_url"):
        with pytest.raises(ValidationError, match=f"{name} must be an https URL"):
            config({"w": account(users=["a"])}, http={"auth": {**AUTH, name: "http://sso.example/x"}})
    loopback = {**AUTH, "issuer": "http://127.0.0.1:8080", "jwks_url": "http://localhost:8080/jwks"}
    assert config({"w": account(users=["a"])}, http={"auth": loopback}).http.auth is not None


@pytest.mark.parametrize("verified", [False, None, "true"])
def test_regression_an_unverified_email_names_nobody(
    verified: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With user_claim = "email" (the default), an address a user typed in at the identity provider
    (email_verified false or absent) named that address's mailbox; and a token without email fell back
    to its sub. Both are refused now; a verified address is the user."""
    verifier = AccessTokenVerifier(HttpAuthSettings.model_validate(AUTH))
    claims: dict[str, Any] = {"email": "victim@corp.example", "sub": "victim@corp.example", "exp": 2**31}
    if verified is not None:
        claims["email_verified"] = verified
    monkeypatch.setattr(verifier, "_claims", lambda token: claims)
    with pytest.raises(TokenRefused, match="not verified"):
        asyncio.run(verifier.verify("t"))
    claims["email_verified"] = True
    assert asyncio.run(verifier.verify("t")).claims[USER_CLAIM] == "victim@corp.example"

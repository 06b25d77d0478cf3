"""Each account's credentials, built by the application root (credentials/logins.py): a password login, or a
token source of the account's own; an application's own token is one per ``Logins``, which the root owns
and shares with every user's pool, never a cache of the process."""

from __future__ import annotations

from typing import Any

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.credentials.logins import Logins, credentials_for
from mail_imap_mcp.credentials.tokens import SharedToken
from mail_imap_mcp.net.tokens import PasswordLogin

APPLICATION: dict[str, Any] = {
    "host": "imap.example.org",
    "username": "{user}",
    "per_user": True,
    "users": ["alice@example.org", "bob@example.org"],
    "auth": "xoauth2",
    "oauth2_provider": "microsoft",
    "oauth2_tenant": "contoso.onmicrosoft.com",
    "oauth2_client_credentials": True,
    "oauth2_client_id": "the-app",
    "oauth2_client_secret_env": "APP_SECRET",
}


def test_a_password_account_logs_in_with_its_password_read_at_each_login() -> None:
    account = AccountConfig(host="imap.example.org", username="me", password="s3cret")
    login = Logins().of("work", account)
    assert isinstance(login, PasswordLogin) and login.read() == "s3cret"
    assert "s3cret" not in repr(login)


def test_each_call_gives_a_token_command_account_a_source_of_its_own() -> None:
    account = AccountConfig(
        host="imap.example.org", username="me", auth="xoauth2", oauth2_token_command=["printf", "t"]
    )
    logins = Logins()
    first, second = logins.of("work", account), logins.of("work", account)
    assert isinstance(first, SharedToken) and isinstance(second, SharedToken) and first is not second


def test_every_user_of_one_root_shares_the_application_token_and_another_root_has_its_own() -> None:
    template = AccountConfig.model_validate(APPLICATION)
    root = Logins()
    alice = root.of("team", template.for_user("alice@example.org"))
    bob = root.of("team", template.for_user("bob@example.org"))
    assert isinstance(alice, SharedToken) and alice is bob
    assert Logins().of("team", template.for_user("alice@example.org")) is not alice
    assert credentials_for("team", template.for_user("alice@example.org")) is not alice


def test_a_pool_gets_each_of_its_accounts_credentials() -> None:
    accounts = {
        "home": AccountConfig(host="imap.example.org", username="me", password="pw"),
        "team": AccountConfig.model_validate(APPLICATION).for_user("alice@example.org"),
    }
    root = Logins()
    given = root.all(accounts)
    assert set(given) == {"home", "team"} and isinstance(given["home"], PasswordLogin)
    assert given["team"] is root.all(accounts)["team"]

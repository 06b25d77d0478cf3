"""The built-in sign-in's settings of an environment account (config/sign_in_env.py): every
``MAIL_IMAP_<ID>_OAUTH2_*`` variable sets its setting, the client secret by the variable's name (never
copied), ``_OAUTH2_PROVIDER`` implies ``xoauth2``, and a misspelt variable is refused naming the right one."""

from __future__ import annotations

import pytest

from mail_imap_mcp.config import ConfigError, load_config
from mail_imap_mcp.config.sign_in import SignInProvider

BASE = {
    "HOME": "/nonexistent",
    "MAIL_IMAP_WORK_USER": "me@example.org",
    "MAIL_IMAP_WORK_HOST": "imap.example.org",
}


def test_every_sign_in_variable_sets_its_setting() -> None:
    env = BASE | {
        "MAIL_IMAP_WORK_OAUTH2_PROVIDER": "Microsoft",
        "MAIL_IMAP_WORK_OAUTH2_CLIENT_ID": "0f1e2d3c-aaaa-bbbb-cccc-1234567890ab",
        "MAIL_IMAP_WORK_OAUTH2_CLIENT_SECRET": "the secret",
        "MAIL_IMAP_WORK_OAUTH2_TENANT": "organizations",
        "MAIL_IMAP_WORK_OAUTH2_SCOPES": "https://outlook.office.com/IMAP.AccessAsUser.All, offline_access",
        "MAIL_IMAP_WORK_OAUTH2_TOKEN_URL": "https://login.example.org/token",
        "MAIL_IMAP_WORK_OAUTH2_AUTHORIZATION_URL": "https://login.example.org/authorize",
        "MAIL_IMAP_WORK_OAUTH2_DEVICE_URL": "https://login.example.org/device",
        "MAIL_IMAP_WORK_OAUTH2_REVOCATION_URL": "https://login.example.org/revoke",
        "MAIL_IMAP_WORK_OAUTH2_REDIRECT_PORT": "53682",
    }
    account = load_config(None, env).accounts["work"]
    assert account.oauth2_provider is SignInProvider.MICROSOFT
    assert account.auth.value == "xoauth2"
    assert account.oauth2_client_id == "0f1e2d3c-aaaa-bbbb-cccc-1234567890ab"
    assert account.oauth2_client_secret_env == "MAIL_IMAP_WORK_OAUTH2_CLIENT_SECRET"  # by name
    assert "the secret" not in account.model_dump_json()
    assert account.oauth2_tenant == "organizations"
    assert account.oauth2_scopes == ["https://outlook.office.com/IMAP.AccessAsUser.All", "offline_access"]
    assert account.oauth2_token_url == "https://login.example.org/token"
    assert account.oauth2_authorization_url == "https://login.example.org/authorize"
    assert account.oauth2_device_url == "https://login.example.org/device"
    assert account.oauth2_revocation_url == "https://login.example.org/revoke"
    assert account.oauth2_redirect_port == 53682
    assert account.setting("oauth2_client_id") == "MAIL_IMAP_WORK_OAUTH2_CLIENT_ID"


def test_a_custom_issuer_and_a_secret_file_from_the_environment() -> None:
    env = BASE | {
        "MAIL_IMAP_WORK_OAUTH2_PROVIDER": "custom",
        "MAIL_IMAP_WORK_OAUTH2_CLIENT_ID": "mail",
        "MAIL_IMAP_WORK_OAUTH2_ISSUER": "https://id.example.org",
        "MAIL_IMAP_WORK_OAUTH2_CLIENT_SECRET_FILE": "/home/me/.config/secret",
        "MAIL_IMAP_WORK_AUTH": "oauthbearer",
    }
    account = load_config(None, env).accounts["work"]
    assert account.oauth2_issuer == "https://id.example.org"
    assert str(account.oauth2_client_secret_file) == "/home/me/.config/secret"
    assert account.auth.value == "oauthbearer"  # _AUTH said so


def test_a_provider_without_a_client_id_is_refused_naming_it() -> None:
    env = BASE | {"MAIL_IMAP_WORK_OAUTH2_PROVIDER": "google"}
    with pytest.raises(ConfigError) as refused:
        load_config(None, env)
    assert "oauth2_provider needs oauth2_client_id" in str(refused.value)


def test_a_misspelt_sign_in_variable_is_refused_naming_the_right_one() -> None:
    env = BASE | {"MAIL_IMAP_WORK_OAUTH2_CLIENTID": "x"}
    with pytest.raises(ConfigError) as refused:
        load_config(None, env)
    assert "did you mean MAIL_IMAP_WORK_OAUTH2_CLIENT_ID?" in str(refused.value)

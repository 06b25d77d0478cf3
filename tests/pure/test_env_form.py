"""Environment accounts as an MCP Bundle's form fills them: an empty field is unset, the host and port come
from the provider table when the address is at a known provider, a token command means OAuth2."""

from __future__ import annotations

import pytest

from mail_imap_mcp.config import AuthMethod, ConfigError, Security, load_config
from mail_imap_mcp.config.providers import PROVIDERS, Provider, provider_for_address

#: What Claude Desktop passes for the bundle's form with only the address and the password filled in.
FORM = {
    "MAIL_IMAP_DEFAULT_ADDRESSES": "you@gmail.com",
    "MAIL_IMAP_DEFAULT_HOST": "",
    "MAIL_IMAP_DEFAULT_PORT": "",
    "MAIL_IMAP_DEFAULT_USER": "",
    "MAIL_IMAP_DEFAULT_PASS": "app-password",
    "MAIL_IMAP_DEFAULT_SECURITY": "",
    "MAIL_IMAP_DEFAULT_OAUTH2_TOKEN_COMMAND": "",
    "MAIL_IMAP_WRITE_ENABLED": "false",
    "HOME": "/nonexistent",
}


def test_an_address_at_a_known_provider_fills_host_port_security_and_username() -> None:
    account = load_config(None, FORM).accounts["default"]
    assert (account.host, account.effective_port, account.security) == ("imap.gmail.com", 993, Security.TLS)
    assert account.username == "you@gmail.com"
    assert account.effective_addresses == ["you@gmail.com"]
    assert account.resolve_password(FORM) == "app-password"


def test_what_the_form_says_wins_over_the_provider_table() -> None:
    env = {**FORM, "MAIL_IMAP_DEFAULT_HOST": "imap.example.org", "MAIL_IMAP_DEFAULT_PORT": "1143"}
    env |= {"MAIL_IMAP_DEFAULT_SECURITY": "starttls", "MAIL_IMAP_DEFAULT_USER": "login-name"}
    account = load_config(None, env).accounts["default"]
    assert (account.host, account.effective_port, account.security) == (
        "imap.example.org",
        1143,
        Security.STARTTLS,
    )
    assert account.username == "login-name"


def test_a_proton_address_gets_the_bridge_on_loopback_with_starttls() -> None:
    account = load_config(None, {**FORM, "MAIL_IMAP_DEFAULT_ADDRESSES": "me@proton.me"}).accounts["default"]
    assert (account.host, account.effective_port, account.security) == ("127.0.0.1", 1143, Security.STARTTLS)


def test_an_unsubstituted_form_field_counts_as_unset() -> None:
    # Claude Desktop passes ${user_config.x} as it is for a field without value or default (mcpb issue 250).
    env = {**FORM, "MAIL_IMAP_DEFAULT_HOST": "${user_config.imap_host}"}
    assert load_config(None, env).accounts["default"].host == "imap.gmail.com"


def test_an_unknown_domain_without_host_names_both_variables() -> None:
    env = {**FORM, "MAIL_IMAP_DEFAULT_ADDRESSES": "you@example.org"}
    with pytest.raises(ConfigError) as caught:
        load_config(None, env)
    message = str(caught.value)
    assert message.startswith("MAIL_IMAP_DEFAULT_ADDRESSES is set but MAIL_IMAP_DEFAULT_HOST is not")
    assert "'you@example.org'" in message and "set MAIL_IMAP_DEFAULT_HOST" in message
    assert "app-password" not in message


def test_an_empty_password_is_unset_and_named() -> None:
    with pytest.raises(ConfigError, match=r"^MAIL_IMAP_DEFAULT_PASS is not set"):
        load_config(None, {**FORM, "MAIL_IMAP_DEFAULT_PASS": ""})


def test_a_token_command_logs_in_with_xoauth2_without_a_password() -> None:
    env = {
        **FORM,
        "MAIL_IMAP_DEFAULT_PASS": "",
        "MAIL_IMAP_DEFAULT_OAUTH2_TOKEN_COMMAND": "pizauth show gmail",
    }
    account = load_config(None, env).accounts["default"]
    assert account.auth is AuthMethod.XOAUTH2
    assert account.oauth2_token_command == ["pizauth", "show", "gmail"]


def test_writes_follow_the_forms_toggle() -> None:
    assert load_config(None, FORM).server.write_enabled is False
    assert load_config(None, {**FORM, "MAIL_IMAP_WRITE_ENABLED": "true"}).server.write_enabled is True
    assert load_config(None, {**FORM, "MAIL_IMAP_WRITE_ENABLED": ""}).server.write_enabled is False


def test_empty_variables_of_no_account_configure_nothing() -> None:
    # Every field of the form left empty: no account, and the error says how to configure one.
    empty = {name: "" for name in FORM if name.startswith("MAIL_IMAP_")}
    with pytest.raises(ConfigError, match="no accounts configured"):
        load_config(None, {**empty, "HOME": "/nonexistent"})


@pytest.mark.parametrize("provider", PROVIDERS, ids=lambda provider: provider.name)
def test_every_providers_domains_lead_back_to_it(provider: Provider) -> None:
    for domain in provider.domains:
        assert provider_for_address(f"someone@{domain.upper()}") is provider


def test_no_provider_for_a_lookalike_domain_or_no_address() -> None:
    assert provider_for_address("you@evilgmail.com") is None
    assert provider_for_address("gmail.com") is None
    assert provider_for_address("") is None

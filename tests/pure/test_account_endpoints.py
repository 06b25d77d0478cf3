"""An account has an endpoint per protocol: IMAP from the flat settings as before, SMTP submission from
its own table (``[accounts.<id>.smtp]``, ``MAIL_IMAP_<ID>_SMTP_*``) over the provider table's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from mail_imap_mcp.config import Config, ConfigError, Security, load_config
from mail_imap_mcp.config.endpoints import Endpoint

PASSWORD = {"password_env": "UNUSED_PASSWORD"}


def _account(tmp_path: Path, toml: str, env: dict[str, str] | None = None) -> Any:
    path = tmp_path / "config.toml"
    path.write_text(toml)
    (account,) = load_config(path, env=env or {}).accounts.values()
    return account


def test_the_flat_imap_settings_are_the_imap_endpoint(tmp_path: Path) -> None:
    account = _account(
        tmp_path,
        '[accounts.work]\nhost = "mail.example.org"\nsecurity = "starttls"\nusername = "me"\n'
        'password_env = "P"\n',
    )
    assert account.imap == Endpoint("mail.example.org", 143, Security.STARTTLS)
    assert account.submission is None  # no provider knows mail.example.org, no smtp table


@pytest.mark.parametrize(
    ("host", "username", "submission", "files_sent_copy"),
    [
        ("imap.gmail.com", "me@gmail.com", ("smtp.gmail.com", 465, Security.TLS), True),
        ("outlook.office365.com", "me@contoso.com", ("smtp.office365.com", 587, Security.STARTTLS), True),
        ("imap.mail.me.com", "me@icloud.com", ("smtp.mail.me.com", 587, Security.STARTTLS), False),
        ("imap.mail.yahoo.com", "me@yahoo.com", ("smtp.mail.yahoo.com", 465, Security.TLS), False),
        ("imap.aol.com", "me@aol.com", ("smtp.aol.com", 465, Security.TLS), False),
        ("imap.fastmail.com", "me@fastmail.com", ("smtp.fastmail.com", 465, Security.TLS), False),
        # The Bridge's IMAP host is loopback, known by no provider: its address tells.
        ("127.0.0.1", "me@proton.me", ("127.0.0.1", 1025, Security.STARTTLS), False),
    ],
)
def test_the_submission_endpoint_defaults_from_the_provider_table(
    tmp_path: Path, host: str, username: str, submission: tuple[Any, ...], files_sent_copy: bool
) -> None:
    security = "starttls" if host == "127.0.0.1" else "tls"
    account = _account(
        tmp_path,
        f'[accounts.a]\nhost = "{host}"\nsecurity = "{security}"\nusername = "{username}"\n'
        'password_env = "P"\n',
    )
    assert account.submission == Endpoint(*submission)
    assert account.provider.files_sent_copy is files_sent_copy


def test_the_smtp_table_overrides_the_provider_key_by_key(tmp_path: Path) -> None:
    base = '[accounts.a]\nhost = "imap.gmail.com"\nusername = "me@gmail.com"\npassword_env = "P"\n'
    # Only the security: the provider's host, and that security's submission port.
    account = _account(tmp_path, base + '[accounts.a.smtp]\nsecurity = "starttls"\n')
    assert account.submission == Endpoint("smtp.gmail.com", 587, Security.STARTTLS)
    # A host of its own: tls on 465 unless said otherwise, the provider's settings no longer apply.
    account = _account(tmp_path, base + '[accounts.a.smtp]\nhost = "relay.example.org"\n')
    assert account.submission == Endpoint("relay.example.org", 465, Security.TLS)
    account = _account(tmp_path, base + '[accounts.a.smtp]\nhost = "relay.example.org"\nport = 2525\n')
    assert account.submission == Endpoint("relay.example.org", 2525, Security.TLS)
    assert account.setting("smtp_port", "2525") == "port = 2525 in [accounts.a.smtp]"


@pytest.mark.parametrize("host", ["smtp.example.org", None])
def test_plain_submission_is_refused_unless_to_a_named_loopback_host(
    tmp_path: Path, host: str | None
) -> None:
    named = f'host = "{host}"\n' if host else ""
    with pytest.raises(ConfigError, match=r"smtp.*plain"):
        _account(
            tmp_path,
            '[accounts.a]\nhost = "127.0.0.1"\nusername = "u"\npassword_env = "P"\n'
            f'[accounts.a.smtp]\n{named}security = "plain"\n',
        )


def test_environment_accounts_take_their_submission_server_from_smtp_variables(tmp_path: Path) -> None:
    env = {
        "MAIL_IMAP_WORK_USER": "me@gmail.com",
        "MAIL_IMAP_WORK_PASS": "secret",
        "MAIL_IMAP_WORK_SMTP_SECURITY": "STARTTLS",
    }
    (account,) = load_config(None, env).accounts.values()
    assert account.imap == Endpoint("imap.gmail.com", 993, Security.TLS)
    assert account.submission == Endpoint("smtp.gmail.com", 587, Security.STARTTLS)
    env = {
        "MAIL_IMAP_WORK_HOST": "imap.example.org",
        "MAIL_IMAP_WORK_USER": "me",
        "MAIL_IMAP_WORK_PASS": "secret",
        "MAIL_IMAP_WORK_SMTP_HOST": "smtp.example.org",
        "MAIL_IMAP_WORK_SMTP_PORT": "587",
    }
    config = load_config(None, env)
    # SMTP_HOST is the work account's server, not the host of an account named work_smtp.
    assert list(config.accounts) == ["work"]
    account = config.accounts["work"]
    assert account.submission == Endpoint("smtp.example.org", 587, Security.TLS)
    assert account.setting("smtp_host") == "MAIL_IMAP_WORK_SMTP_HOST"


def test_an_smtp_variable_of_no_account_is_refused_naming_it(tmp_path: Path) -> None:
    env = {"MAIL_IMAP_WORK_SMTP_HOST": "smtp.example.org"}
    with pytest.raises(ConfigError, match="MAIL_IMAP_WORK_SMTP_HOST is set but MAIL_IMAP_WORK_HOST"):
        load_config(None, env)


def test_a_wrong_smtp_port_variable_is_named_as_the_user_wrote_it(tmp_path: Path) -> None:
    """An environment account's wrong setting keeps the server up (config/faults.py): the account's fault."""
    env = {"MAIL_IMAP_WORK_USER": "me@gmail.com", "MAIL_IMAP_WORK_PASS": "s", "MAIL_IMAP_WORK_SMTP_PORT": "x"}
    ((setting, given),) = [(f.setting, f.given) for f in load_config(None, env).accounts["work"].faults]
    assert (setting, given) == ("MAIL_IMAP_WORK_SMTP_PORT", "x")


def test_managesieve_is_the_imap_host_on_4190_with_starttls_unless_the_sieve_table_says_otherwise() -> None:
    env = {
        "MAIL_IMAP_WORK_HOST": "imap.example.org",
        "MAIL_IMAP_WORK_USER": "me",
        "MAIL_IMAP_WORK_PASS": "secret",
        "MAIL_IMAP_WORK_RULES_ENABLED": "true",
    }
    (account,) = load_config(None, env).accounts.values()
    assert account.rules_enabled is True
    assert account.sieve.endpoint(account.host) == Endpoint("imap.example.org", 4190, Security.STARTTLS)
    env |= {"MAIL_IMAP_WORK_SIEVE_HOST": "sieve.example.org", "MAIL_IMAP_WORK_SIEVE_SECURITY": "TLS"}
    config = load_config(None, env)
    assert list(config.accounts) == ["work"]  # SIEVE_HOST is work's server, not an account's host
    account = config.accounts["work"]
    assert account.sieve.endpoint(account.host) == Endpoint("sieve.example.org", 4190, Security.TLS)
    assert account.setting("sieve_host") == "MAIL_IMAP_WORK_SIEVE_HOST"
    filed = Config.model_validate(
        {"accounts": {"w": {"host": "imap.example.org", "username": "me", "password_env": "P",
                            "sieve": {"port": 2000}}}}
    )  # fmt: skip
    assert filed.accounts["w"].setting("sieve_host") == "host in [accounts.w.sieve]"
    with pytest.raises(ValidationError, match="loopback"):
        Config.model_validate(
            {"accounts": {"w": {"host": "imap.example.org", "username": "me", "password_env": "P",
                                "sieve": {"security": "plain"}}}}
        )  # fmt: skip

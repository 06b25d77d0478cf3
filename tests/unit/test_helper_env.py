"""Helper commands get a minimal environment (issue 25, finding 5).

The review saw password_command and oauth2_token_command receive 39 variables, among them the HTTP
bearer token and another account's password variable. Each test runs a real helper that writes the
environment it received to a file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mail_imap_mcp.config import AccountConfig, ConfigError, HttpSettings, helper_environment, load_config
from mail_imap_mcp.credentials.logins import credentials_for
from mail_imap_mcp.credentials.secrets import account_password
from mail_imap_mcp.imap.auth import Login

SERVER_ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/you",
    "LANG": "C.UTF-8",
    "LC_TIME": "de_DE.UTF-8",
    "GNUPGHOME": "/home/you/.gnupg",
    "MAIL_IMAP_MCP_HTTP_TOKEN": "the-http-bearer-token",
    "MAIL_IMAP_WORK_PASS": "another-accounts-password",
    "AWS_SECRET_ACCESS_KEY": "unrelated-secret",
}
SECRETS = ("MAIL_IMAP_MCP_HTTP_TOKEN", "MAIL_IMAP_WORK_PASS", "AWS_SECRET_ACCESS_KEY")


def dumping_helper(dump: Path, prints: str) -> list[str]:
    """A helper command that writes its environment to ``dump`` and prints ``prints``."""
    code = f"import json, os; open({str(dump)!r}, 'w').write(json.dumps(dict(os.environ))); print({prints!r})"
    return [sys.executable, "-c", code]


def received(dump: Path) -> dict[str, str]:
    environment: dict[str, str] = json.loads(dump.read_text())
    return environment


def test_helper_environment_keeps_path_home_locale_and_the_listed_names_only() -> None:
    assert helper_environment(["GNUPGHOME", "UNSET_NAME"], SERVER_ENV) == {
        "PATH": "/usr/bin:/bin",
        "HOME": "/home/you",
        "LANG": "C.UTF-8",
        "LC_TIME": "de_DE.UTF-8",
        "GNUPGHOME": "/home/you/.gnupg",
    }


def test_regression_password_command_does_not_receive_the_servers_secrets(tmp_path: Path) -> None:
    dump = tmp_path / "env.json"
    account = AccountConfig(
        host="imap.example.com",
        username="you",
        password_command=dumping_helper(dump, "pw"),
        helper_env=["GNUPGHOME"],
    )
    assert account_password(account, env=SERVER_ENV) == "pw"
    environment = received(dump)
    assert not [name for name in SECRETS if name in environment]
    assert environment["GNUPGHOME"] == "/home/you/.gnupg"
    assert environment["HOME"] == "/home/you"


def test_regression_oauth2_token_command_does_not_receive_the_servers_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in SERVER_ENV.items():
        monkeypatch.setenv(name, value)
    dump = tmp_path / "env.json"
    account = AccountConfig(
        host="imap.example.com",
        username="you@example.com",
        auth="xoauth2",
        oauth2_token_command=dumping_helper(dump, "ya29.token"),
    )
    Login("work", account, lambda: 20.0, credentials_for("work", account))
    environment = received(dump)
    assert not [name for name in SECRETS if name in environment]
    assert "GNUPGHOME" not in environment  # not listed in helper_env
    assert environment["PATH"] == "/usr/bin:/bin"


def test_regression_http_token_command_does_not_receive_the_servers_secrets(tmp_path: Path) -> None:
    dump = tmp_path / "env.json"
    settings = HttpSettings(token_command=dumping_helper(dump, "x" * 32), token_command_env=["GNUPGHOME"])
    assert settings.resolve_token(env=SERVER_ENV) == "x" * 32
    environment = received(dump)
    assert not [name for name in SECRETS if name in environment]
    assert environment["GNUPGHOME"] == "/home/you/.gnupg"


@pytest.mark.parametrize("name", ["GNUPG HOME", "1ABC", "", "A=B"])
def test_helper_env_names_must_be_environment_variable_names(name: str) -> None:
    with pytest.raises(ValueError, match="is not an environment variable name"):
        AccountConfig(host="imap.example.com", username="you", password_env="X", helper_env=[name])


def test_env_accounts_list_helper_env_comma_separated_and_a_wrong_name_names_the_variable() -> None:
    env = {
        "MAIL_IMAP_DEFAULT_HOST": "imap.example.com",
        "MAIL_IMAP_DEFAULT_USER": "you",
        "MAIL_IMAP_DEFAULT_PASS": "p",
        "MAIL_IMAP_DEFAULT_HELPER_ENV": " GNUPGHOME, PASSWORD_STORE_DIR,",
    }
    account = load_config(None, env).accounts["default"]
    assert account.helper_env == ["GNUPGHOME", "PASSWORD_STORE_DIR"]
    with pytest.raises(ConfigError, match="MAIL_IMAP_DEFAULT_HELPER_ENV: 'A=B' is not an environment"):
        load_config(None, {**env, "MAIL_IMAP_DEFAULT_HELPER_ENV": "A=B"})

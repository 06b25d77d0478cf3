"""``[http]``: token sources, the non-loopback rules and the Host/Origin lists (no server needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mail_imap_mcp.config import HTTP_TOKEN_ENV, ConfigError, HttpSettings, load_config
from mail_imap_mcp.transport.http import transport_security, with_cors

TOKEN = "0123456789abcdef-token"
ACCOUNT = '[accounts.a]\nhost = "127.0.0.1"\nsecurity = "plain"\nusername = "u"\npassword_env = "PW"\n'


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(ACCOUNT + text)
    return path


def test_loopback_needs_no_token_and_accepts_only_loopback_names() -> None:
    settings = HttpSettings()
    assert settings.resolve_token() is None
    security = transport_security(settings)
    assert "127.0.0.1:*" in security.allowed_hosts and "localhost:*" in security.allowed_hosts
    assert all(origin.startswith("http://") for origin in security.allowed_origins)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "mail.example.com"])
def test_beyond_loopback_a_token_is_required_and_named(host: str) -> None:
    with pytest.raises(ConfigError, match="token_env, token_file or token_command") as caught:
        HttpSettings().with_overrides(host=host)
    assert "--host" in str(caught.value) and "not a loopback address" in str(caught.value)


def test_beyond_loopback_allowed_hosts_are_required_and_become_the_whole_list() -> None:
    with pytest.raises(ConfigError, match="allowed_hosts"):
        HttpSettings(token_env="T").with_overrides(host="0.0.0.0")
    settings = HttpSettings(token_env="T").with_overrides(
        host="0.0.0.0", allowed_hosts=["mail.example.com", "10.0.0.5:8443"]
    )
    security = transport_security(settings)
    assert security.allowed_hosts == ["mail.example.com", "mail.example.com:*", "10.0.0.5:8443"]
    assert security.allowed_origins == []


def test_one_token_source_at_most(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="at most one of token_env, token_file, token_command"):
        load_config(write(tmp_path, '[http]\ntoken_env = "X"\ntoken_file = "/x"\n'), env={})


def test_token_from_file_command_and_env(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    assert HttpSettings(token_file=token_file).resolve_token() == TOKEN
    assert HttpSettings(token_command=["printf", TOKEN]).resolve_token() == TOKEN
    assert HttpSettings(token_env="MY_TOKEN").resolve_token({"MY_TOKEN": TOKEN}) == TOKEN


def test_the_default_variable_is_used_when_no_source_is_named(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, ""), env={"PW": "p", HTTP_TOKEN_ENV: TOKEN})
    assert config.http.token_env == HTTP_TOKEN_ENV
    assert config.http.resolve_token({HTTP_TOKEN_ENV: TOKEN}) == TOKEN
    named = load_config(
        write(tmp_path, '[http]\ntoken_env = "OTHER"\n'), env={"PW": "p", HTTP_TOKEN_ENV: TOKEN}
    )
    assert named.http.token_env == "OTHER"
    assert load_config(write(tmp_path, ""), env={"PW": "p"}).http.token_env is None


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        (HttpSettings(token_env="MISSING"), "MISSING is not set or empty"),
        (HttpSettings(token_file=Path("/nonexistent/token")), "token_file in [http]: cannot read"),
        (HttpSettings(token_command=["sh", "-c", f"echo {TOKEN}; exit 4"]), "token_command in [http] exited"),
        (HttpSettings(token_command=["true"]), "printed an empty token"),
        (HttpSettings(token_command=["printf", "short"]), "at least 16 printable characters"),
        (HttpSettings(token_command=["printf", "with space 0123456789"]), "without spaces"),
    ],
)
def test_token_problems_name_the_setting_and_never_the_value(settings: HttpSettings, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        settings.resolve_token({})
    assert problem in str(caught.value)
    assert TOKEN not in str(caught.value) and "with space" not in str(caught.value)


def test_empty_token_file(tmp_path: Path) -> None:
    empty = tmp_path / "token"
    empty.write_text("\n")
    empty.chmod(0o600)
    with pytest.raises(ConfigError, match="is empty"):
        HttpSettings(token_file=empty).resolve_token()


def test_malformed_allowed_entries_are_refused() -> None:
    with pytest.raises(ConfigError, match="allowed_origins"):
        HttpSettings().with_overrides(allowed_origins=["https://agent.example.com/path"])


def test_cli_flags_override_the_file(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, '[http]\nport = 9000\nhost = "localhost"\n'), env={"PW": "p"})
    assert config.http.with_overrides(port=0, host=None).port == 0
    assert config.http.with_overrides(port=None).host == "localhost"


def test_regression_a_token_file_others_can_read_is_refused_not_only_warned_about(tmp_path: Path) -> None:
    """The one rule for secret files: the bearer token's file is refused as a password file is."""
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    token_file.chmod(0o644)
    with pytest.raises(ConfigError) as caught:
        HttpSettings(token_file=token_file).resolve_token()
    message = str(caught.value)
    assert message.startswith(f"token_file in [http]: {token_file} must be yours alone, but its mode")
    assert message.endswith(f"chmod 600 {token_file}") and TOKEN not in message
    token_file.chmod(0o600)
    assert HttpSettings(token_file=token_file).resolve_token() == TOKEN


def test_a_config_file_binding_beyond_loopback_without_a_token_does_not_load(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, '[http]\nhost = "0.0.0.0"\n'), env={"PW": "p"})
    assert str(caught.value).startswith("invalid configuration: http: host 0.0.0.0 is not a loopback address")
    # The default token variable counts as a token; allowed_hosts is then what is missing.
    with pytest.raises(ConfigError, match="allowed_hosts"):
        load_config(write(tmp_path, '[http]\nhost = "0.0.0.0"\n'), env={"PW": "p", HTTP_TOKEN_ENV: TOKEN})
    config = load_config(
        write(tmp_path, '[http]\nhost = "0.0.0.0"\nallowed_hosts = ["mail.example.com"]\n'),
        env={"PW": "p", HTTP_TOKEN_ENV: TOKEN},
    )
    assert config.http.resolve_token({HTTP_TOKEN_ENV: TOKEN}) == TOKEN


async def _preflight(app: Any, origin: str) -> dict[bytes, bytes]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    headers = [(b"origin", origin.encode()), (b"access-control-request-method", b"POST")]
    await app({"type": "http", "method": "OPTIONS", "path": "/mcp", "headers": headers}, receive, send)
    return dict(sent[0]["headers"])


@pytest.mark.anyio
async def test_cors_answers_only_the_configured_origins_any_port_where_asked() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("a preflight never reaches the application")

    assert with_cors(app, HttpSettings()) is app
    cors = with_cors(app, HttpSettings(allowed_origins=["https://agent.example.com", "http://dev.example:*"]))
    for origin in ("https://agent.example.com", "http://dev.example:5173"):
        assert (await _preflight(cors, origin)).get(b"access-control-allow-origin") == origin.encode()
    for origin in ("https://agent.example.com:8443", "http://dev.example", "http://dev.example.evil:80"):
        assert b"access-control-allow-origin" not in await _preflight(cors, origin)

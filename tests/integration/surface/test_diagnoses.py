"""Diagnoses a newcomer meets first: each names the likely cause and the exact setting to change.

Regression tests for issue 8 ("a newcomer's first ten minutes"), against the real Dovecot, through the
SDK's MCP client in process and through the `mail-imap-mcp` command as a user runs it.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from mail_imap_mcp.config import load_config
from mail_imap_mcp.credentials.logins import credentials_for
from mail_imap_mcp.envelope import ToolFailure
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.providers import GENERIC_LOGIN_HINT, login_hint, provider_for
from tests.support import accounts
from tests.support.accounts import PASSWORD_ENV, account_settings, config_toml
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import AccountFactory, make_config, open_client
from tests.support.patience import patient
from tests.support.servers.dovecot import Dovecot
from tests.support.translate import as_tool_failure

SERVER = str(Path(sys.executable).parent / "mail-imap-mcp")


async def first_failure(config: Any, code: str) -> dict[str, Any]:
    errors: list[dict[str, Any]] = []
    async for mcp in open_client(config):  # run to its end: the generator closes the client
        errors.append((await mcp.fail("imap_list_mailboxes", {}, code))["error"])
    (error,) = errors
    return error


def env_account(dovecot: Dovecot, user: str, **variables: str) -> dict[str, str]:
    return {**accounts.env_account(dovecot, user, **variables), "HOME": "/nonexistent"}


@pytest.mark.anyio
async def test_regression_starttls_against_an_implicit_tls_port_says_to_use_tls(
    dovecot: Dovecot, user: str, account: AccountFactory
) -> None:
    # Issue 8: this waited and said "[timeout] ... timed out after 10s", naming no cause.
    config = make_config(
        {"default": account(user, security="starttls", port=dovecot.tls_port, connect_timeout_s=1)}
    )
    error = await first_failure(config, "unavailable")
    # The cause named, not the connect timeout's end (which the error would say; how fast is bench's).
    assert "implicit TLS" in error["message"] and "timed out" not in error["message"]
    assert 'security = "tls" in [accounts.default]' in error["message"]
    assert error["retryable"] is False


@pytest.mark.anyio
async def test_regression_tls_against_a_plaintext_port_says_it_answered_without_tls(
    dovecot: Dovecot, user: str, account: AccountFactory
) -> None:
    # Issue 8: this said "Cannot reach the IMAP server ... (SSLError)" although the server was reached.
    config = make_config({"default": account(user, security="tls", port=dovecot.plain_port)})
    error = await first_failure(config, "unavailable")
    assert "answered without TLS" in error["message"]
    assert 'security = "starttls" in [accounts.default]' in error["message"]
    assert "port = 993 in [accounts.default]" in error["message"]
    assert "Cannot reach" not in error["message"]


@pytest.mark.anyio
async def test_regression_env_account_mismatches_name_the_environment_variables(
    dovecot: Dovecot, user: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = env_account(dovecot, user, MAIL_IMAP_DEFAULT_PORT=str(dovecot.plain_port))
    monkeypatch.setenv("MAIL_IMAP_DEFAULT_PASS", dovecot.password)
    error = await first_failure(load_config(None, env), "unavailable")
    assert "MAIL_IMAP_DEFAULT_SECURE=false" in error["message"]
    assert "MAIL_IMAP_DEFAULT_PORT=993" in error["message"]

    env = env_account(
        dovecot, user, MAIL_IMAP_DEFAULT_SECURE="false", MAIL_IMAP_DEFAULT_PORT=str(dovecot.tls_port)
    )
    loaded = load_config(None, env)
    # No variable sets connect_timeout_s; a copy keeps how the account was configured.
    impatient = loaded.accounts["default"].model_copy(update={"connect_timeout_s": 1})
    error = await first_failure(loaded.model_copy(update={"accounts": {"default": impatient}}), "unavailable")
    assert "MAIL_IMAP_DEFAULT_SECURE=true" in error["message"]


@pytest.mark.anyio
async def test_regression_env_account_with_an_untrusted_certificate_is_told_its_ca_file_variable(
    dovecot: Dovecot, user: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 8: an env-only account was told to "set ca_file for this account".
    monkeypatch.setenv("MAIL_IMAP_DEFAULT_PASS", dovecot.password)
    config = load_config(None, env_account(dovecot, user, MAIL_IMAP_DEFAULT_CA_FILE=""))
    error = await first_failure(config, "unavailable")
    assert "set MAIL_IMAP_DEFAULT_CA_FILE to the certificate" in error["message"]


@pytest.mark.anyio
async def test_file_account_with_an_untrusted_certificate_is_told_its_ca_file_key(
    user: str, account: AccountFactory
) -> None:
    error = await first_failure(make_config({"default": account(user, ca_file=None)}), "unavailable")
    assert "set ca_file in [accounts.default] to the certificate" in error["message"]


@pytest.mark.anyio
async def test_refused_connection_names_the_port_setting(user: str, account: AccountFactory) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    error = await first_failure(make_config({"default": account(user, port=closed_port)}), "unavailable")
    assert "Nothing accepts connections" in error["message"]
    assert "port in [accounts.default]" in error["message"]


def run_check(config_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SERVER, "check", "--config", str(config_path)],
        capture_output=True,
        text=True,
        timeout=patient(60),
        env={"PATH": os.environ["PATH"], "HOME": os.environ["HOME"], **env},
        check=False,
    )


class SilentListener:
    """A TCP port that accepts connections and never says a word (nor speaks TLS)."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self._held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                self._held.append(self._sock.accept()[0])

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the accept()
        self._sock.close()
        self._thread.join(timeout=patient(5))
        for held in self._held:
            held.close()


class SlowGreeting:
    """A proxy to ``upstream`` that holds back what the server says for ``delay_s`` after each connect:
    an IMAP server slow to greet."""

    def __init__(self, upstream: tuple[str, int], delay_s: float) -> None:
        self._upstream, self._delay_s = upstream, delay_s
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                client = self._sock.accept()[0]
                server = socket.create_connection(self._upstream)
                for src, dst, delay in ((client, server, 0.0), (server, client, self._delay_s)):
                    pump = threading.Thread(target=self._pump, args=(src, dst, delay), daemon=True)
                    pump.start()
                    self._threads.append(pump)

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket, delay_s: float) -> None:
        time.sleep(delay_s)
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the accept()
        self._sock.close()
        for thread in self._threads:
            thread.join(timeout=patient(5))


def test_regression_check_names_starttls_on_an_implicit_tls_port_within_3s(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    # Issue 20: check waited the whole connect timeout (12 s measured) before saying so.
    settings = account_settings(
        dovecot, user, security="starttls", port=dovecot.tls_port, connect_timeout_s=10
    )
    # As the check command makes it: its failures in the registry's words.
    account = make_config({"default": settings}).accounts["default"]
    connection = AccountConnection(
        "default", account, credentials=credentials_for("default", account), translate=as_tool_failure
    )
    with pytest.raises(ToolFailure) as failed:
        connection.run(lambda session: None, retry=False)
    # Ended by the greeting's 2 s and the TLS probe, not the 10 s connect timeout: the error says which.
    assert failed.value.code == "unavailable"
    assert "no IMAP greeting came within 2s and the port answered a TLS handshake" in failed.value.message

    path = tmp_path / "config.toml"
    path.write_text(config_toml({"default": settings}))
    done = run_check(path, {PASSWORD_ENV: dovecot.password})
    assert done.returncode == 1
    (line,) = done.stdout.splitlines()
    assert "[unavailable]" in line
    assert "no IMAP greeting came within 2s and the port answered a TLS handshake" in line
    assert 'not security = "starttls" in [accounts.default]' in line
    assert 'Set security = "tls" in [accounts.default]' in line


@pytest.mark.anyio
async def test_a_server_that_greets_after_2_5s_still_connects_with_starttls(
    dovecot: Dovecot, user: str, account: AccountFactory
) -> None:
    proxy = SlowGreeting((dovecot.host, dovecot.plain_port), 2.5)
    try:
        config = make_config(
            {"default": account(user, security="starttls", port=proxy.port, connect_timeout_s=10)}
        )
        async for mcp in open_client(config):
            data = await mcp.ok("imap_list_mailboxes", {})
            assert "INBOX" in [box["name"] for box in data["mailboxes"]]
    finally:
        proxy.close()


@pytest.mark.anyio
async def test_a_port_that_never_greets_nor_speaks_tls_gets_the_greeting_timeout(
    user: str, account: AccountFactory
) -> None:
    listener = SilentListener()
    try:
        config = make_config(
            {"default": account(user, security="starttls", port=listener.port, connect_timeout_s=4)}
        )
        started = time.monotonic()
        error = await first_failure(config, "unavailable")
        assert time.monotonic() - started >= 3.5  # the whole connect timeout: no TLS answer cut it short
        assert "no IMAP greeting came within 4s" in error["message"]
    finally:
        listener.close()


def test_regression_check_with_a_wrong_password_hints_at_app_passwords_without_noise(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    # Issue 8: a stray "INFO imapclient ... Connection closed" line, the circular hint "(mail-imap-mcp
    # check diagnoses it)" printed by check itself, and no word about app passwords.
    path = tmp_path / "config.toml"
    path.write_text(config_toml({"default": account_settings(dovecot, user, password_env="WRONG_PW")}))
    done = run_check(path, {"WRONG_PW": "not-the-password"})
    assert done.returncode == 1
    assert done.stderr == ""
    (line,) = done.stdout.splitlines()
    assert line.startswith("FAIL default:") and "[auth_failed]" in line
    assert "app password" in line
    assert "password_env in [accounts.default]" in line
    assert "check diagnoses" not in line
    assert "not-the-password" not in line


def test_check_of_an_env_account_names_its_variables(dovecot: Dovecot, user: str) -> None:
    env = env_account(dovecot, user, MAIL_IMAP_DEFAULT_PASS="not-the-password")
    done = subprocess.run(
        [SERVER, "check"],
        capture_output=True,
        text=True,
        timeout=patient(60),
        env={"PATH": os.environ["PATH"], **env},
    )
    assert done.returncode == 1
    assert (
        '"Username (optional)" (MAIL_IMAP_DEFAULT_USER) and "Password or app password" (MAIL_IMAP_DEFAULT_PASS)'
        in done.stdout
    )
    assert done.stderr == ""


def test_providers_get_their_own_login_hints() -> None:
    assert provider_for("imap.gmail.com") is not None
    assert "app password" in login_hint("imap.gmail.com")
    assert "app-specific password" in login_hint("IMAP.mail.me.com.")
    assert "OAuth2" in login_hint("outlook.office365.com")
    assert login_hint("mail.example.org") == GENERIC_LOGIN_HINT
    assert provider_for("evilgmail.com") is None


@pytest.mark.anyio
async def test_regression_no_subcommand_serves_over_stdio(
    dovecot: Dovecot, user: str, tmp_path: Path
) -> None:
    # Issue 8: a client config without "args": ["serve"] failed with an argparse error (exit 2).
    path = tmp_path / "config.toml"
    path.write_text(config_toml({"default": account_settings(dovecot, user)}))
    for args in ([], ["--config", str(path)]):
        env = {PASSWORD_ENV: dovecot.password, "PATH": os.environ["PATH"], "HOME": str(tmp_path)}
        if not args:
            env[PASSWORD_ENV] = ""
            env.update(env_account(dovecot, user))
        params = StdioServerParameters(command=SERVER, args=args, env=env)
        async with Client(params) as client:
            data = await EnvelopeClient(client).ok("imap_list_mailboxes")
            assert data["mailboxes"][0]["name"] == "INBOX"


def test_config_example_prints_a_valid_commented_config(tmp_path: Path) -> None:
    done = subprocess.run(
        [SERVER, "config-example"], capture_output=True, text=True, timeout=patient(20), check=True
    )
    assert "[accounts." in done.stdout and "# " in done.stdout
    # The index engines' settings are shown too (issue 56 item 18), each engine and the database's keys.
    assert tomllib.loads(done.stdout)["index"] == {"index_engine": "sqlite"}
    assert all(f'"{engine}"' in done.stdout for engine in ("sqlite+tantivy", "postgresql"))
    assert "# index_url = " in done.stdout and "# index_password_env = " in done.stdout
    path = tmp_path / "config.toml"
    path.write_text(done.stdout)
    assert load_config(path, env={}).accounts


def test_no_accounts_message_points_at_what_the_package_contains(tmp_path: Path) -> None:
    done = subprocess.run(
        [SERVER, "check"],
        capture_output=True,
        text=True,
        timeout=patient(20),
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)},
        check=False,
    )
    assert done.returncode == 2
    assert "mail-imap-mcp config-example" in done.stderr
    assert "config.example.toml" not in done.stderr


def test_check_names_the_forms_field_of_an_account_it_cannot_use(tmp_path: Path) -> None:
    # Issue 47 item 6: the wrong field is said as a call says it (the server starts all the same).
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "MAIL_IMAP_DEFAULT_ADDRESSES": "you@example.org",
        "MAIL_IMAP_DEFAULT_HOST": "imap.example.org",
        "MAIL_IMAP_DEFAULT_PASS": "secret-value",
        "MAIL_IMAP_DEFAULT_PORT": "imaps",
    }
    done = subprocess.run(
        [SERVER, "check"], capture_output=True, text=True, timeout=patient(20), env=env, check=False
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith(
        "FAIL default: not usable as you@example.org: [unavailable] Account 'default' cannot be used as set "
        'up: "IMAP port (optional)" (MAIL_IMAP_DEFAULT_PORT) is not a port number from 1 to 65535'
    )
    assert "secret-value" not in done.stdout + done.stderr


def test_regression_a_file_account_sending_without_an_smtp_server_checks_and_serves(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    """Issue 56 item 9: send_enabled with no SMTP server known for the account's domain refused the whole
    configuration at start; the account now logs in and reads, and check says what sending lacks."""
    path = tmp_path / "config.toml"
    settings = account_settings(
        dovecot, user, addresses=[f"{user}@example.org"], send_enabled=True, write_enabled=True
    )
    settings["allowed_recipients"] = ["@example.org"]
    path.write_text(config_toml({"default": settings}))
    done = run_check(path, {PASSWORD_ENV: dovecot.password})
    assert done.returncode == 0, done.stdout + done.stderr
    ok, note = done.stdout.splitlines()
    assert ok.startswith("ok   default:")
    assert (
        note
        == "note    default: sending is on but no SMTP server is known: set host in [accounts.default.smtp]"
    )

"""The server as a user runs it: `mail-imap-mcp serve` over stdio, driven by the SDK's client."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.support.accounts import PASSWORD_ENV, account_settings, config_toml, env_account
from tests.support.clients.envelope_client import INITIALIZE_REQUEST, EnvelopeClient
from tests.support.patience import patient
from tests.support.servers.dovecot import Dovecot

pytestmark = pytest.mark.anyio

SERVER = str(Path(sys.executable).parent / "mail-imap-mcp")


def write_config(tmp_path: Path, dovecot: Dovecot, user: str, **more: dict[str, object]) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(config_toml({"default": account_settings(dovecot, user), **more}))
    return path


async def test_stdio_server_answers_tools_exactly_as_the_readme_launches_it(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    config = write_config(tmp_path, dovecot, user)
    params = StdioServerParameters(
        command=SERVER,
        args=["serve", "--config", str(config)],
        env={PASSWORD_ENV: dovecot.password, "PATH": os.environ["PATH"]},
    )
    async with Client(params) as client:
        mcp = EnvelopeClient(client)
        accounts = await mcp.ok("imap_list_accounts")
        assert accounts["accounts"][0]["username"] == user
        boxes = await mcp.ok("imap_list_mailboxes")
        assert boxes["mailboxes"][0]["name"] == "INBOX"
        failure = await mcp.fail("imap_list_mailboxes", {"account_id": 5}, "invalid_input")
        assert failure["error"]["details"]["parameter"] == "account_id"


def _spawn(config: Path, dovecot: Dovecot) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [SERVER, "serve", "--config", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, PASSWORD_ENV: dovecot.password},
    )


def _initialize(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(INITIALIZE_REQUEST).encode() + b"\n")
    proc.stdin.flush()
    reply = json.loads(proc.stdout.readline())
    assert reply["id"] == 1 and "result" in reply


def test_closing_stdin_ends_the_process_within_a_second(tmp_path: Path, dovecot: Dovecot, user: str) -> None:
    proc = _spawn(write_config(tmp_path, dovecot, user), dovecot)
    try:
        _initialize(proc)
        assert proc.stdin is not None
        started = time.monotonic()
        proc.stdin.close()
        proc.wait(timeout=patient(5))
        assert time.monotonic() - started < 1.5
        assert proc.returncode == 0
    finally:
        proc.kill()


def test_sigterm_ends_the_process_within_a_second(tmp_path: Path, dovecot: Dovecot, user: str) -> None:
    proc = _spawn(write_config(tmp_path, dovecot, user), dovecot)
    try:
        _initialize(proc)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=patient(5))
        assert time.monotonic() - started < 1.5
    finally:
        proc.kill()


def test_invalid_config_fails_at_startup_with_one_clear_line(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[accounts.x]\nhost = "h"\nusername = "u"\npassword = "topsecret"\nport = 0\n')
    done = subprocess.run(
        [SERVER, "serve", "--config", str(path)], capture_output=True, timeout=patient(20), check=False
    )
    assert done.returncode == 2
    assert b"accounts.x.port" in done.stderr
    assert b"topsecret" not in done.stderr + done.stdout


def test_check_reports_each_account_and_fails_when_one_fails(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    broken = account_settings(dovecot, user, password_env=None, password="wrong-password-xyz")
    path = write_config(tmp_path, dovecot, user, broken=broken)
    env = {**os.environ, PASSWORD_ENV: dovecot.password}
    done = subprocess.run(
        [SERVER, "check", "--config", str(path)],
        capture_output=True,
        timeout=patient(60),
        env=env,
        check=False,
    )
    out = done.stdout.decode()
    assert done.returncode == 1, out
    assert "ok   default" in out
    assert "FAIL broken" in out and "auth_failed" in out
    assert "warning broken: password is stored inline" in out
    # The test logins are bare names: check says how to name the account's own addresses.
    assert "note    default: the username is not an email address; set addresses in [accounts.default]" in out
    assert "wrong-password-xyz" not in out + done.stderr.decode()


def test_python_dash_m_is_the_same_cli() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mail_imap_mcp", "--help"],
        capture_output=True,
        timeout=patient(20),
        check=False,
    )
    assert done.returncode == 0
    assert b"serve" in done.stdout and b"check" in done.stdout
    # Sending exists: --help no longer calls the server read access alone.
    assert b"read access" not in done.stdout and b"sending" in done.stdout


async def test_stdio_server_configured_only_by_the_readme_env_block(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    # The Claude Desktop snippet of the README: `serve` with MAIL_IMAP_DEFAULT_* and no config file
    # (plus _CA_FILE, since this Dovecot's certificate is self-signed).
    params = StdioServerParameters(
        command=SERVER,
        args=["serve"],
        env={**env_account(dovecot, user), "HOME": str(tmp_path), "PATH": os.environ["PATH"]},
    )
    async with Client(params) as client:
        mcp = EnvelopeClient(client)
        (account,) = (await mcp.ok("imap_list_accounts"))["accounts"]
        assert (account["account_id"], account["security"]) == ("default", "tls")
        assert (await mcp.ok("imap_search_messages"))["total"] == 0

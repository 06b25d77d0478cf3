"""``mail-imap-mcp status`` and ``logout`` as a user runs them, for what needs no provider (issue 56 item
19): ``status`` says how every account logs in, as ``check`` lists every account, and ``logout`` of an
account whose provider offers no revocation says so (the provider was not asked); the sign-in itself,
revoked at a provider that offers it, is tests/integration/sign_in/test_login_command.py's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.patience import patient

SERVER = str(Path(sys.executable).parent / "mail-imap-mcp")


def run(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
    }
    return subprocess.run(
        [SERVER, *args], capture_output=True, text=True, env=env, timeout=patient(60), check=False
    )


def write_config(home: Path) -> tuple[Path, Path]:
    """A config of a password account, a token-command account and a Microsoft sign-in whose refresh
    token is in a file of the user's alone (no keychain here); the config and that file."""
    token = home / "work.token"
    token.write_text("a-refresh-token\n")
    token.chmod(0o600)
    config = home / "config.toml"
    config.write_text(
        f"""
[accounts.home]
host = "imap.example.org"
username = "me@example.org"
password_env = "HOME_PASSWORD"

[accounts.helper]
host = "imap.example.net"
username = "me@example.net"
auth = "xoauth2"
oauth2_token_command = ["pizauth", "show", "helper"]

[accounts.work]
host = "outlook.office365.com"
username = "me@contoso.example"
auth = "xoauth2"
oauth2_provider = "microsoft"
oauth2_client_id = "00000000-1111-2222-3333-444444444444"
oauth2_token_file = "{token}"
"""
    )
    return config, token


def test_regression_status_covers_every_account_as_check_does(tmp_path: Path) -> None:
    # It listed sign-in accounts only, and ended with exit 1 where there was none.
    config, _ = write_config(tmp_path)
    done = run("status", "--config", str(config), home=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["helper", "home", "work"]
    assert (
        lines[0]
        == "helper: logs in with a token from oauth2_token_command (your helper keeps its sign-in); none kept here"
    )
    assert lines[1] == (
        "home: logs in with a password from the environment variable HOME_PASSWORD (password_env); no sign-in to keep"
    )
    assert lines[2].startswith(
        "work: signed in as me@contoso.example (the configured username) with microsoft"
    )
    assert "a-refresh-token" not in done.stdout + done.stderr
    only = run("status", "home", "--config", str(config), home=tmp_path)
    assert only.returncode == 0 and only.stdout.splitlines() == [lines[1]]
    unknown = run("status", "nobody", "--config", str(config), home=tmp_path)
    assert unknown.returncode == 1 and "no account 'nobody'" in unknown.stderr


def test_regression_logout_says_the_provider_offers_no_revocation(tmp_path: Path) -> None:
    # It said "the provider was not asked or did not revoke it", which left the user guessing.
    config, token = write_config(tmp_path)
    done = run("logout", "work", "--config", str(config), home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (
        "microsoft offers no revocation (RFC 7009), so the provider honours it until it lapses" in done.stderr
    )
    assert not token.exists()
    assert "work: not signed in" in run("status", "work", "--config", str(config), home=tmp_path).stdout

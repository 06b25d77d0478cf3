"""The command ``mail-imap-mcp setup`` prints for Claude Code, run by the real Claude Code CLI (pinned in
tests/node/claude-code/package-lock.json): ``claude mcp add`` exactly as printed, the password typed where the
placeholder stands, then ``claude mcp get``, which starts the server with the config setup wrote and reports
whether it connected.

scripts/test installs the CLI into .cache/claude-code/ (``ensure_claude_cli``); the test skips only when node
itself is missing (then nothing of npm is installed). HOME is a temporary directory: the CLI writes its config
there, and Dovecot is this test's own.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from mail_imap_mcp.cli.setup_clients import PASSWORD_PLACEHOLDER
from tests.support.patience import patient
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.secret_service import SecretService
from tests.support.shared.setup import NO_KEYCHAIN, environment, script_setup

ROOT = Path(__file__).resolve().parents[3]
CLAUDE = ROOT / ".cache" / "claude-code" / "node_modules" / ".bin" / "claude"


def pinned_cli_version() -> str:
    lock = json.loads((ROOT / "tests" / "node" / "claude-code" / "package-lock.json").read_text())
    return str(lock["packages"]["node_modules/@anthropic-ai/claude-code"]["version"])


def claude(home: Path, keychain: SecretService | str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLAUDE), *args],
        env=environment(home, keychain),
        capture_output=True,
        text=True,
        timeout=patient(120),
        check=False,
    )


def printed_claude_command(setup_output: str) -> list[str]:
    (line,) = [line.strip() for line in setup_output.splitlines() if line.strip().startswith("claude mcp ")]
    return shlex.split(line)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.parametrize(
    ("where", "flags"),
    [("keychain", ()), ("password-file", ()), ("password-env", ("--password-env",))],
)
def test_claude_code_accepts_the_printed_claude_mcp_add_and_connects_to_the_server(
    tmp_path: Path,
    dovecot: Dovecot,
    user: str,
    where: str,
    flags: tuple[str, ...],
    request: pytest.FixtureRequest,
) -> None:
    assert CLAUDE.is_file(), (
        "Claude Code is not installed: run scripts/test (npm ci into .cache/claude-code/)"
    )
    backend: SecretService | str = (
        request.getfixturevalue("secret_service") if where == "keychain" else NO_KEYCHAIN
    )
    home = tmp_path / "home"
    home.mkdir()
    assert claude(home, backend, "--version").stdout.startswith(pinned_cli_version())
    config = home / "mail.toml"
    done = script_setup(home, backend, dovecot, user, "--config", str(config), *flags)
    assert done.returncode == 0, done.stdout + done.stderr
    command = printed_claude_command(done.stdout)
    assert command[:3] == ["claude", "mcp", "add"]
    # What the user does: run it as printed, their password typed over the placeholder.
    typed = [part.replace(PASSWORD_PLACEHOLDER, dovecot.password) for part in command[1:]]
    added = claude(home, backend, *typed)
    assert added.returncode == 0, added.stdout + added.stderr
    assert "Added stdio MCP server mail" in added.stdout
    got = claude(home, backend, "mcp", "get", "mail")
    assert got.returncode == 0, got.stdout + got.stderr
    assert re.search(r"^  Status: \S+ Connected$", got.stdout, re.MULTILINE), got.stdout + got.stderr
    assert "Scope: User config" in got.stdout


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_regression_a_second_account_says_there_is_nothing_to_add_where_claude_code_has_the_server(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    """Issue 56 item 17: setup of a second account reprinted `claude mcp add`, which Claude Code refuses
    ("already exists") where the first one's ran; the server it starts serves the new account too."""
    assert CLAUDE.is_file(), (
        "Claude Code is not installed: run scripts/test (npm ci into .cache/claude-code/)"
    )
    home = tmp_path / "home"
    home.mkdir()
    config = home / "mail.toml"
    first = script_setup(home, NO_KEYCHAIN, dovecot, user, "--config", str(config))
    assert first.returncode == 0 and "Nothing to add" not in first.stdout, first.stdout + first.stderr
    assert claude(home, NO_KEYCHAIN, *printed_claude_command(first.stdout)[1:]).returncode == 0
    second = script_setup(home, NO_KEYCHAIN, dovecot, user, "--config", str(config), "--account", "work")
    assert second.returncode == 0, second.stdout + second.stderr
    said = second.stdout.split("Nothing to add where a client already starts the server with ", 1)[1]
    assert said.startswith(f"{config} (for 'default'): it serves every account there, 'work' included")
    again = claude(home, NO_KEYCHAIN, *printed_claude_command(second.stdout)[1:])
    assert again.returncode != 0 and "already exists" in again.stdout + again.stderr  # as setup said
    got = claude(home, NO_KEYCHAIN, "mcp", "get", "mail")
    assert re.search(r"^  Status: \S+ Connected$", got.stdout, re.MULTILINE), got.stdout + got.stderr

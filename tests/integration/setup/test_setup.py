"""``mail-imap-mcp setup`` as a person runs it: in a pseudo-terminal, answering its questions (expect-style),
against Dovecot; and as a script runs it, with flags.

The keychain is a real Secret Service (GNOME Keyring on a session bus of its own: the ``secret_service``
fixture, tests/support/servers/secret_service.py), found as a desktop user's; a machine without one is keyring's
``fail`` backend, chosen through keyring's own configuration (``PYTHON_KEYRING_BACKEND``). keyrings.alt's
PlaintextKeyring appears only where it is proved refused.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.run.readme import readme_block
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.secret_service import SECRET_SERVICE_BACKEND, SecretService
from tests.support.shared.setup import (
    NO_KEYCHAIN,
    SENDING_QUESTION,
    SERVER,
    Terminal,
    check,
    environment,
    files_under,
    run_server,
    script_setup,
    user_home,
)

#: No Secret Service and no backend named: keyring's own choice, keyrings.alt's PlaintextKeyring here.
KEYRINGS_OWN_CHOICE = ""


def test_setup_in_a_terminal_proposes_logs_in_keeps_the_password_in_the_keychain(
    tmp_path: Path, dovecot: Dovecot, user: str, secret_service: SecretService
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    config = home / ".config" / "mail-imap-mcp" / "config.toml"
    password = dovecot.password
    # The README's command, with the one flag this Dovecot needs: its certificate is self-signed.
    assert readme_block("setup").strip() == "mail-imap-mcp setup"
    term = Terminal([SERVER, "setup", "--ca-file", str(dovecot.ca_file)], environment(home, secret_service))
    term.expect(r"Email address: ")
    term.send("someone@gmail.com")
    # The provider's server, port and security are proposed, with its advice on app passwords.
    term.expect(r"Gmail: .*app password")
    term.expect(r"IMAP server \[imap\.gmail\.com\]: ")
    term.send(dovecot.host)  # this test's server instead of the proposal
    term.expect(r"Security \(tls, starttls, plain\) \[tls\]: ")
    term.send("")
    term.expect(r"Port \[993\]: ")
    term.send(str(dovecot.tls_port))
    term.expect(r"Username \[someone@gmail\.com\]: ")
    term.send(user)
    # Gmail offers the built-in sign-in (tests/integration/setup/test_setup_sign_in.py); an app password here.
    term.expect(r"Log in with: sign-in \(in your browser, built in\) or password \[sign-in\]: ")
    term.send("password")
    # The password right after the username, where a person expects it (typed ahead, it is not shown).
    term.expect(r"Password or app password \(not shown\): ")
    term.send(password)
    term.expect(SENDING_QUESTION)
    term.send("")  # the proposal: no
    term.expect(r"ok: logged in, \d+ mailbox\(es\)")
    term.expect(
        rf"The password is in the keychain \({re.escape(SECRET_SERVICE_BACKEND)}\), .*no file holds it"
    )
    term.expect(r"Wrote \[accounts\.default\] to .*config\.toml \(readable by you only\)")
    term.expect(r"claude mcp add --scope user mail -- ")
    assert term.wait() == 0
    # Not echoed: the password is nowhere on the screen.
    assert password not in term.transcript
    assert config.stat().st_mode & 0o777 == 0o600
    assert config.parent.stat().st_mode & 0o777 == 0o700
    text = config.read_text()
    assert 'password_keyring = "mail-imap-mcp"' in text and f'username = "{user}"' in text
    # No file setup wrote holds the password; GNOME Keyring keeps it in its login keyring (encrypted).
    assert not [
        path for path in files_under(home, home / "nothing") if password in path.read_text(errors="replace")
    ]
    assert (secret_service.home / ".local" / "share" / "keyrings" / "login.keyring").is_file()
    # The server reads it back from the keychain: `check` logs in with the config setup wrote.
    done = run_server(["check", "--config", str(config)], environment(home, secret_service))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith(
        f"ok   default: {dovecot.host}:{dovecot.tls_port} (tls) as {user}: logged in"
    )


def test_a_wrong_password_gets_the_diagnosis_and_nothing_is_written(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    flags = ["--address", f"{user}@example.org", "--host", dovecot.host, "--port", str(dovecot.tls_port)]
    flags += ["--username", user, "--ca-file", str(dovecot.ca_file), "--password-stdin"]
    # A script stops at the first failure (a person is asked again: test_setup_answers.py).
    done = run_server(["setup", *flags], environment(home, NO_KEYCHAIN), "not-the-password\n")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the login failed, so nothing was written: [auth_failed]" in done.stderr
    assert files_under(home, home / "nothing") == []


@pytest.mark.parametrize(
    ("keychain", "named"),
    [(NO_KEYCHAIN, NO_KEYCHAIN), (KEYRINGS_OWN_CHOICE, "keyrings.alt.file.PlaintextKeyring")],
    ids=["no-keychain", "plaintext-keyring"],
)
def test_regression_without_a_keychain_the_password_is_in_a_file_of_the_users_alone_and_setup_says_where(
    tmp_path: Path, dovecot: Dovecot, user: str, keychain: str, named: str
) -> None:
    """setup said "The password is in no file" while the clients' snippets put it in their config files
    in clear, and called keyrings.alt's base64 file "the keychain"."""
    home, config = user_home(tmp_path)
    done = script_setup(home, keychain, dovecot, user, "--config", str(config), "--account", "work")
    assert done.returncode == 0, done.stdout + done.stderr
    secret = home / "work.password"
    assert (
        f"The password is in {secret}, readable by you only (no keychain here: keyring offers only {named}, "
        "which keeps no secret safe); the config names it (password_file)"
    ) in done.stdout
    # Issue 56 item 17: said once, without advising password_file, the very setting it has just used.
    assert done.stdout.count("keychain") == 1 and "use password_file" not in done.stdout
    assert "no MCP client's config holds it" in done.stdout
    assert secret.read_text() == dovecot.password + "\n" and secret.stat().st_mode & 0o777 == 0o600
    assert not (home / "keyring-data").exists()  # keyrings.alt wrote nothing
    text = config.read_text()
    assert f'password_file = "{secret}"' in text and dovecot.password not in text
    assert dovecot.password not in done.stdout + done.stderr
    # No snippet sets a password: every client starts the server with the config alone.
    assert "claude mcp add --scope user mail -- " in done.stdout and "-e MAIL_PASSWORD" not in done.stdout
    assert '"env"' not in done.stdout and "inputs" not in done.stdout
    ok = check(config, environment(home, NO_KEYCHAIN))
    assert ok.returncode == 0 and ok.stdout.startswith("ok   work: "), ok.stdout + ok.stderr
    # The file opened to others is refused, naming the setting and the fix.
    secret.chmod(0o644)
    refused = check(config, environment(home, NO_KEYCHAIN))
    assert refused.returncode == 1
    assert f"password_file in [accounts.work]: {secret} must be yours alone" in refused.stdout
    assert f"chmod 600 {secret}" in refused.stdout


def test_password_env_says_which_client_keeps_the_password_where(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    home, config = user_home(tmp_path)
    flags = ("--config", str(config), "--account", "work", "--password-env")
    done = script_setup(home, NO_KEYCHAIN, dovecot, user, *flags)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "The password is in no file of this server's: the config reads it from the environment variable "
        "MAIL_PASSWORD_WORK, which each MCP client sets. VS Code asks for it in a password prompt and keeps "
        "it in its own secret storage; Claude Desktop keeps it in clear in "
    ) in done.stdout
    assert "Cursor in ~/.cursor/mcp.json and Claude Code in ~/.claude.json" in done.stdout
    text = config.read_text()
    assert 'password_env = "MAIL_PASSWORD_WORK"' in text and dovecot.password not in text
    assert dovecot.password not in done.stdout + done.stderr
    assert not [path for path in files_under(home, home / "nothing") if path != config]
    # The snippets name the variable with a placeholder; VS Code asks for it in a password prompt.
    assert "claude mcp add --scope user mail -e MAIL_PASSWORD_WORK='<your password>' -- " in done.stdout
    vscode = json.loads(done.stdout.split("'MCP: Open User Configuration'):\n", 1)[1].split("\n\n", 1)[0])
    assert vscode["inputs"][0]["password"] is True
    assert vscode["servers"]["mail"]["env"] == {"MAIL_PASSWORD_WORK": "${input:mail-imap-password}"}
    # The server starts with the variable set, as the client's snippet sets it.
    env = {**environment(home, NO_KEYCHAIN), "MAIL_PASSWORD_WORK": dovecot.password}
    ok = check(config, env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    # A second account goes beside the first; the same id again is refused, naming the file.
    again = script_setup(home, NO_KEYCHAIN, dovecot, user, *flags)
    assert again.returncode == 2
    assert f"[accounts.work] is already in {config}" in again.stderr


def test_dry_run_logs_in_and_writes_nothing(
    tmp_path: Path, dovecot: Dovecot, user: str, secret_service: SecretService
) -> None:
    home, config = user_home(tmp_path)
    done = script_setup(home, secret_service, dovecot, user, "--config", str(config), "--dry-run")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok: logged in" in done.stdout and "--dry-run: nothing written" in done.stdout
    assert (
        f"--dry-run: nothing stored. The password is in the keychain ({SECRET_SERVICE_BACKEND})"
        in done.stdout
    )
    assert 'password_keyring = "mail-imap-mcp"' in done.stdout
    # Without a keychain it says the file the real run writes.
    done = script_setup(home, NO_KEYCHAIN, dovecot, user, "--config", str(config), "--dry-run")
    assert (
        f"--dry-run: nothing stored. The password is in {home / 'default.password'}, readable by you only"
        in done.stdout
    )
    assert f'password_file = "{home / "default.password"}"' in done.stdout
    assert files_under(home, home / "nothing") == []


def test_a_script_without_the_address_is_told_which_flag_is_missing(tmp_path: Path) -> None:
    done = run_server(
        ["setup", "--password-stdin", "--config", str(tmp_path / "c.toml")],
        environment(tmp_path, NO_KEYCHAIN),
        "pw\n",
    )
    assert done.returncode == 2
    assert done.stderr == "mail-imap-mcp setup: --address is needed when standard input is not a terminal\n"
    assert not (tmp_path / "c.toml").exists()


@pytest.mark.parametrize(
    ("platform", "where"),
    [
        ("darwin", "Library/Application Support/Claude/claude_desktop_config.json"),
        ("linux", ".config/Claude/claude_desktop_config.json"),
        ("win32", "%APPDATA%\\Claude\\claude_desktop_config.json"),
    ],
)
def test_the_claude_desktop_snippet_names_the_platforms_config_file(platform: str, where: str) -> None:
    from mail_imap_mcp.cli.setup_clients import snippets

    text = snippets(
        Path("/home/u/.config/mail-imap-mcp/config.toml"),
        command=["/opt/mim/bin/mail-imap-mcp"],
        platform=platform,
    )
    assert where in text
    desktop = json.loads(text.split("claude_desktop_config.json:\n", 1)[1].split("\n\n", 1)[0])
    assert desktop == {
        "mcpServers": {
            "mail": {
                "command": "/opt/mim/bin/mail-imap-mcp",
                "args": ["serve", "--config", "/home/u/.config/mail-imap-mcp/config.toml"],
            }
        }
    }

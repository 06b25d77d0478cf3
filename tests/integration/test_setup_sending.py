"""``mail-imap-mcp setup`` turns sending on (issue 56 item 9): a question on a terminal, whose mistyped
answers are asked again, and flags for a script; the config it writes loads, and ``check`` logs in with it."""

from __future__ import annotations

import tomllib
from pathlib import Path

from tests.integration.test_setup import (
    NO_KEYCHAIN,
    SENDING_QUESTION,
    SERVER,
    Terminal,
    check,
    environment,
    files_under,
    script_setup,
    user_home,
)
from tests.support.dovecot import Dovecot


def test_setup_on_a_terminal_turns_sending_on_asking_again_what_was_mistyped(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    home, config = user_home(tmp_path)
    flags = ["--address", f"{user}@example.org", "--host", dovecot.host, "--port", str(dovecot.tls_port)]
    flags += ["--username", user, "--ca-file", str(dovecot.ca_file), "--config", str(config)]
    term = Terminal([SERVER, "setup", *flags], environment(home, NO_KEYCHAIN))
    term.answer((r"Security \(tls, starttls, plain\) \[tls\]: ", ""), (SENDING_QUESTION, "maybe"))
    term.expect(r"'maybe' is neither yes nor no; try again\.")
    recipients = r"Who may be sent mail \(comma-separated: .*\): "
    term.answer((SENDING_QUESTION, "yes"), (recipients, "bob"))
    term.expect(r"'bob' is not an allowed recipient.*try again\.")
    term.answer((recipients, "bob@example.org, @example.com"))
    # example.org is no provider's: the SMTP server is asked, its port proposed.
    term.answer(
        (r"SMTP server \(submission\): ", "smtp.example.org"), (r"SMTP port \(465 with TLS\) \[465\]: ", "")
    )
    term.answer((r"Password or app password \(not shown\): ", dovecot.password))
    term.expect(r"ok: logged in")
    assert term.wait() == 0
    account = tomllib.loads(config.read_text())["accounts"]["default"]
    assert account["send_enabled"] is True
    assert account["allowed_recipients"] == ["bob@example.org", "@example.com"]
    assert account["smtp"] == {"host": "smtp.example.org", "port": 465}
    done = check(config, environment(home, NO_KEYCHAIN))
    assert done.returncode == 0, done.stdout + done.stderr


def test_setup_in_a_script_turns_sending_on_by_flags_and_refuses_what_is_missing(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    home, config = user_home(tmp_path)
    missing = script_setup(home, NO_KEYCHAIN, dovecot, user, "--config", str(config), "--send-enabled")
    assert missing.returncode == 2 and "--allowed-recipients is needed" in missing.stderr, missing.stderr
    alone = script_setup(
        home, NO_KEYCHAIN, dovecot, user, "--config", str(config), "--allowed-recipients", "*"
    )
    assert alone.returncode == 2 and "need --send-enabled" in alone.stderr, alone.stderr
    wrong = ["--config", str(config), "--send-enabled", "--allowed-recipients", "example.com"]
    refused = script_setup(home, NO_KEYCHAIN, dovecot, user, *wrong)
    assert refused.returncode == 2 and "--allowed-recipients: 'example.com'" in refused.stderr, refused.stderr
    assert files_under(home, home / "nothing") == []
    flags = ["--config", str(config), "--send-enabled", "--allowed-recipients", "*"]
    flags += ["--smtp-host", "smtp.example.org", "--smtp-port", "587"]
    done = script_setup(home, NO_KEYCHAIN, dovecot, user, *flags)
    assert done.returncode == 0, done.stdout + done.stderr
    account = tomllib.loads(config.read_text())["accounts"]["default"]
    assert (account["send_enabled"], account["allowed_recipients"]) == (True, ["*"])
    assert account["smtp"] == {"host": "smtp.example.org", "port": 587, "security": "starttls"}
    assert check(config, environment(home, NO_KEYCHAIN)).returncode == 0

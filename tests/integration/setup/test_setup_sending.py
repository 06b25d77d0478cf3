"""``mail-imap-mcp setup`` turns sending on (issue 56 item 9): a question on a terminal, whose mistyped
answers are asked again, and flags for a script; writes come on with it (a draft is saved before it is
sent), the SMTP security is asked, and the submission server is checked (sending nothing) before anything
is written (issue 78 item 7). Against the real submission chain (tests/support/servers/submission.py); the config
it writes loads, and ``check`` logs in to both servers with it."""

from __future__ import annotations

import tomllib
from pathlib import Path

from tests.support.servers.submission import SubmissionDovecot
from tests.support.shared.setup import (
    NO_KEYCHAIN,
    SENDING_QUESTION,
    SERVER,
    Terminal,
    check,
    environment,
    files_under,
    run_server,
    user_home,
)

PASSWORD = r"Password or app password \(not shown\): "
RECIPIENTS = r"Who may be sent mail \(comma-separated: .*\): "
SMTP_SECURITY = r"SMTP security \(tls, starttls, plain\) \[{}\]: "


def imap_flags(chain: SubmissionDovecot, user: str, config: Path) -> list[str]:
    flags = ["--address", chain.address(user), "--host", chain.host, "--port", str(chain.tls_port)]
    return [*flags, "--username", user, "--ca-file", str(chain.ca_file), "--config", str(config)]


def script_setup(home: Path, chain: SubmissionDovecot, user: str, *flags: str) -> tuple[int, str, str]:
    """setup as a script runs it, for ``user`` of the chain: every answer a flag, the password on stdin."""
    done = run_server(
        ["setup", *imap_flags(chain, user, home / "mail.toml"), "--password-stdin", *flags],
        environment(home, NO_KEYCHAIN),
        chain.password + "\n",
    )
    return done.returncode, done.stdout, done.stderr


def test_setup_on_a_terminal_turns_sending_and_writes_on_and_checks_the_submission_server(
    tmp_path: Path, chain: SubmissionDovecot
) -> None:
    user = chain.new_user()
    home, config = user_home(tmp_path)
    term = Terminal([SERVER, "setup", *imap_flags(chain, user, config)], environment(home, NO_KEYCHAIN))
    term.answer((r"Security \(tls, starttls, plain\) \[tls\]: ", ""), (PASSWORD, chain.password))
    term.answer((SENDING_QUESTION, "maybe"))
    term.expect(r"'maybe' is neither yes nor no; try again\.")
    term.answer((SENDING_QUESTION, "yes"), (RECIPIENTS, "bob"))
    term.expect(r"'bob' is not an allowed recipient.*try again\.")
    term.answer((RECIPIENTS, "bob@example.org, @example.com"))
    # mail.test is no provider's: the SMTP server and its security are asked, the port proposed by it.
    term.answer((r"SMTP server \(submission\): ", chain.host), (SMTP_SECURITY.format("tls"), "ssl"))
    term.expect(r"'ssl' is none of tls, starttls and plain .*; try again\.")
    term.answer((SMTP_SECURITY.format("tls"), ""), (r"SMTP port \[465\]: ", str(chain.submissions_port)))
    term.expect(r"ok: logged in, \d+ mailbox\(es\)")
    target = rf"{chain.host}:{chain.submissions_port} \(tls\)"
    term.expect(rf"Checking the submission server {target}, sending nothing\.\.\.")
    term.expect(r"ok: logged in, AUTH [A-Z0-9 -]*PLAIN[A-Z0-9 -]*; nothing sent\.")
    assert term.wait() == 0
    account = tomllib.loads(config.read_text())["accounts"]["default"]
    assert (account["write_enabled"], account["send_enabled"]) == (True, True)
    assert account["allowed_recipients"] == ["bob@example.org", "@example.com"]
    assert account["smtp"] == {"host": chain.host, "port": chain.submissions_port, "security": "tls"}
    done = check(config, environment(home, NO_KEYCHAIN))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"ok   default: submission {chain.host}:{chain.submissions_port} (tls) as {user}: logged in" in (
        done.stdout
    )
    assert "note" not in done.stdout, done.stdout


def test_a_wrong_smtp_security_on_a_terminal_is_said_and_asked_again(
    tmp_path: Path, chain: SubmissionDovecot
) -> None:
    """starttls on the implicit-TLS port: said at once (the port greets nobody in plain text), not after
    the send's command timeout; asked again, the port proposed is the one typed (issue 89 item 18: it
    was the new security's default, 465, though the user had typed the server's own port)."""
    user = chain.new_user()
    home, config = user_home(tmp_path)
    argv = [SERVER, "setup", *imap_flags(chain, user, config), "--security", "tls"]
    argv += ["--send-enabled", "--allowed-recipients", "*", "--smtp-host", chain.host]
    term = Terminal(argv, environment(home, NO_KEYCHAIN))
    term.answer((PASSWORD, chain.password), (SMTP_SECURITY.format("tls"), "starttls"))
    term.answer((r"SMTP port \[587\]: ", str(chain.submissions_port)))
    term.expect(
        rf"The submission check failed: \[unavailable\] .*port {chain.submissions_port} speaks TLS from its "
        r"first byte .*its security is tls, not starttls.*Check the SMTP security \(tls for 465"
    )
    term.answer((rf"SMTP server \(submission\) \[{chain.host}\]: ", ""))
    term.answer((SMTP_SECURITY.format("starttls"), "tls"), (rf"SMTP port \[{chain.submissions_port}\]: ", ""))
    term.expect(r"ok: logged in, AUTH .*; nothing sent\.")
    assert term.wait() == 0
    account = tomllib.loads(config.read_text())["accounts"]["default"]
    assert account["smtp"] == {"host": chain.host, "port": chain.submissions_port, "security": "tls"}


def test_setup_in_a_script_refuses_what_is_missing_and_a_submission_server_that_does_not_work(
    tmp_path: Path, chain: SubmissionDovecot
) -> None:
    user = chain.new_user()
    home, config = user_home(tmp_path)
    code, _, err = script_setup(home, chain, user, "--send-enabled")
    assert code == 2 and "--allowed-recipients is needed" in err, err
    code, _, err = script_setup(home, chain, user, "--smtp-security", "starttls")
    assert code == 2 and "need --send-enabled" in err, err
    code, _, err = script_setup(home, chain, user, "--send-enabled", "--allowed-recipients", "example.com")
    assert code == 2 and "--allowed-recipients: 'example.com'" in err, err
    sending = ["--send-enabled", "--allowed-recipients", "*", "--smtp-host", chain.host]
    # TLS on the STARTTLS port: the port answers in plain text; nothing is written.
    wrong = ["--smtp-security", "tls", "--smtp-port", str(chain.submission_port)]
    code, out, err = script_setup(home, chain, user, *sending, *wrong)
    assert code == 1, out + err
    assert "the submission check failed, so nothing was written: [unavailable]" in err
    assert "the port answered without TLS (is it a STARTTLS port?)" in err
    assert "Check the SMTP security (tls for 465, starttls for 587)." in err
    assert files_under(home, home / "nothing") == []
    right = ["--smtp-security", "starttls", "--smtp-port", str(chain.submission_port)]
    code, out, err = script_setup(home, chain, user, *sending, *right)
    assert code == 0, out + err
    assert f"Checking the submission server {chain.host}:{chain.submission_port} (starttls)" in out
    account = tomllib.loads(config.read_text())["accounts"]["default"]
    assert (account["write_enabled"], account["send_enabled"], account["allowed_recipients"]) == (
        True,
        True,
        ["*"],
    )
    assert account["smtp"] == {"host": chain.host, "port": chain.submission_port, "security": "starttls"}
    assert check(config, environment(home, NO_KEYCHAIN)).returncode == 0

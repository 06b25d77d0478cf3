"""``mail-imap-mcp setup`` after a failed login, over an existing account and with ``--dry-run``, against
Dovecot: on a terminal a failure asks again only what it points at (the password, the certificate to trust),
keeping every other answer; ``--replace`` replaces an account; ``--dry-run`` prints what the run writes."""

from __future__ import annotations

import tomllib
from pathlib import Path

from tests.support.patience import patient
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.faultproxy import FaultProxy
from tests.support.shared.setup import (
    NO_KEYCHAIN,
    SENDING_QUESTION,
    SERVER,
    Terminal,
    environment,
    files_under,
    run_server,
    script_setup,
    user_home,
)

PASSWORD = r"Password or app password \(not shown\): "


def account_flags(dovecot: Dovecot, user: str) -> list[str]:
    return ["--address", f"{user}@example.org", "--host", dovecot.host, "--port", str(dovecot.tls_port)]


def test_a_wrong_password_on_a_terminal_is_asked_again_and_the_other_answers_are_kept(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    home, config = user_home(tmp_path)
    term = Terminal(
        [SERVER, "setup", "--config", str(config), "--ca-file", str(dovecot.ca_file)],
        environment(home, NO_KEYCHAIN),
    )
    term.expect(r"Email address: ")
    term.send(f"{user}@example.org")
    term.expect(r"IMAP server: ")
    term.send(dovecot.host)
    term.expect(r"Security \(tls, starttls, plain\) \[tls\]: ")
    term.send("")
    term.expect(r"Port \[993\]: ")
    term.send(str(dovecot.tls_port))
    term.expect(r"Username \[.*\]: ")
    term.send(user)
    term.expect(r"Password or app password \(not shown\): ")
    term.send("not-the-password")
    term.expect(SENDING_QUESTION)
    term.send("")
    term.expect(r"The login failed: \[auth_failed\]")
    # Only what a refused login points at is asked again, the earlier answer proposed.
    term.expect(rf"Username \[{user}\]: ")
    term.send("")
    term.expect(r"Password or app password \(not shown\): ")
    term.send(dovecot.password)
    term.expect(r"ok: logged in")
    assert term.wait() == 0
    assert term.transcript.count("Email address") == 1 and term.transcript.count("IMAP server") == 1
    account = tomllib.loads(config.read_text())["accounts"]["default"]
    assert (account["host"], account["port"], account["username"]) == (dovecot.host, dovecot.tls_port, user)


def test_an_untrusted_certificate_on_a_terminal_asks_for_the_certificate_file(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    home, config = user_home(tmp_path)
    flags = [*account_flags(dovecot, user), "--username", user, "--yes", "--config", str(config)]
    term = Terminal([SERVER, "setup", *flags], environment(home, NO_KEYCHAIN))
    term.expect(r"Password or app password \(not shown\): ")
    term.send(dovecot.password)
    term.expect(r"The login failed: .*certificate")
    term.expect(r"Certificate file to trust \(PEM.*\): ")
    term.send(str(home / "missing.pem"))
    term.expect(r"missing\.pem is not a file")
    term.expect(r"Certificate file to trust \(PEM.*\): ")
    term.send(str(dovecot.ca_file))
    # The password is not asked again: the certificate was all the failure pointed at.
    term.expect(r"ok: logged in")
    assert term.wait() == 0
    assert tomllib.loads(config.read_text())["accounts"]["default"]["ca_file"] == str(
        Path(dovecot.ca_file).resolve()
    )


def test_a_script_without_the_certificate_is_told_the_flag_that_gives_it(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    done = run_server(
        ["setup", *account_flags(dovecot, user), "--username", user, "--password-stdin"],
        environment(tmp_path, NO_KEYCHAIN),
        dovecot.password + "\n",
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "certificate" in done.stderr and "--ca-file FILE" in done.stderr
    assert files_under(tmp_path, tmp_path / "nothing") == []


def test_replace_replaces_the_account_and_keeps_the_others(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    home, config = user_home(tmp_path)
    for account in ("work", "other"):
        first = script_setup(home, NO_KEYCHAIN, dovecot, user, "--config", str(config), "--account", account)
        assert first.returncode == 0, first.stdout + first.stderr
    again = ["--config", str(config), "--account", "work", "--write-enabled"]
    refused = script_setup(home, NO_KEYCHAIN, dovecot, user, *again)
    assert refused.returncode == 2 and "--replace" in refused.stderr
    replaced = script_setup(home, NO_KEYCHAIN, dovecot, user, *again, "--replace")
    assert replaced.returncode == 0, replaced.stdout + replaced.stderr
    assert f"Replaced [accounts.work] in {config}" in replaced.stdout
    accounts = tomllib.loads(config.read_text())["accounts"]
    assert accounts["work"]["write_enabled"] is True and "write_enabled" not in accounts["other"]
    assert config.read_text().count("[accounts.work]") == 1
    assert config.stat().st_mode & 0o777 == 0o600


def test_dry_run_shows_where_the_run_puts_the_password_and_the_table_it_writes(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    home, config = user_home(tmp_path)
    preview = script_setup(home, NO_KEYCHAIN, dovecot, user, "--config", str(config), "--dry-run")
    assert preview.returncode == 0, preview.stdout + preview.stderr
    assert not config.exists()
    done = script_setup(home, NO_KEYCHAIN, dovecot, user, "--config", str(config))
    assert done.returncode == 0, done.stdout + done.stderr
    shown = preview.stdout.split(f"The run would write [accounts.default] to {config}:\n\n", 1)[1]
    assert config.read_text().endswith(shown.split("\n\n", 1)[0] + "\n")
    said = f"The password is in {home / 'default.password'}, readable by you only (no keychain here"
    assert said in preview.stdout and said in done.stdout
    assert f'password_file = "{home / "default.password"}"' in shown


def test_regression_a_mistyped_answer_on_a_terminal_is_asked_again_keeping_the_others(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    """Issue 56 item 17: an address without @ or an unknown security ended setup, losing every answer;
    issue 78: so did a mistyped port, after every other answer."""
    home, config = user_home(tmp_path)
    argv = [SERVER, "setup", "--config", str(config), "--ca-file", str(dovecot.ca_file)]
    term = Terminal(argv, environment(home, NO_KEYCHAIN))
    security = r"Security \(tls, starttls, plain\) \[tls\]: "
    term.answer(("Email address: ", "someone"))
    term.expect(r"'someone' is not an address \(name@domain\); try again\.")
    term.answer(
        ("Email address: ", f"{user}@example.org"), ("IMAP server: ", dovecot.host), (security, "ssl")
    )
    term.expect(r"'ssl' is none of the three; try again\.")
    # Issue 78: a mistyped port ended the run after every other answer; it is asked again as they are.
    term.answer((security, ""), (r"Port \[993\]: ", "99e"))
    term.expect(r"'99e' is no port \(1 to 65535\); try again\.")
    term.answer((r"Port \[993\]: ", str(dovecot.tls_port)), (r"Username \[.*\]: ", user))
    term.answer((r"Password or app password \(not shown\): ", dovecot.password), (SENDING_QUESTION, ""))
    term.expect(r"ok: logged in")
    assert term.wait() == 0
    assert term.transcript.count("IMAP server") == 1
    account = tomllib.loads(config.read_text())["accounts"]["default"]
    assert (account["addresses"], account["security"]) == ([f"{user}@example.org"], "tls")


def test_a_mistyped_flag_is_refused_naming_it(tmp_path: Path, dovecot: Dovecot, user: str) -> None:
    done = run_server(
        ["setup", "--address", "someone", "--password-stdin"], environment(tmp_path, NO_KEYCHAIN), "x\n"
    )
    assert done.returncode == 2 and "--address 'someone' is not an address (name@domain)" in done.stderr
    assert files_under(tmp_path, tmp_path / "nothing") == []


def test_regression_what_is_typed_during_the_login_is_never_echoed_nor_taken_as_an_answer(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    """Issue 78: a password typed ahead (again, while the login ran) was echoed, and became the answer to
    the next visible question. The login is held at a proxy while the person types; then the login fails,
    and the question after it starts afresh, nothing of what was typed shown."""
    home, config = user_home(tmp_path)
    with FaultProxy(dovecot.host, dovecot.tls_port) as proxy:
        flags = ["--address", f"{user}@example.org", "--host", proxy.host, "--port", str(proxy.port)]
        flags += ["--username", user, "--ca-file", str(dovecot.ca_file), "--yes", "--config", str(config)]
        term = Terminal([SERVER, "setup", *flags], environment(home, NO_KEYCHAIN))
        term.expect(PASSWORD)
        proxy.set_latency(patient(60))  # the login waits for the proxy until it is released
        term.send("not-the-password")
        term.expect(r"Logging in to .* as ")
        term.send("typed-ahead-secret")
        proxy.pass_through()
        term.expect(r"The login failed: \[auth_failed\]")
        term.answer((rf"Username \[{user}\]: ", ""), (PASSWORD, dovecot.password))
        term.expect(r"ok: logged in")
        assert term.wait() == 0
    assert "typed-ahead-secret" not in term.transcript
    assert tomllib.loads(config.read_text())["accounts"]["default"]["username"] == user

"""``mail-imap-mcp check`` tries the submission server of every account that sends (issue 78 item 7):
connect, EHLO, TLS or STARTTLS, the AUTH mechanisms and a login, sending nothing, so that a wrong setting
shows before the user presses Send. Against the real submission chain (tests/support/servers/submission.py): a
good setting is ok; TLS on the STARTTLS port, STARTTLS on the implicit-TLS port, a wrong password and a
port where nothing listens each get a line that says what is wrong."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.servers.imapserver import free_ports
from tests.support.servers.submission import SubmissionDovecot
from tests.support.shared.setup import NO_KEYCHAIN, check, environment


def account(chain: SubmissionDovecot, user: str, password_env: str, port: int, security: str) -> str:
    writes = [] if password_env.endswith("NO_WRITES") else ["write_enabled = true"]
    return "\n".join(
        [
            f'host = "{chain.host}"',
            f"port = {chain.tls_port}",
            f'username = "{user}"',
            f'addresses = ["{chain.address(user)}"]',
            f'password_env = "{password_env}"',
            f"ca_file = {json.dumps(str(chain.ca_file))}",
            *writes,
            "send_enabled = true",
            'allowed_recipients = ["*"]',
            f'smtp = {{ host = "{chain.host}", port = {port}, security = "{security}" }}',
        ]
    )


def test_check_tries_each_submission_server_and_says_what_is_wrong(
    tmp_path: Path, chain: SubmissionDovecot
) -> None:
    user = chain.new_user()
    (nowhere,) = free_ports(chain.host)
    accounts = {
        "tls": ("RIGHT", chain.submissions_port, "tls"),
        "starttls": ("RIGHT", chain.submission_port, "starttls"),
        "tls_on_starttls_port": ("RIGHT", chain.submission_port, "tls"),
        "starttls_on_tls_port": ("RIGHT", chain.submissions_port, "starttls"),
        "wrong_password": ("WRONG", chain.submissions_port, "tls"),
        "unreachable": ("RIGHT", nowhere, "tls"),
        "no_writes": ("RIGHT_NO_WRITES", chain.submissions_port, "tls"),
    }
    config = tmp_path / "mail.toml"
    config.write_text(
        "\n\n".join(
            f"[accounts.{name}]\n" + account(chain, user, f"MAIL_PASSWORD_{env}", port, security)
            for name, (env, port, security) in accounts.items()
        )
        + "\n"
    )
    relayed = chain.mta_log()
    env = environment(tmp_path, NO_KEYCHAIN)
    passwords = {"MAIL_PASSWORD_RIGHT": chain.password, "MAIL_PASSWORD_RIGHT_NO_WRITES": chain.password}
    done = check(config, env | passwords | {"MAIL_PASSWORD_WRONG": "not-it"})
    assert done.returncode == 1, done.stdout + done.stderr
    lines = {
        line.split(": submission ", 1)[0]: line
        for line in done.stdout.splitlines()
        if ": submission " in line
    }
    good = ("tls", "starttls", "no_writes")
    assert sorted(lines) == sorted(f"{'ok  ' if name in good else 'FAIL'} {name}" for name in accounts)

    def said(name: str) -> str:
        status = "ok  " if name in good else "FAIL"
        _, port, security = accounts[name]
        line = lines[f"{status} {name}"]
        assert line.startswith(f"{status} {name}: submission {chain.host}:{port} ({security}) as {user}: "), (
            line
        )
        return line.split(f" as {user}: ", 1)[1]

    for name in good:
        assert said(name).startswith("logged in, AUTH ") and said(name).endswith("; nothing sent"), said(name)
        assert "PLAIN" in said(name).split("AUTH ", 1)[1]
    assert said("tls_on_starttls_port") == (
        "[unavailable] The submission server was not reached safely: TLS could not be set up (the port "
        "answered without TLS (is it a STARTTLS port?)). Nothing was sent. Check security in "
        "[accounts.tls_on_starttls_port.smtp] (tls for 465, starttls for 587)."
    )
    assert said("starttls_on_tls_port").startswith(
        f"[unavailable] The submission server was not reached safely: TLS could not be set up (port "
        f"{chain.submissions_port} speaks TLS from its first byte and greets nobody in plain text "
        "(an implicit-TLS port, such as 465: its security is tls, not starttls))."
    )
    assert said("wrong_password").startswith("[auth_failed] The submission server refused the login (535 "), (
        said("wrong_password")
    )
    assert said("wrong_password").endswith(
        "The IMAP login's username and password are the submission server's too."
    )
    assert said("unreachable") == (
        "[unavailable] The submission server could not be reached (Connection refused). Nothing was sent."
    )
    # Sending on with writes off: no draft can be saved to send, and check says so (the one note).
    notes = [line for line in done.stdout.splitlines() if line.startswith("note")]
    assert len(notes) == 1, done.stdout
    (note,) = notes
    assert note == (
        "note    no_writes: send_enabled in [accounts.no_writes] is on, but writes are off, so no draft can be "
        "saved to send: the user sets write_enabled = true in [server] (or MAIL_IMAP_WRITE_ENABLED=true), or "
        "write_enabled = true in [accounts.no_writes] for this account only"
    )
    # Nothing was sent: the relay behind the submission server saw no message.
    assert chain.mta_log() == relayed

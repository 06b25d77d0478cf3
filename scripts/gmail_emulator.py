"""Run the Gmail emulation (tests/support/servers/gmail_server.py) until interrupted; print where it listens.

One JSON line on stdout: ``host``, ``port`` (implicit TLS), ``plain_port`` (STARTTLS), ``user``,
``password``, ``ca_file`` and ``config`` (the ``[accounts.gmail]`` table that connects to it, the
password read from ``$GMAIL_EMULATOR_PASSWORD``). ``--seed``
gives the account a few messages first: two in INBOX (one labelled Work), one archived with Work, one
archived bare. Run it through ``scripts/gmail-emulator``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import signal
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.accounts import config_toml  # noqa: E402
from tests.support.mail import mailgen  # noqa: E402
from tests.support.servers.gmail import ALL_MAIL, Gmail  # noqa: E402

PASSWORD_ENV = "GMAIL_EMULATOR_PASSWORD"


def seed(gmail: Gmail, user: str) -> None:
    """A small account: archived mail, a label on an INBOX message, a conversation."""
    start = dt.datetime.now(dt.UTC) - dt.timedelta(days=10)

    def message(day: int, subject: str, **headers: str) -> bytes:
        return mailgen.plain_message(
            subject=subject,
            body=f"{subject}: the body.",
            date=start + dt.timedelta(days=day),
            message_id=f"<demo-{day}@gmail.example>",
            headers=headers,
        )

    gmail.seed(user, "INBOX", [message(0, "Quarterly budget"), message(1, "Lunch on Friday?")])
    gmail.seed(
        user, "Work", [message(2, "Re: Quarterly budget", **{"In-Reply-To": "<demo-0@gmail.example>"})]
    )
    gmail.seed(user, ALL_MAIL, [message(3, "Your receipt")])
    gmail.label(user, "INBOX", [["Work"], []])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--user", default="user")
    parser.add_argument("--password", default=None, help="every user's password (default: random)")
    parser.add_argument("--seed", action="store_true", help="give the account a few labelled messages")
    options = parser.parse_args(argv)
    with Gmail(default_user=options.user, password=options.password) as gmail:
        if options.seed:
            seed(gmail, options.user)
        account = {
            "host": gmail.host,
            "port": gmail.tls_port,
            "security": "tls",
            "username": options.user,
            "ca_file": str(gmail.ca_file),
            "password_env": PASSWORD_ENV,
        }
        line = {
            "host": gmail.host,
            "port": gmail.tls_port,
            "plain_port": gmail.plain_port,
            "user": options.user,
            "password": gmail.password,
            "ca_file": str(gmail.ca_file),
            "config": config_toml({"gmail": account}),
        }
        print(json.dumps(line), flush=True)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()
    return 0


if __name__ == "__main__":
    sys.exit(main())

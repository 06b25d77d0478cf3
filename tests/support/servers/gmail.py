"""The Gmail emulation (tests/support/servers/gmail_server.py) as an ``ImapServer`` of the test harness, like
Dovecot: its own process on two loopback ports (STARTTLS and implicit TLS, a ``trustme`` CA), any user
name logs in with ``password`` (an account is made at first login), ``seed()`` over IMAP APPEND and
``label()`` over ``STORE +X-GM-LABELS``. Its mail lives in memory: ``restart()`` starts it empty."""

from __future__ import annotations

import datetime as dt
import secrets
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from tests.support.mail import mailgen
from tests.support.servers.gmail_server import CAPABILITIES
from tests.support.servers.imapserver import REPO_ROOT, AppendSeeding, tail_file

ALL_MAIL = "[Gmail]/All Mail"
TRASH = "[Gmail]/Trash"
#: The date of the first message the Gmail tests seed.
BASE = dt.datetime(2026, 10, 1, 9, tzinfo=dt.UTC)


def message(name: str, days: int, *, domain: str = "gmail.example", **headers: str) -> bytes:
    """A message "About {name}", sent ``days`` after :data:`BASE`, its Message-ID ``<{name}@{domain}>``."""
    return mailgen.plain_message(
        subject=f"About {name}",
        body=f"This is {name}.",
        date=BASE + dt.timedelta(days=days),
        message_id=f"<{name}@{domain}>",
        headers=headers,
    )


def attached(name: str, days: int, disposition: str, *, domain: str = "gmail.example") -> bytes:
    """A message "About {name}" with one PDF attachment whose ``Content-Disposition`` parameters are
    ``disposition`` as written (e.g. an RFC 2231 ``filename*=utf-8''%C3%BC...``)."""
    date = (BASE + dt.timedelta(days=days)).strftime("%a, %d %b %Y %H:%M:%S +0000")
    return (
        f"From: Alice <alice@example.com>\r\nTo: User <user@example.org>\r\nSubject: About {name}\r\n"
        f"Date: {date}\r\nMessage-ID: <{name}@{domain}>\r\nMIME-Version: 1.0\r\n"
        'Content-Type: multipart/mixed; boundary="b1"\r\n\r\n'
        "--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nSee the attachment.\r\n"
        f"--b1\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; {disposition}\r\n"
        "Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--b1--\r\n"
    ).encode("ascii")


class Gmail(AppendSeeding):
    """A private Gmail emulation on loopback. ``capabilities`` replaces what it offers after login (e.g.
    without ``X-GM-EXT-1``: the same server as a standard one)."""

    kind = "gmail"
    separator = "/"
    personal_prefix = ""

    def __init__(
        self,
        *,
        default_user: str = "user",
        password: str | None = None,
        capabilities: str = CAPABILITIES,
        locale: str = "en",
    ) -> None:
        super().__init__(default_user=default_user, password=password)
        self.capabilities = capabilities
        #: The language of the system folders' names (``de``: ``[Google Mail]/Papierkorb``...).
        self.locale = locale
        self._mark = "mim-" + secrets.token_hex(6)

    @property
    def greeting_mark(self) -> bytes:
        return self._mark.encode()

    @property
    def log_path(self) -> Path:
        return self.root / "gmail.log"

    def _prepare(self) -> None:
        self._pick_ports()
        self._write_tls()
        secret = self.root / "password"
        secret.touch(mode=0o600)
        secret.write_text(self.password)

    def _spawn(self) -> None:
        tls = self.root / "tls"
        self._launch(
            [
                sys.executable,
                "-m",
                "tests.support.servers.gmail_server",
                "--host",
                self.host,
                "--plain-port",
                str(self.plain_port),
                "--tls-port",
                str(self.tls_port),
                "--cert",
                str(tls / "server.pem"),
                "--key",
                str(tls / "server.key"),
                "--password-file",
                str(self.root / "password"),
                "--capabilities",
                self.capabilities,
                "--mark",
                self._mark,
            ],
            self.log_path,
            env={
                "PATH": "/usr/bin:/bin",
                "PYTHONPATH": str(REPO_ROOT),
                "PYTHONDONTWRITEBYTECODE": "1",
                "GMAIL_EMULATION_LOCALE": self.locale,
            },
        )
        self._wait_ready("Gmail emulation")

    def log_tail(self, lines: int = 40) -> str:
        if self._root is None:
            return "(not started)"
        return tail_file(self.log_path, lines) or "(no log output)"

    def fail_label_store(self, user: str, after: int) -> None:
        """The user's next ``STORE [+-]X-GM-LABELS`` changes its first ``after`` messages, then answers NO
        (the emulation's fault hook)."""
        with self.connect(user, tls=False, starttls=False) as client:
            typ, data = client._imap.xatom("XEMULATION", "FAIL-LABEL-STORE", str(after))
            assert typ == "OK", data

    def label(self, user: str, mailbox: str, labels: Sequence[Iterable[str]]) -> None:
        """``STORE +X-GM-LABELS``: the i-th message (by UID order) of ``mailbox`` gains ``labels[i]``."""
        with self.connect(user, tls=False, starttls=False) as client:
            client.select_folder(mailbox)
            uids = sorted(client.search("ALL"))
            for uid, names in zip(uids, labels, strict=False):
                names = list(names)
                if names:
                    client.add_gmail_labels([uid], names)


def seed_labelled(gmail: Gmail, user: str) -> None:
    """Two messages in INBOX (one also labelled Work and Important), one archived with Work, one archived
    bare, one in Trash."""
    gmail.seed(user, "INBOX", [message("one", 0), message("two", 1)])
    gmail.seed(user, "Work", [message("three", 2)])
    gmail.seed(user, ALL_MAIL, [message("four", 3)])
    gmail.seed(user, TRASH, [message("binned", 4)])
    gmail.label(user, "INBOX", [["Work", "\\Important"], []])

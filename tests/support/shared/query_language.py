"""What tests/integration/search/test_query_language.py shares with other test modules."""

from __future__ import annotations

import datetime as dt
from email.message import EmailMessage

from tests.support.mail import mailgen
from tests.support.servers.matrix import MatrixServer

UTC = dt.UTC


NOW = dt.datetime.now(UTC).replace(microsecond=0)


def message(
    subject: str,
    body: str,
    *,
    sender: str = "Alice Johnson <alice@example.com>",
    cc: str | None = None,
    bcc: str | None = None,
    days_ago: int = 1,
    attachments: tuple[str, ...] = (),
    padding: int = 0,
) -> bytes:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = "Test User <user@example.org>"
    if cc:
        msg["Cc"] = cc
    if bcc:
        msg["Bcc"] = bcc
    msg["Subject"] = subject
    msg["Date"] = (NOW - dt.timedelta(days=days_ago)).strftime("%a, %d %b %Y %H:%M:%S +0000")
    msg["Message-ID"] = f"<{abs(hash((subject, sender, days_ago)))}@query.example>"
    msg.set_content(body + ("\n" + "x" * 76) * (padding // 77))
    for name in attachments:
        msg.add_attachment(
            b"%PDF-1.4 attachment bytes", maintype="application", subtype="octet-stream", filename=name
        )
    return mailgen.crlf(msg)


#: INBOX, oldest first (UID 1..6); the subjects name the messages in the assertions.
INBOX = [
    message("Budget plan 2025", "The numbers for next year.", attachments=("Budget-2025.PDF",), days_ago=400),
    message("Lunch", "Shall we talk budget over lunch?", sender="Bob Stone <bob@example.net>", days_ago=40),
    message(
        "Holiday photos",
        "Pictures from the beach.",
        sender="Carol Reed <carol@example.org>",
        attachments=("beach.JPG", "notes.txt"),
        days_ago=10,
    ),
    message(
        "Quarterly report",
        "See the report, budget inside.",
        cc="Dan <dan@example.com>",
        bcc="erin@example.com",
        padding=20_000,
    ),
    message("Re: Lunch", "Yes, budget talk at noon.", sender="Bob Stone <bob@example.net>", days_ago=0),
    message(
        "Invoice 42", "Please pay.", sender="Billing <billing@shop.example>", attachments=("invoice42.pdf",)
    ),
]


INBOX_FLAGS = ["\\Seen", "", "\\Seen \\Flagged", "\\Answered \\Seen", "", "\\Flagged"]


#: Their arrival, as their Date headers: 400, 40, 10, 1, 0 and 1 day(s) ago.
INBOX_ARRIVALS = [NOW - dt.timedelta(days=days) for days in (400, 40, 10, 1, 0, 1)]


def seed(server: MatrixServer, user: str) -> dict[str, str]:
    """The mailboxes of the scenario, by role: INBOX, an archive folder, Trash and Junk."""
    names = {
        "archive": server.mailbox_name("Archive"),
        "trash": server.mailbox_name("Trash"),
        "junk": server.mailbox_name("Junk"),
    }
    server.seed(user, "INBOX", INBOX, flags=INBOX_FLAGS, internaldates=INBOX_ARRIVALS)
    server.seed(user, names["archive"], [message("Old budget", "Archived budget figures.", days_ago=900)])
    server.seed(user, names["trash"], [message("Deleted budget", "A budget draft, deleted.")])
    server.seed(
        user, names["junk"], [message("Budget offer!!", "Cheap budget loans.", sender="x@spam.example")]
    )
    return names

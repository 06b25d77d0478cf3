"""A rule made here runs on the server: compiled from a query (``query/sieve.py``), checked and stored
through ``managesieve/``'s session and turned on, it files a message delivered through LMTP into its
mailbox on Dovecot, and leaves another in INBOX."""

from __future__ import annotations

from datetime import date

from mail_imap_mcp.managesieve.session import SieveLogin, SieveServer, open_session
from mail_imap_mcp.query import parse
from mail_imap_mcp.query.sieve import sieve_condition
from tests.support.patience import eventually
from tests.support.servers.sieve import SieveDovecot


def _message(sender: str, subject: str) -> bytes:
    return f"From: {sender}\r\nTo: parent@mail.test\r\nSubject: {subject}\r\n\r\nHallo.\r\n".encode()


def test_a_delivered_message_from_the_school_lands_in_school(sieve_dovecot: SieveDovecot) -> None:
    user = sieve_dovecot.new_user()
    sieve_dovecot.ensure_folder(user, "School")  # a rule files into a mailbox that exists: it creates none
    where = SieveServer("127.0.0.1", sieve_dovecot.managesieve_port, "starttls", sieve_dovecot.ca_file)
    session = open_session(where, SieveLogin(user, "PLAIN", lambda _: sieve_dovecot.password))
    try:
        condition = sieve_condition(
            parse("from:school.example", today=date(2026, 11, 29)).tree, session.capabilities().extensions
        )
        script = f'require ["fileinto"];\nif {condition.test} {{\n  fileinto "School";\n  stop;\n}}\n'
        assert session.check_script(script) == ""
        session.put_script("rules", script)
        session.activate("rules")
    finally:
        session.close()

    sieve_dovecot.deliver(user, _message("=?UTF-8?Q?Sch=C3=BCle?= <office@school.example>", "Zeugnis"))
    sieve_dovecot.deliver(user, _message("<friend@example.net>", "Lunch?"))

    def landed() -> dict[str, list[str]]:
        with sieve_dovecot.connect(user) as client:
            found = {}
            for mailbox in ("School", "INBOX"):
                client.select_folder(mailbox, readonly=True)
                fetched = client.fetch(client.search(["ALL"]), [b"BODY.PEEK[HEADER.FIELDS (SUBJECT)]"])
                found[mailbox] = sorted(
                    data[b"BODY[HEADER.FIELDS (SUBJECT)]"].decode().strip() for data in fetched.values()
                )
            return found

    assert eventually(
        lambda: (
            (found := landed()) == {"School": ["Subject: Zeugnis"], "INBOX": ["Subject: Lunch?"]} and found
        ),
        what="each delivered message where the rule put it",
    )

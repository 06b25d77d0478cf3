"""A rule made here runs on the server: compiled from a query (``query/sieve.py``), checked and stored
through ``managesieve/``'s session and turned on, it files a message delivered through LMTP into its
mailbox, and leaves another in INBOX, on Dovecot (Pigeonhole) and on Cyrus (timsieved, lmtpd)."""

from __future__ import annotations

from datetime import date

import pytest

from mail_imap_mcp.managesieve.session import SieveLogin, SieveServer, open_session
from mail_imap_mcp.query import parse
from mail_imap_mcp.query.sieve import quoted, sieve_condition
from tests.support.patience import eventually
from tests.support.servers.sieve import SieveCyrus, SieveDovecot


def _message(sender: str, subject: str) -> bytes:
    return f"From: {sender}\r\nTo: parent@mail.test\r\nSubject: {subject}\r\n\r\nHallo.\r\n".encode()


@pytest.mark.parametrize("fixture", ["sieve_dovecot", "sieve_cyrus"])
def test_a_delivered_message_from_the_school_lands_in_school(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    server: SieveDovecot | SieveCyrus = request.getfixturevalue(fixture)
    user = server.new_user()
    school = server.mailbox_name("School")
    with server.connect(user) as client:
        client.create_folder(school)  # a rule files into a mailbox that exists: it creates none
    where = SieveServer("127.0.0.1", server.managesieve_port, "starttls", server.ca_file)
    session = open_session(where, SieveLogin(user, "PLAIN", lambda _: server.password))
    try:
        condition = sieve_condition(
            parse("from:school.example", today=date(2026, 11, 29)).tree, session.capabilities().extensions
        )
        script = f'require ["fileinto"];\nif {condition.test} {{\n  fileinto {quoted(school)};\n  stop;\n}}\n'
        assert session.check_script(script) == ""
        session.put_script("rules", script)
        session.activate("rules")
    finally:
        session.close()

    server.deliver(user, _message("=?UTF-8?Q?Sch=C3=BCle?= <office@school.example>", "Zeugnis"))
    server.deliver(user, _message("<friend@example.net>", "Lunch?"))

    def landed() -> dict[str, list[str]]:
        found = {}
        with server.connect(user) as client:
            for mailbox in (school, "INBOX"):
                client.select_folder(mailbox, readonly=True)
                fetched = client.fetch(client.search(["ALL"]), [b"BODY.PEEK[HEADER.FIELDS (SUBJECT)]"])
                found[mailbox] = sorted(
                    data[b"BODY[HEADER.FIELDS (SUBJECT)]"].decode().strip() for data in fetched.values()
                )
        return found

    eventually(
        lambda: landed() == {school: ["Subject: Zeugnis"], "INBOX": ["Subject: Lunch?"]},
        what="each delivered message where the rule put it",
    )

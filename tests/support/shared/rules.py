"""What the rules' integration modules share (tests/integration/rules/): a rule's messages, the account's
configuration with ManageSieve on the test server's port, a ManageSieve session of the test's own, where
messages landed, and the corpus of look-alike headers, RFC 2047 subjects and names, non-ASCII names and
list mail that Pigeonhole's ``sieve-test`` holds the dry run to."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mail_imap_mcp.config import Config
from mail_imap_mcp.mail.sieve import SieveScripts
from mail_imap_mcp.managesieve.session import SieveLogin, SieveServer, open_session
from tests.support.accounts import account_settings
from tests.support.clients.in_process import make_config
from tests.support.servers.sieve import SieveCyrus, SieveDovecot

TOOL = "imap_manage_rules"
#: An account that sends, to @allowed.test only (a rule may forward there once the user approved it).
SENDS = {"send_enabled": True, "allowed_recipients": ["@allowed.test"], "smtp": {"host": "smtp.example.org"}}


def message(sender: str, subject: str) -> bytes:
    return f"From: {sender}\r\nTo: parent@mail.test\r\nSubject: {subject}\r\n\r\nHallo.\r\n".encode()


@contextmanager
def sieve_scripts(server: SieveDovecot | SieveCyrus, user: str) -> Iterator[SieveScripts]:
    """A ManageSieve session of the test's own, as ``user``."""
    where = SieveServer("127.0.0.1", server.managesieve_port, "starttls", server.ca_file)
    session = open_session(where, SieveLogin(user, "PLAIN", lambda _: server.password))
    try:
        yield session
    finally:
        session.close()


def rules_config(server: SieveDovecot | SieveCyrus, user: str, **settings: Any) -> Config:
    """One account, ``user`` on ``server``, its ManageSieve on the server's port (``settings`` added)."""
    account = account_settings(server, user, sieve={"port": server.managesieve_port}, **settings)
    return make_config({"default": account})


def landed(server: SieveDovecot | SieveCyrus, user: str, mailboxes: list[str]) -> dict[str, list[str]]:
    """The subjects of the messages in each of ``mailboxes``, sorted."""
    found = {}
    with server.connect(user) as client:
        for mailbox in mailboxes:
            client.select_folder(mailbox, readonly=True)
            fetched = client.fetch(client.search(["ALL"]), [b"BODY.PEEK[HEADER.FIELDS (SUBJECT)]"])
            found[mailbox] = sorted(
                data[b"BODY[HEADER.FIELDS (SUBJECT)]"].decode().strip().removeprefix("Subject: ")
                for data in fetched.values()
            )
    return found


def corpus_message(
    sender: str, subject: str, body: str = "Hallo.", *, to: str = "me@example.org", extra: str = ""
) -> bytes:
    head = f"From: {sender}\r\nTo: {to}\r\nSubject: {subject}\r\nDate: Sun, 29 Nov 2026 07:00:00 +0000\r\n{extra}"
    return f"{head}MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n".encode()


#: The corpus, by name: what each is there for is in its name.
CORPUS = {
    "school_encoded_name": corpus_message(
        "=?UTF-8?Q?Sch=C3=BCle_Am_See?= <office@school.example>", "=?UTF-8?Q?Ihr_Zeugnis_f=C3=BCr_2026?="
    ),
    "school_lookalike_domain": corpus_message("<office@school.example.evil.test>", "Zeugnis abholen"),
    "teacher_plain": corpus_message("Frau Lehrer <lehrer@school.example>", "Elternabend am Montag"),
    "word_in_body_only": corpus_message("<friend@example.net>", "Hi", "Kommst du zum Elternabend?"),
    "list_newsletter": corpus_message(
        "<news@shop.example>", "Angebote", extra="List-Id: Shop News <news.shop.example>\r\n"
    ),
    "non_ascii_recipient": corpus_message(
        "<a@example.net>", "Grüße", to="=?ISO-8859-1?Q?J=F6rg?= <joerg@example.org>"
    ),
    "large": corpus_message("<big@example.net>", "Fotos", "x" * 6000),
    "unrelated": corpus_message("<someone@example.com>", "Lunch?"),
}

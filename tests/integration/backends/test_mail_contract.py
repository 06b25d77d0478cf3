"""The mail backend contract (``mail/backend.py``): the same cases on the in-memory backend of the tests
(tests/support/mail/memory_mail.py) and on real servers through ``imap/backend.py``, so the memory backend
cannot drift from what a server does. Dovecot answers every case; Cyrus and Courier the cases where
servers differ (searching, copying, moving, expunging; MODSEQ where the server keeps it: not Courier).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from mail_imap_mcp import query
from mail_imap_mcp.credentials.logins import credentials_for
from mail_imap_mcp.imap.backend import ImapMail
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.mail.backend import MailBackend
from mail_imap_mcp.mail.errors import MailboxMissing
from mail_imap_mcp.mail.roles import INBOX, TRASH
from mail_imap_mcp.mail.write_errors import DestinationMissing
from tests.support.accounts import account_settings
from tests.support.clients.in_process import make_config
from tests.support.mail.memory_mail import MemoryMail
from tests.support.servers.imapserver import ImapServer

EVERY_SERVER = ["memory", "dovecot", "cyrus", "courier"]
MODSEQ_KEEPERS = ["memory", "dovecot", "cyrus"]


def message(subject: str, *, sender: str = "ann@example.org", body: str = "Hello.", extra: str = "") -> bytes:
    head = f"From: <{sender}>\r\nTo: <bob@example.org>\r\nSubject: {subject}\r\n{extra}"
    return f"{head}Message-ID: <{subject.replace(' ', '.')}@example.org>\r\n\r\n{body}\r\n".encode()


@dataclass
class Mail:
    """A backend under contract and its account's names: ``trash`` and ``archive`` exist."""

    backend: MailBackend
    trash: str
    archive: str
    missing: str
    #: Delete a mailbox and make it again, as another client would.
    recreate: Callable[[str], None]


@pytest.fixture
def mail(request: pytest.FixtureRequest) -> Iterator[Mail]:
    name: str = request.param
    if name == "memory":
        memory = MemoryMail({"Trash": TRASH, "Archive": None})

        def made_again(name: str) -> None:
            memory.delete(name)
            memory.create(name)

        yield Mail(memory, "Trash", "Archive", "Nowhere", made_again)
        return
    server: ImapServer = request.getfixturevalue(name)
    user = server.new_user()
    trash, archive = server.mailbox_name("Trash"), server.mailbox_name("Archive")
    with server.connect(user, tls=False, starttls=False) as client:
        for folder in (trash, archive):
            if not client.folder_exists(folder):
                client.create_folder(folder)
    account = make_config({"default": account_settings(server, user)}).accounts["default"]
    connection = AccountConnection("default", account, credentials=credentials_for("default", account))
    yield Mail(
        ImapMail(connection),
        trash,
        archive,
        server.mailbox_name("Nowhere"),
        lambda name: _recreated(server, user, name),
    )
    connection.close()


def _recreated(server: ImapServer, user: str, name: str) -> None:
    server.recreate_mailbox(user, name)


def on(*backends: str) -> pytest.MarkDecorator:
    return pytest.mark.parametrize("mail", backends or ("memory", "dovecot"), indirect=True)


@on()
def test_an_appended_message_is_counted_and_read_back_as_stored(mail: Mail) -> None:
    before = mail.backend.status(INBOX)
    raw = message("Stored")
    made = mail.backend.append(INBOX, raw, ["\\Seen"])
    after = mail.backend.status(INBOX)
    assert (made.uidvalidity, made.uid) == (before.uidvalidity, before.uidnext)
    assert (after.messages, after.unseen, after.uidnext) == (before.messages + 1, before.unseen, made.uid + 1)
    assert mail.backend.raw(INBOX, made.uid) == raw
    assert mail.backend.header(INBOX, made.uid) == raw[: raw.index(b"\r\n\r\n") + 4]
    assert mail.backend.raw(INBOX, made.uid + 1) is None


@on()
def test_an_unseen_message_counts_as_unseen(mail: Mail) -> None:
    mail.backend.append(INBOX, message("One"))
    mail.backend.append(INBOX, message("Two"), ["\\Seen"])
    assert mail.backend.status(INBOX).unseen == 1


@on()
def test_flags_and_keywords_are_added_removed_and_replaced(mail: Mail) -> None:
    uid = mail.backend.append(INBOX, message("Flags"), ["\\Seen"]).uid
    mail.backend.store(INBOX, [uid], "add", ["\\Flagged", "$Work"])
    assert mail.backend.flags(INBOX, [uid])[uid].flags == {"\\Seen", "\\Flagged", "$Work"}
    mail.backend.store(INBOX, [uid], "remove", ["\\Seen", "$Work"])
    assert mail.backend.flags(INBOX, [uid])[uid].flags == {"\\Flagged"}
    mail.backend.store(INBOX, [uid], "replace", ["\\Answered"])
    assert mail.backend.flags(INBOX, [uid])[uid].flags == {"\\Answered"}


@on()
def test_flags_of_messages_that_do_not_exist_are_left_out(mail: Mail) -> None:
    uid = mail.backend.append(INBOX, message("Here")).uid
    assert set(mail.backend.flags(INBOX, [uid, uid + 5])) == {uid}


@on()
def test_a_missing_mailbox_is_said_as_missing(mail: Mail) -> None:
    with pytest.raises(MailboxMissing):
        mail.backend.status(mail.missing)
    with pytest.raises(MailboxMissing):
        mail.backend.search(mail.missing, query.AllOf())


@on()
def test_the_mailboxes_name_their_roles(mail: Mail) -> None:
    roles = {box.name: box.special_use for box in mail.backend.mailboxes()}
    assert roles[INBOX] is None
    assert roles[mail.trash] == TRASH
    assert mail.archive in roles


def _seeded(mail: Mail) -> dict[str, int]:
    """Four messages in INBOX, by name."""
    backend = mail.backend
    return {
        "report": backend.append(INBOX, message("Quarterly report", body="Numbers inside."), ["\\Seen"]).uid,
        "lunch": backend.append(INBOX, message("Lunch", sender="carl@example.net"), ["$Later"]).uid,
        "list": backend.append(INBOX, message("Digest", extra="List-Id: <news.example.org>\r\n")).uid,
        "big": backend.append(INBOX, message("Big", body="x" * 4000), ["\\Flagged"]).uid,
    }


SEARCHES: list[tuple[str, query.Query, set[str]]] = [
    ("everything", query.AllOf(), {"report", "lunch", "list", "big"}),
    ("subject", query.Contains("subject", "report"), {"report"}),
    ("subject any case", query.Contains("subject", "QUARTERLY"), {"report"}),
    ("sender", query.Contains("from", "carl@"), {"lunch"}),
    ("body", query.Contains("body", "Numbers"), {"report"}),
    ("text", query.Contains("text", "Digest"), {"list"}),
    ("seen", query.HasFlag("seen"), {"report"}),
    ("unseen", query.HasFlag("seen", present=False), {"lunch", "list", "big"}),
    ("flagged", query.HasFlag("flagged"), {"big"}),
    ("keyword", query.HasKeyword("$Later"), {"lunch"}),
    ("no keyword", query.HasKeyword("$Later", present=False), {"report", "list", "big"}),
    ("header present", query.Header("List-Id"), {"list"}),
    ("header value", query.Header("List-Id", "news.example"), {"list"}),
    ("not", query.Not(query.Contains("subject", "Lunch")), {"report", "list", "big"}),
    ("any of", query.AnyOf((query.Contains("subject", "Lunch"), query.HasFlag("flagged"))), {"lunch", "big"}),
    (
        "all of",
        query.AllOf((query.HasFlag("seen", present=False), query.Not(query.Header("List-Id")))),
        {"lunch", "big"},
    ),
    ("larger", query.SizeBound("larger", 2000), {"big"}),
    ("smaller", query.SizeBound("smaller", 2000), {"report", "lunch", "list"}),
    (
        "since yesterday",
        query.DateBound("since", (datetime.now(UTC) - timedelta(days=1)).date()),
        {"report", "lunch", "list", "big"},
    ),
    ("before yesterday", query.DateBound("before", (datetime.now(UTC) - timedelta(days=1)).date()), set()),
]


@pytest.mark.parametrize("mail", EVERY_SERVER, indirect=True)
def test_a_search_answers_as_every_server_does(mail: Mail) -> None:
    uids = _seeded(mail)
    for name, wanted, expected in SEARCHES:
        found = mail.backend.search(INBOX, wanted)
        assert found == sorted(uids[key] for key in expected), name


@pytest.mark.parametrize("mail", EVERY_SERVER, indirect=True)
def test_a_copy_lands_in_the_destination_and_leaves_the_source(mail: Mail) -> None:
    first = mail.backend.append(INBOX, message("First")).uid
    second = mail.backend.append(INBOX, message("Second"), ["$Kept"]).uid
    before = mail.backend.status(mail.archive)
    copied = mail.backend.copy(INBOX, [first, second], mail.archive)
    assert copied.uidvalidity == before.uidvalidity
    assert sorted(copied.uids) == [first, second]
    assert sorted(copied.uids.values()) == [before.uidnext, before.uidnext + 1]
    assert mail.backend.status(INBOX).messages == 2
    assert mail.backend.raw(mail.archive, copied.uids[first]) == message("First")
    assert "$Kept" in mail.backend.flags(mail.archive, [copied.uids[second]])[copied.uids[second]].flags


@pytest.mark.parametrize("mail", EVERY_SERVER, indirect=True)
def test_a_move_leaves_nothing_behind(mail: Mail) -> None:
    uid = mail.backend.append(INBOX, message("Moving")).uid
    kept = mail.backend.append(INBOX, message("Staying")).uid
    moved = mail.backend.move(INBOX, [uid], mail.trash)
    assert mail.backend.search(INBOX, query.AllOf()) == [kept]
    assert mail.backend.raw(mail.trash, moved.uids[uid]) == message("Moving")


@pytest.mark.parametrize("mail", EVERY_SERVER, indirect=True)
def test_a_copy_to_a_missing_mailbox_creates_nothing(mail: Mail) -> None:
    uid = mail.backend.append(INBOX, message("Nowhere")).uid
    with pytest.raises(DestinationMissing):
        mail.backend.copy(INBOX, [uid], mail.missing)
    assert mail.missing not in {box.name for box in mail.backend.mailboxes()}


@pytest.mark.parametrize("mail", EVERY_SERVER, indirect=True)
def test_an_expunge_removes_exactly_the_given_messages(mail: Mail) -> None:
    gone = mail.backend.append(INBOX, message("Gone")).uid
    marked = mail.backend.append(INBOX, message("Marked"), ["\\Deleted"]).uid
    mail.backend.expunge(INBOX, [gone])
    assert mail.backend.search(INBOX, query.AllOf()) == [marked]


@pytest.mark.parametrize("mail", EVERY_SERVER, indirect=True)
def test_a_uid_is_never_given_twice(mail: Mail) -> None:
    first = mail.backend.append(INBOX, message("First")).uid
    mail.backend.expunge(INBOX, [first])
    assert mail.backend.append(INBOX, message("Second")).uid > first
    assert mail.backend.status(INBOX).uidnext > first + 1


@pytest.mark.parametrize("mail", MODSEQ_KEEPERS, indirect=True)
def test_a_flag_change_raises_the_modseq_of_that_message_alone(mail: Mail) -> None:
    changed = mail.backend.append(INBOX, message("Changed")).uid
    quiet = mail.backend.append(INBOX, message("Quiet")).uid
    start = mail.backend.status(INBOX).highestmodseq
    assert start is not None
    before = mail.backend.flags(INBOX, [changed, quiet])
    mail.backend.store(INBOX, [changed], "add", ["\\Seen"])
    after = mail.backend.flags(INBOX, [changed, quiet])
    assert after[quiet].modseq == before[quiet].modseq
    assert (after[changed].modseq or 0) > start
    since = mail.backend.changed_since(INBOX, start)
    assert set(since.flags) == {changed} and "\\Seen" in since.flags[changed].flags
    assert since.highestmodseq >= (after[changed].modseq or 0)
    assert mail.backend.changed_since(INBOX, since.highestmodseq).flags == {}


@pytest.mark.parametrize("mail", EVERY_SERVER, indirect=True)
def test_a_mailbox_made_again_has_another_uidvalidity_and_none_of_its_messages(mail: Mail) -> None:
    mail.backend.append(mail.archive, message("Before"))
    before = mail.backend.status(mail.archive)
    mail.recreate(mail.archive)
    after = mail.backend.status(mail.archive)
    assert after.uidvalidity != before.uidvalidity
    assert (after.messages, mail.backend.search(mail.archive, query.AllOf())) == (0, [])


WITH_ATTACHMENT = (
    b"From: Ann <ann@example.org>\r\nTo: Bob <bob@example.org>, carl@example.net\r\nCc: dora@example.org\r\n"
    b"Subject: The plan\r\nDate: Tue, 03 Mar 2026 10:00:00 +0100\r\nMessage-ID: <plan@example.org>\r\n"
    b"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b1\r\n\r\n"
    b"--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHere is the plan for Monday, see the sheet.\r\n"
    b"--b1\r\nContent-Type: application/pdf; name=plan.pdf\r\nContent-Disposition: attachment; filename=plan.pdf\r\n"
    b"Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--b1--\r\n"
)
PLAIN = (
    b"From: <eve@example.org>\r\nTo: <bob@example.org>\r\nSubject: =?utf-8?q?Gr=C3=BC=C3=9Fe?=\r\n"
    b"Date: Wed, 04 Mar 2026 08:30:00 +0000\r\nMessage-ID: <hello@example.org>\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n"
    b"Sch=C3=B6ne Gr=C3=BC=C3=9Fe aus dem S=C3=BCden.\r\n"
)


@pytest.mark.parametrize("mail", EVERY_SERVER, indirect=True)
def test_a_summary_says_what_every_server_says_of_a_message(mail: Mail) -> None:
    plan = mail.backend.append(INBOX, WITH_ATTACHMENT, ["\\Seen", "$Work"]).uid
    hello = mail.backend.append(INBOX, PLAIN).uid
    first, second = mail.backend.summaries(INBOX, [hello, plan, plan + 7], 200)
    assert (first.uid, second.uid) == (hello, plan)
    assert (second.subject, second.from_, second.header_message_id) == (
        "The plan",
        "Ann <ann@example.org>",
        "<plan@example.org>",
    )
    assert (second.date, second.has_attachments, second.attachment_names) == (
        "2026-03-03T09:00:00Z",
        True,
        ("plan.pdf",),
    )
    assert second.snippet == "Here is the plan for Monday, see the sheet."
    # \Recent is the first session's to see a message (Dovecot, Cyrus): no flag a backend keeps.
    assert set(second.flags) - {"\\Recent"} == {"\\Seen", "$Work"} and second.size_bytes == len(
        WITH_ATTACHMENT
    )
    assert (first.subject, first.snippet, first.has_attachments) == (
        "Grüße",
        "Schöne Grüße aus dem Süden.",
        False,
    )
    assert first.message_id.endswith(f":{INBOX}:{mail.backend.status(INBOX).uidvalidity}:{hello}")
    assert mail.backend.summaries(INBOX, [hello], 0)[0].snippet is None

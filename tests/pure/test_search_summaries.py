"""A search page's summaries (services/search_summaries.py) on mail kept in memory
(tests/support/mail/memory_mail.py): every mailbox asked at once, the page in its merge order, a mailbox whose
read failed said as an issue while the others stand (unless the page is strict or the failure ends the
call), each message once, and the sort key a page learns from its last summary."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from email.utils import format_datetime

import pytest

from mail_imap_mcp.envelope import Issue
from mail_imap_mcp.mail.cursors import StreamState
from mail_imap_mcp.mail.errors import MailboxGone, MailError, UidValidityChanged
from mail_imap_mcp.mail.records import OrderedPage, SummaryRecord
from mail_imap_mcp.mail.roles import INBOX
from mail_imap_mcp.services.search_summaries import learn_keys, once_each, page_summaries
from tests.support.mail.memory_mail import MemoryMail

DAY = datetime(2026, 3, 3, 9, 0, tzinfo=UTC)


@dataclass
class Batch:
    messages: list[SummaryRecord]
    issues: list[Issue] = field(default_factory=list)


@dataclass
class Reader:
    """Reads every mailbox a page names from memory at once; ``failing``: the failure of a mailbox."""

    mail: MemoryMail
    failing: dict[str, Exception] = field(default_factory=dict)
    asked: list[list[str]] = field(default_factory=list)

    def __call__(self, wanted: Sequence[tuple[str, int, list[int]]]) -> list[Batch | Exception]:
        self.asked.append([mailbox for mailbox, _, _ in wanted])
        return [
            self.failing.get(mailbox) or Batch(self.mail.summaries(mailbox, uids, 0))
            for mailbox, _, uids in wanted
        ]


def mailbox_alone(failure: Exception) -> Exception | None:
    """As the IMAP layer judges: a mailbox gone or made again is that mailbox's failure alone."""
    return failure if isinstance(failure, MailboxGone | UidValidityChanged) else None


def message(subject: str, hour: int) -> bytes:
    date = format_datetime(DAY.replace(hour=hour))
    return f"From: <a@example.org>\r\nSubject: {subject}\r\nDate: {date}\r\n\r\nText.\r\n".encode()


def two_mailboxes() -> tuple[MemoryMail, list[tuple[str, int, int]]]:
    """INBOX and Archive, three messages each; the picks interleave them, newest first."""
    mail = MemoryMail({"Archive": None})
    picks = []
    for hour in range(6):
        box = INBOX if hour % 2 == 0 else "Archive"
        made = mail.append(box, message(f"{box} {hour}", hour))
        picks.append((box, made.uidvalidity, made.uid))
    return mail, picks[::-1]


def subjects(messages: list[SummaryRecord]) -> list[str | None]:
    return [summary.subject for summary in messages]


def test_the_page_is_in_its_merge_order_and_every_mailbox_is_asked_once_together() -> None:
    mail, picks = two_mailboxes()
    reader = Reader(mail)
    messages, issues = page_summaries(reader, OrderedPage(picks, 6, None), False, mailbox_alone)
    assert subjects(messages) == ["Archive 5", "INBOX 4", "Archive 3", "INBOX 2", "Archive 1", "INBOX 0"]
    assert (issues, reader.asked) == ([], [["Archive", INBOX]])


def test_a_message_gone_since_it_was_picked_is_left_out() -> None:
    mail, picks = two_mailboxes()
    mail.expunge(INBOX, [picks[1][2]])
    messages, issues = page_summaries(Reader(mail), OrderedPage(picks, 6, None), False, mailbox_alone)
    assert "INBOX 4" not in subjects(messages) and len(messages) == 5 and issues == []


def test_a_mailbox_whose_read_failed_is_an_issue_and_the_others_stand() -> None:
    mail, picks = two_mailboxes()
    reader = Reader(mail, {"Archive": MailboxGone("default", "Archive")})
    messages, issues = page_summaries(reader, OrderedPage(picks, 6, None), False, mailbox_alone)
    assert subjects(messages) == ["INBOX 4", "INBOX 2", "INBOX 0"]
    assert [(i.code, i.stage, i.retryable) for i in issues] == [("fetch_failed", "fetch_headers", True)]
    assert "'Archive'" in issues[0].message and "3 message(s)" in issues[0].message


def test_a_strict_page_fails_with_the_mailbox() -> None:
    mail, picks = two_mailboxes()
    gone = MailboxGone("default", "Archive")
    with pytest.raises(MailboxGone) as raised:
        page_summaries(Reader(mail, {"Archive": gone}), OrderedPage(picks, 6, None), True, mailbox_alone)
    assert raised.value is gone


def test_a_failure_that_is_not_the_mailboxs_alone_ends_the_page() -> None:
    mail, picks = two_mailboxes()
    with pytest.raises(MailError):
        page_summaries(
            Reader(mail, {INBOX: MailError("time is up")}), OrderedPage(picks, 6, None), False, mailbox_alone
        )


def test_the_issues_of_messages_a_mailbox_could_not_read_are_the_pages() -> None:
    mail, picks = two_mailboxes()
    said = Issue(code="fetch_failed", stage="fetch_headers", message="one message", retryable=True)

    def reader(wanted: Sequence[tuple[str, int, list[int]]]) -> list[Batch | Exception]:
        return [
            Batch(mail.summaries(box, uids, 0), [said] if box == INBOX else []) for box, _, uids in wanted
        ]

    messages, issues = page_summaries(reader, OrderedPage(picks, 6, None), False, mailbox_alone)
    assert (len(messages), issues) == (6, [said])


def test_an_empty_page_reads_nothing_it_need_not() -> None:
    reader = Reader(MemoryMail())
    assert page_summaries(reader, OrderedPage([], 0, None), False, mailbox_alone) == ([], [])


def test_a_message_shown_in_several_mailboxes_is_listed_once_at_its_first_place() -> None:
    mail, picks = two_mailboxes()
    messages = mail.summaries(INBOX, [uid for box, _, uid in picks if box == INBOX], 0)
    shown = [
        replace(messages[0], identity=7),
        replace(messages[1], identity=7),
        replace(messages[2], identity=None),
    ]
    kept, left_out = once_each(shown)
    assert (kept, left_out) == ([shown[0], shown[2]], 1)


def test_messages_without_an_identity_are_all_kept() -> None:
    mail, _ = two_mailboxes()
    messages = mail.summaries(INBOX, [1, 2, 3], 0)
    assert once_each(messages) == (messages, 0)


def test_a_stream_without_its_last_key_learns_it_from_the_date_of_its_last_summary() -> None:
    mail, picks = two_mailboxes()
    inbox = [uid for box, _, uid in picks if box == INBOX]
    stream = StreamState(INBOX, after=[inbox[-1]])
    page = OrderedPage(picks, 6, stream)
    learn_keys(page, mail.summaries(INBOX, inbox, 0), "date")
    assert stream.key == int(DAY.replace(hour=0).timestamp())


@pytest.mark.parametrize("sort", ["arrival", "relevance"])
def test_only_a_date_sorted_page_learns_a_key(sort: str) -> None:
    mail, picks = two_mailboxes()
    stream = StreamState(INBOX, after=[picks[-1][2]])
    learn_keys(OrderedPage(picks, 6, stream), mail.summaries(INBOX, [picks[-1][2]], 0), sort)
    assert stream.key is None


def test_a_key_already_known_is_kept() -> None:
    mail, picks = two_mailboxes()
    stream = StreamState(INBOX, after=[picks[-1][2]], key=42)
    learn_keys(OrderedPage(picks, 6, stream), mail.summaries(INBOX, [picks[-1][2]], 0), "date")
    assert stream.key == 42

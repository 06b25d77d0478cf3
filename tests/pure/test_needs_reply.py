"""``needs_reply``'s check of the Sent mailbox (services/needs_reply.py and mail/replies.py) on mail kept in
memory (tests/support/mail/memory_mail.py): which Sent mailbox is searched, which of a page's messages a Sent
message answers (it names them, is addressed to their sender and is not older than they are: a reused
Message-ID hides nothing, docs/security.md L1), and what the page says when it cannot tell."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from mail_imap_mcp.call import Call
from mail_imap_mcp.mail.errors import CommandRefused, Refusal, UidValidityChanged
from mail_imap_mcp.mail.records import SummaryRecord
from mail_imap_mcp.mail.replies import CLOCK_SKEW, Answer, Candidate, answer_of, first_message_id
from mail_imap_mcp.mail.roles import INBOX, SENT
from mail_imap_mcp.query import AllOf, Query
from mail_imap_mcp.services.needs_reply import Answered, answered_from_sent
from tests.support.mail.memory_mail import MemoryCall, MemoryMail

ME: dict[str, object] = {"addresses": ["me@example.org"]}
ASKED = "Tue, 03 Mar 2026 10:00:00 +0000"


def question(
    number: int, sender: str = "ann@example.org", *, date: str = ASKED, message_id: bool = True
) -> bytes:
    named = f"Message-ID: <q{number}@example.org>\r\n" if message_id else ""
    return (
        f"From: <{sender}>\r\nTo: <me@example.org>\r\nSubject: Question {number}\r\nDate: {date}\r\n{named}\r\n"
        "Can you?\r\n"
    ).encode()


def reply(to: str, number: int, *, date: str = "Tue, 03 Mar 2026 12:00:00 +0000") -> bytes:
    return (
        f"From: <me@example.org>\r\nTo: <{to}>\r\nSubject: Re: Question {number}\r\nDate: {date}\r\n"
        f"In-Reply-To: <q{number}@example.org>\r\n\r\nYes.\r\n"
    ).encode()


@dataclass
class Account:
    call: MemoryCall
    mail: MemoryMail

    def page(self) -> list[SummaryRecord]:
        uids = self.mail.search(INBOX, AllOf())
        return self.mail.summaries(INBOX, uids, 0)

    def answered(self, messages: Sequence[SummaryRecord] | None = None) -> tuple[set[int], Answered]:
        found = answered_from_sent(
            cast(Call, self.call), "default", self.page() if messages is None else messages
        )
        numbers = {
            int(m.subject.split()[-1]) for m in self.page() if m.message_id in found.message_ids and m.subject
        }
        return numbers, found


def account(boxes: dict[str, str | None] | None = None, **settings: Any) -> Account:
    mail = MemoryMail({"Sent": SENT} if boxes is None else boxes)
    return Account(MemoryCall({"default": mail}, {"default": {**ME, **settings}}), mail)


def test_a_question_answered_from_sent_is_said_answered_and_the_others_not() -> None:
    mine = account()
    for number in (1, 2):
        mine.mail.append(INBOX, question(number))
    mine.mail.append("Sent", reply("ann@example.org", 1))
    numbers, found = mine.answered()
    assert (numbers, found.issues, found.warnings) == ({1}, [], [])


def test_a_reused_message_id_addressed_to_another_hides_nothing() -> None:
    mine = account()
    mine.mail.append(INBOX, question(1, "mallory@example.org"))
    mine.mail.append("Sent", reply("ann@example.org", 1))
    assert mine.answered()[0] == set()


def test_the_senders_address_is_compared_whatever_its_case() -> None:
    mine = account()
    mine.mail.append(INBOX, question(1, "Ann@Example.org"))
    mine.mail.append("Sent", reply("ann@example.org", 1))
    assert mine.answered()[0] == {1}


def test_an_answer_dated_before_the_question_beyond_the_clock_skew_answers_nothing() -> None:
    mine = account()
    mine.mail.append(INBOX, question(1))
    mine.mail.append("Sent", reply("ann@example.org", 1, date="Mon, 02 Mar 2026 10:00:00 +0000"))
    assert mine.answered()[0] == set()


def test_an_answer_a_little_before_the_question_within_the_clock_skew_answers_it() -> None:
    mine = account()
    mine.mail.append(INBOX, question(1))
    mine.mail.append("Sent", reply("ann@example.org", 1, date="Tue, 03 Mar 2026 09:55:00 +0000"))
    assert mine.answered()[0] == {1}


def test_the_mailbox_marked_sent_is_searched_before_one_of_the_usual_name() -> None:
    mine = account({"Sent": None, "Gesendet": SENT})
    mine.mail.append(INBOX, question(1))
    mine.mail.append(INBOX, question(2))
    mine.mail.append("Sent", reply("ann@example.org", 1))
    mine.mail.append("Gesendet", reply("ann@example.org", 2))
    assert mine.answered()[0] == {2}


def test_a_mailbox_of_the_usual_name_is_searched_where_none_is_marked() -> None:
    mine = account({"Sent": None})
    mine.mail.append(INBOX, question(1))
    mine.mail.append("Sent", reply("ann@example.org", 1))
    assert mine.answered()[0] == {1}


def test_the_sent_mailbox_setting_names_the_mailbox_where_none_is_marked() -> None:
    mine = account({"Postausgang": None}, sent_mailbox="Postausgang")
    mine.mail.append(INBOX, question(1))
    mine.mail.append("Postausgang", reply("ann@example.org", 1))
    assert mine.answered()[0] == {1}


def test_without_a_sent_mailbox_only_answered_flags_tell_and_the_setting_is_named() -> None:
    mine = account({"Projects": None})
    mine.mail.append(INBOX, question(1))
    numbers, found = mine.answered()
    assert numbers == set()
    assert len(found.warnings) == 1 and "no Sent mailbox was found" in found.warnings[0]
    assert "sent_mailbox" in found.warnings[0]


def test_an_account_naming_no_addresses_of_its_own_is_warned_of() -> None:
    mine = account(addresses=[])
    mine.mail.append(INBOX, question(1))
    mine.mail.append("Sent", reply("ann@example.org", 1))
    numbers, found = mine.answered()
    assert numbers == {1}
    assert any("names no addresses of its own" in warning for warning in found.warnings)


def test_a_page_without_message_ids_does_not_reach_the_mail() -> None:
    mine = account()
    mine.mail.append(INBOX, question(1, message_id=False))
    page = mine.page()
    reached = mine.call.reached
    numbers, found = mine.answered(page)
    assert (numbers, found.issues, found.warnings, mine.call.reached) == (set(), [], [], reached)


class RefusingSent(MemoryMail):
    """Mail whose server refuses the search of Sent."""

    def search(self, mailbox: str, wanted: Query) -> list[int]:
        if mailbox == "Sent":
            raise CommandRefused("SEARCH", mailbox, Refusal.OTHER, "not now")
        return super().search(mailbox, wanted)


def test_a_sent_mailbox_that_cannot_be_searched_is_an_issue_and_the_page_stands() -> None:
    mail = RefusingSent({"Sent": SENT})
    mine = Account(MemoryCall({"default": mail}, {"default": ME}), mail)
    mail.append(INBOX, question(1))
    numbers, found = mine.answered()
    assert numbers == set()
    assert [(i.stage, i.code, i.retryable) for i in found.issues] == [("search", "sent_not_checked", True)]


class RecreatedSent(MemoryMail):
    """Mail whose Sent mailbox another client made again meanwhile: said to the caller, not as an issue."""

    def answered(self, sent: Any, candidates: Sequence[Candidate]) -> set[str] | None:
        raise UidValidityChanged(1, 2, "Sent")


def test_an_error_for_the_caller_is_raised_not_worded_as_an_issue() -> None:
    mail = RecreatedSent({"Sent": SENT})
    mine = Account(MemoryCall({"default": mail}, {"default": ME}), mail)
    mail.append(INBOX, question(1))
    with pytest.raises(UidValidityChanged):
        mine.answered()


@pytest.mark.parametrize(
    ("value", "found"),
    [("<a@b>", "<a@b>"), ("  <a@b> (comment)", "<a@b>"), ("no id", None), (None, None), ("<a b@c>", None)],
)
def test_the_first_message_id_of_a_header_value(value: str | None, found: str | None) -> None:
    assert first_message_id(value) == found


SAVED = datetime(2026, 3, 3, 12, 0, tzinfo=UTC)


def test_a_question_that_arrived_after_the_answer_was_saved_is_not_answered_by_it() -> None:
    answer = answer_of(reply("ann@example.org", 1), SAVED)
    before = Candidate("k", "<q1@example.org>", "ann@example.org", None, SAVED - timedelta(minutes=1))
    after = Candidate("k", "<q1@example.org>", "ann@example.org", None, SAVED + timedelta(minutes=1))
    assert (answer.answers(before), answer.answers(after)) == (True, False)


def test_an_answer_without_a_date_is_dated_when_it_was_saved() -> None:
    raw = b"To: <ann@example.org>\r\nIn-Reply-To: <q1@example.org>\r\n\r\n"
    assert answer_of(raw, SAVED).date == SAVED
    assert answer_of(raw, None).date is None


def test_every_recipient_and_every_named_id_counts() -> None:
    raw = (
        b"To: <a@example.org>\r\nCc: B <b@example.org>\r\nBcc: c@example.org\r\n"
        b"In-Reply-To: <one@x>\r\nReferences: <zero@x> <one@x>\r\n\r\n"
    )
    assert answer_of(raw, None) == Answer(
        frozenset({"<one@x>", "<zero@x>"}),
        frozenset({"a@example.org", "b@example.org", "c@example.org"}),
        None,
        None,
    )


def test_the_clock_skew_is_the_bound_of_an_earlier_dated_answer() -> None:
    answer = Answer(frozenset({"<q@x>"}), frozenset({"ann@x"}), SAVED - CLOCK_SKEW, None)
    assert answer.answers(Candidate("k", "<q@x>", "ann@x", SAVED))
    assert not answer.answers(Candidate("k", "<q@x>", "ann@x", SAVED + timedelta(seconds=1)))

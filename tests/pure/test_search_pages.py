"""The search service's own logic (services/search.py, search_position.py) on mail kept in memory
(tests/support/mail/memory_mail.py, its page reads in memory_pages.py): which mailboxes a page searches,
how pages follow one another by their cursors (every message once, in order, whatever the limit and
however arrival times tie), and the bounds a page keeps. What IMAP does of each read is held to the same
cases by tests/support/shared/mail_contract.py."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any, Literal, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mail_imap_mcp.call import Call
from mail_imap_mcp.mail.cursors import CursorError, CursorMismatch, MailboxesChanged
from mail_imap_mcp.mail.errors import MailboxMissing
from mail_imap_mcp.mail.pages import place
from mail_imap_mcp.mail.records import SearchPage
from mail_imap_mcp.mail.roles import INBOX, JUNK, TRASH
from mail_imap_mcp.query import AllOf, Contains, HasAttachment, Query
from mail_imap_mcp.services.search import MAX_MAILBOXES, search_page
from mail_imap_mcp.services.search_backend import UNRANKED
from tests.support.mail.memory_mail import MemoryCall, MemoryMail
from tests.support.mail.memory_pages import MemoryPageReads

START = datetime(2026, 3, 2, 9, tzinfo=UTC)
EVERYTHING: Query = AllOf()
#: The filters' fingerprints of two searches (a cursor keeps 12 hex digits of it).
FILTERS, OTHER_FILTERS = "a1b2c3d4e5f6", "6f5e4d3c2b1a"


@dataclass(frozen=True)
class Args:
    """imap_search_messages' arguments as the search service reads them (``SearchArgs``)."""

    mailbox: str = INBOX
    mailboxes: list[str] | None = None
    sort: Literal["arrival", "date", "relevance"] = "arrival"
    limit: int = 10
    snippet_chars: int = 0
    cursor: str | None = None
    account_id: str = "default"


def message(subject: str, *, written: datetime | None = None, attachment: bool = False) -> bytes:
    head = f"From: <ann@example.org>\r\nSubject: {subject}\r\nMessage-ID: <{subject.replace(' ', '.')}@x>\r\n"
    if written is not None:
        head += f"Date: {format_datetime(written)}\r\n"
    if not attachment:
        return f"{head}\r\nText of {subject}.\r\n".encode()
    return (
        f"{head}MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n"
        f"Content-Type: text/plain\r\n\r\nText of {subject}.\r\n--b\r\nContent-Type: application/pdf\r\n"
        "Content-Disposition: attachment; filename=report.pdf\r\n\r\nAAAA\r\n--b--\r\n"
    ).encode()


def arrive(mail: MemoryMail, mailbox: str, subject: str, arrived: datetime, **kind: Any) -> int:
    """Put a message into ``mailbox`` as having arrived at ``arrived``; its UID."""
    uid = mail.append(mailbox, message(subject, **kind)).uid
    mail.kept(mailbox).messages[uid].arrived = arrived
    return uid


def call_on(mail: MemoryMail, **server: object) -> MemoryCall:
    return MemoryCall({"default": mail}, server=server)


def page(
    call: MemoryCall, args: Args, search: Query = EVERYTHING, digest: str = FILTERS, **kw: Any
) -> SearchPage:
    return search_page(cast(Call, call), args, search, digest, **kw)


def walk(call: MemoryCall, args: Args, search: Query = EVERYTHING) -> Iterator[SearchPage]:
    """Every page of the search, each from the cursor of the one before."""
    while True:
        found = page(call, args, search)
        yield found
        if found.next_cursor is None:
            return
        args = replace(args, cursor=found.next_cursor)


def subjects(pages: Iterator[SearchPage] | list[SearchPage]) -> list[str]:
    return [m.subject or "" for found in pages for m in found.messages]


def mailboxes_mail(times: dict[str, list[datetime]]) -> tuple[MemoryMail, list[str]]:
    """Mail with messages arrived at ``times`` in each mailbox; their subjects newest first, as one
    search of them all lists them (ties by the mailbox's place, then UID)."""
    mail = MemoryMail({name: None for name in times if name != INBOX})
    placed = []
    for index, (name, arrivals) in enumerate(times.items()):
        for n, arrived in enumerate(arrivals):
            subject = f"{name} {n}"
            uid = arrive(mail, name, subject, arrived)
            placed.append((place(int(arrived.timestamp()), index, uid), subject))
    return mail, [subject for _, subject in sorted(placed)]


@pytest.mark.parametrize("limit", [1, 2, 3, 7, 10])
def test_one_mailbox_pages_newest_first_each_message_once(limit: int) -> None:
    mail = MemoryMail()
    for n in range(7):
        arrive(mail, INBOX, f"Message {n}", START + timedelta(hours=n))
    pages = list(walk(call_on(mail), Args(limit=limit)))
    assert subjects(pages) == [f"Message {n}" for n in reversed(range(7))]
    assert [p.total for p in pages] == [7] * len(pages)
    assert [p.returned_before for p in pages] == list(range(0, 7, limit))[: len(pages)]


def test_date_order_follows_what_the_messages_say_not_their_arrival() -> None:
    mail = MemoryMail()
    for n, day in enumerate([3, 1, 4, 2]):
        uid = mail.append(INBOX, message(f"Written {day}", written=START + timedelta(days=day))).uid
        mail.kept(INBOX).messages[uid].arrived = START + timedelta(hours=n)
    assert subjects(walk(call_on(mail), Args(sort="date", limit=3))) == [
        "Written 4",
        "Written 3",
        "Written 2",
        "Written 1",
    ]


def test_every_mailbox_is_merged_newest_first_without_trash_and_junk() -> None:
    mail, _ = mailboxes_mail(
        {INBOX: [START, START + timedelta(hours=4)], "Archive": [START + timedelta(hours=2)]}
    )
    for role, name in ((TRASH, "Trash"), (JUNK, "Junk")):
        mail.create(name, role)
        arrive(mail, name, f"{name} 0", START + timedelta(hours=9))
    pages = list(walk(call_on(mail), Args(mailbox="*", limit=2)))
    assert subjects(pages) == ["INBOX 1", "Archive 0", "INBOX 0"]
    assert pages[0].total == 3 and pages[0].mailboxes == [INBOX, "Archive"]


@settings(max_examples=60, deadline=None)
@given(
    arrivals=st.lists(st.lists(st.integers(0, 5), max_size=6), min_size=1, max_size=4),
    limit=st.integers(1, 5),
)
def test_pages_of_several_mailboxes_list_each_message_once_in_order(
    arrivals: list[list[int]], limit: int
) -> None:
    """Arrival times tie often (hours 0 to 5): the order breaks ties by the mailbox's place, then UID,
    and the position a cursor keeps lands on that order whatever the limit."""
    names = [INBOX, *(f"Box {n}" for n in range(1, len(arrivals)))]
    times = {
        name: [START + timedelta(hours=h) for h in hours] for name, hours in zip(names, arrivals, strict=True)
    }
    mail, expected = mailboxes_mail(times)
    pages = list(walk(call_on(mail), Args(mailbox="", mailboxes=names, limit=limit)))
    assert subjects(pages) == expected
    assert all(len(p.messages) <= limit for p in pages) and pages[0].total == len(expected)


def test_empty_mailboxes_are_searched_without_being_read(monkeypatch: pytest.MonkeyPatch) -> None:
    mail, _ = mailboxes_mail({INBOX: [START], "Empty": [], "Archive": [START]})
    searched: list[str] = []
    search = mail.search
    monkeypatch.setattr(mail, "search", lambda name, query: searched.append(name) or search(name, query))
    found = page(call_on(mail), Args(mailbox="*"))
    assert sorted(found.mailboxes) == ["Archive", "Empty", INBOX] and sorted(searched) == ["Archive", INBOX]


def test_next_pages_list_no_mailbox_again(monkeypatch: pytest.MonkeyPatch) -> None:
    mail, expected = mailboxes_mail({INBOX: [START, START + timedelta(hours=1)], "Archive": [START]})
    listed: list[int] = []
    listing = MemoryPageReads.listing
    monkeypatch.setattr(MemoryPageReads, "listing", lambda reads: listed.append(1) or listing(reads))
    assert subjects(walk(call_on(mail), Args(mailbox="*", limit=1))) == expected
    assert len(listed) == 1


def test_a_search_of_more_mailboxes_than_the_bound_covers_the_first_and_says_so() -> None:
    mail = MemoryMail({f"Box {n:03}": None for n in range(MAX_MAILBOXES + 5)})
    found = page(call_on(mail), Args(mailbox="*"))
    assert [issue.code for issue in found.listed_issues] == ["mailboxes_cut"]
    assert len(found.mailboxes) == MAX_MAILBOXES and found.mailboxes[0] == INBOX


def test_the_limit_and_the_snippet_are_bounded_by_the_settings() -> None:
    mail = MemoryMail()
    for n in range(6):
        arrive(mail, INBOX, f"Long message {n}", START + timedelta(hours=n))
    found = page(call_on(mail, max_search_limit=4, max_snippet_chars=8), Args(limit=50, snippet_chars=400))
    assert len(found.messages) == 4 and found.next_cursor is not None
    assert all(m.snippet is not None and len(m.snippet) <= 8 for m in found.messages)


def test_a_cursor_of_another_search_or_garbled_is_refused() -> None:
    mail, _ = mailboxes_mail({INBOX: [START, START], "Archive": [START]})
    call = call_on(mail)
    one = page(call, Args(limit=1)).next_cursor
    several = page(call, Args(mailbox="*", limit=1)).next_cursor
    assert one is not None and several is not None
    for args, digest in [
        (Args(limit=1, cursor=one), OTHER_FILTERS),
        (Args(mailbox="Archive", limit=1, cursor=one), FILTERS),
        (Args(limit=1, cursor=several), FILTERS),
        (Args(mailbox="*", limit=1, sort="date", cursor=several), FILTERS),
    ]:
        with pytest.raises(CursorMismatch):
            page(call, args, digest=digest)
    with pytest.raises(CursorError):
        page(call, Args(cursor="garbled"))


def test_a_missing_mailbox_fails_a_search_of_it_alone_and_is_said_among_others() -> None:
    mail, _ = mailboxes_mail({INBOX: [START]})
    with pytest.raises(MailboxMissing):
        page(call_on(mail), Args(mailbox="Nowhere"))
    found = page(call_on(mail), Args(mailbox="", mailboxes=[INBOX, "Nowhere"]))
    assert subjects([found]) == ["INBOX 0"]
    assert [(name, type(failure)) for name, failure in found.failed] == [("Nowhere", MailboxMissing)]


def test_a_mailbox_made_again_between_pages_ends_the_walk() -> None:
    mail, _ = mailboxes_mail({INBOX: [START, START], "Archive": [START]})
    call = call_on(mail)
    first = page(call, Args(mailbox="*", limit=1))
    mail.delete("Archive")
    mail.create("Archive")
    with pytest.raises(MailboxesChanged):
        page(call, Args(mailbox="*", limit=1, cursor=first.next_cursor))


def test_relevance_without_an_index_is_newest_first_and_says_so() -> None:
    mail, expected = mailboxes_mail({INBOX: [START, START + timedelta(hours=1)]})
    found = page(call_on(mail), Args(sort="relevance"), Contains("text", "Text"), ranked_query=True)
    assert subjects([found]) == expected and found.warnings == [UNRANKED]


def test_attachment_tests_are_judged_from_each_candidates_structure() -> None:
    mail = MemoryMail({"Archive": None})
    hours = itertools.count()
    for n in range(9):
        for name in (INBOX, "Archive"):
            at = START + timedelta(hours=next(hours))
            arrive(mail, name, f"{name} {n}", at, attachment=n % 3 == 0)
    pages = list(walk(call_on(mail), Args(mailbox="*", limit=2), HasAttachment()))
    assert subjects(pages) == ["Archive 6", "INBOX 6", "Archive 3", "INBOX 3", "Archive 0", "INBOX 0"]


def test_a_page_reaches_the_mail_once_its_reads_run_together() -> None:
    mail, _ = mailboxes_mail({INBOX: [START], "Archive": [START]})
    call = call_on(mail)
    page(call, Args(mailbox="*"))
    assert call.reached == 1

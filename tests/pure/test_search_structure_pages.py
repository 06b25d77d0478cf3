"""A page whose query tests attachments (services/search_structure.py ``judged``), read page after page
from mail kept in memory (tests/support/mail/memory_mail.py): the candidates come newest first, their summaries
from the backend, and each page is judged by its attachments. Whatever the spacing of the matches and the
page's limit, no match before the next cursor is skipped or taken twice, and a page stops at the bound of
candidates judged, saying so."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import cast

import pytest

from mail_imap_mcp.mail.cursors import PositionCursor, StreamCursor
from mail_imap_mcp.mail.records import OrderedPage
from mail_imap_mcp.mail.roles import INBOX
from mail_imap_mcp.query import AllOf, Filename, HasAttachment, Not, Query
from mail_imap_mcp.query.structure import structure_holds
from mail_imap_mcp.services.search_structure import MAX_STRUCTURE_CANDIDATES, PageRead, judged
from tests.support.mail.memory_mail import MemoryMail


def message(number: int, attachment: str | None) -> bytes:
    head = f"From: <ann@example.org>\r\nSubject: Message {number}\r\nMessage-ID: <m{number}@example.org>\r\n"
    if attachment is None:
        return f"{head}\r\nText {number}.\r\n".encode()
    return (
        f"{head}MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n"
        f"Content-Type: text/plain\r\n\r\nText {number}.\r\n--b\r\nContent-Type: application/octet-stream\r\n"
        f"Content-Disposition: attachment; filename={attachment}\r\n\r\nAAAA\r\n--b--\r\n"
    ).encode()


@cache
def mailbox(total: int, every: int) -> tuple[MemoryMail, tuple[int, ...]]:
    """``total`` messages, every ``every``-th (counting from the newest) with an attachment: a report (a
    ``.pdf``) every second time, else a picture; the UIDs newest first."""
    mail = MemoryMail()
    for number in range(total):
        from_newest = total - 1 - number
        kept = (
            None if from_newest % every else ("report.pdf" if from_newest // every % 2 == 0 else "photo.jpg")
        )
        mail.append(INBOX, message(number, kept))
    return mail, tuple(sorted(mail.search(INBOX, AllOf()), reverse=True))


def reader(mail: MemoryMail, order: tuple[int, ...]) -> Callable[[int, int], PageRead]:
    """A page of ``size`` candidates from position ``start`` (its cursor: the next position)."""
    uidvalidity = mail.status(INBOX).uidvalidity

    def read(start: int, size: int) -> PageRead:
        picks = order[start : start + size]
        page = OrderedPage([(INBOX, uidvalidity, uid) for uid in picks], len(order), None)
        following = start + len(picks)
        cursor = cast(StreamCursor, following) if following < len(order) else None
        return PageRead(page, mail.summaries(INBOX, picks, 0), [], [], cursor)

    return read


def read_judged(
    total: int, every: int, structure: Query, limit: int
) -> tuple[PageRead, tuple[int, ...], MemoryMail]:
    mail, order = mailbox(total, every)
    read = reader(mail, order)
    result = judged(read(0, limit), structure, limit, lambda cursor, size: read(cast(int, cursor), size))
    return result, order, mail


def matching(mail: MemoryMail, uids: tuple[int, ...], structure: Query) -> list[int]:
    return [s.uid for s in mail.summaries(INBOX, uids, 0) if structure_holds(structure, s.attachment_names)]


STRUCTURES = {
    "has:attachment": HasAttachment(),
    "filename:pdf": Filename("pdf"),
    "-has:attachment": Not(HasAttachment()),
}


@pytest.mark.parametrize("every", [1, 2, 3, 7, 20])
@pytest.mark.parametrize("limit", [1, 4, 10])
@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_no_match_before_the_next_cursor_is_skipped_or_taken_twice(every: int, limit: int, name: str) -> None:
    structure = STRUCTURES[name]
    read, order, mail = read_judged(40, every, structure, limit)
    kept = [m.uid for m in read.messages]
    seen_up_to = cast(int | None, read.next_cursor)
    before = order[: len(order) if seen_up_to is None else seen_up_to]
    assert kept == matching(mail, before, structure)[:limit]
    assert len(kept) == min(limit, len(matching(mail, order, structure)))
    assert read.attempted == len(kept) and read.structure_cut is None


@pytest.mark.parametrize("limit", [2, 5, 20])
def test_a_page_stops_at_the_bound_of_candidates_judged_and_says_so(limit: int) -> None:
    total = MAX_STRUCTURE_CANDIDATES + 50
    read, order, _ = read_judged(total, total, HasAttachment(), limit)  # one attachment, the newest
    assert [m.uid for m in read.messages] == [order[0]]
    assert read.structure_cut == MAX_STRUCTURE_CANDIDATES
    assert cast(int, read.next_cursor) == MAX_STRUCTURE_CANDIDATES


def test_a_page_of_matches_alone_needs_no_second_read() -> None:
    calls: list[int] = []
    mail, order = mailbox(30, 1)
    read = reader(mail, order)

    def read_next(cursor: StreamCursor | PositionCursor, size: int) -> PageRead:
        calls.append(size)
        return read(cast(int, cursor), size)

    result = judged(read(0, 5), HasAttachment(), 5, read_next)
    assert [m.uid for m in result.messages] == list(order[:5]) and calls == []

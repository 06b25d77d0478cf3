"""Attachments judged on the server's path, against a model mailbox: whatever the pattern of matches, the
pages hold the matches in order, each at most ``limit``, none skipped or repeated across cursors, and no
call judges more than its bound (services/search_structure.py; its round trips against Dovecot are pinned
in tests/integration/search/test_round_trips_query.py)."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from mail_imap_mcp.mail.records import OrderedPage, SummaryRecord
from mail_imap_mcp.query import HasAttachment
from mail_imap_mcp.services.search_structure import MAX_STRUCTURE_CANDIDATES, PageRead, judged


@dataclass(frozen=True)
class Position:
    """A model cursor: how many candidates (newest first) earlier pages took."""

    taken: int


def summary(uid: int, attached: bool) -> SummaryRecord:
    message_id = f"imap:default:INBOX:1:{uid}"
    return SummaryRecord(
        message_id=message_id,
        message_uri=message_id,
        message_raw_uri=message_id,
        mailbox="INBOX",
        uidvalidity=1,
        uid=uid,
        date=None,
        from_=None,
        to=None,
        cc=None,
        subject=None,
        flags=[],
        size_bytes=1,
        has_attachments=attached,
        snippet=None,
        attachment_names=("a.pdf",) if attached else (),
    )


class ModelMailbox:
    """Candidates newest first (UIDs descending), each with or without an attachment; a page of ``n``
    after a position, as the search service reads one, and how many candidates it was asked for."""

    def __init__(self, attached: list[bool]) -> None:
        self.attached = attached
        #: The furthest candidate a page read (how far a call judged).
        self.reach = 0

    def page(self, cursor: Position | None, wanted: int) -> PageRead:
        start = cursor.taken if cursor is not None else 0
        taken = list(range(start, min(start + wanted, len(self.attached))))
        uids = [len(self.attached) - i for i in taken]
        picks = [("INBOX", 1, uid) for uid in uids]
        messages = [summary(uid, self.attached[i]) for i, uid in zip(taken, uids, strict=True)]
        end = start + len(taken)
        self.reach = max(self.reach, end)
        more = end < len(self.attached)
        page = OrderedPage(picks, len(self.attached), None)
        return PageRead(page, messages, [], [], Position(end) if more else None)  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.booleans(), max_size=400).flatmap(
        lambda attached: st.tuples(st.just(attached), st.integers(1, 12))
    )
)
def test_pages_hold_every_match_once_in_order_within_limit_and_bound(case: tuple[list[bool], int]) -> None:
    attached, limit = case
    mailbox = ModelMailbox(attached)
    found: list[int] = []
    cursor: Position | None = None
    for _ in range(len(attached) + 2):
        start = cursor.taken if cursor is not None else 0
        first = mailbox.page(cursor, limit)
        read = judged(first, HasAttachment(), limit, mailbox.page)  # type: ignore[arg-type]
        assert len(read.messages) <= limit
        assert all(m.has_attachments for m in read.messages)
        assert mailbox.reach - start <= MAX_STRUCTURE_CANDIDATES
        if read.structure_cut is not None:
            assert read.next_cursor is not None and len(read.messages) < limit
        found += [m.uid for m in read.messages]
        cursor = read.next_cursor  # type: ignore[assignment]
        if cursor is None:
            break
    expected = [len(attached) - i for i, has in enumerate(attached) if has]
    assert found == expected

"""The plan of a page of several mailboxes by one position (imap/search/position.py), as data: paging
generated mailboxes through a simulated server gives every message once, in the order of arrival times
across all mailboxes, whatever the ties, the time zones, the server's order of equal times, whether it
sorts a slice (ESORT) or every match, or does not sort at all (bands of days, UIDs in any order of
arrival)."""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import random
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from mail_imap_mcp.imap.search.position import (
    NEAR_DAYS,
    MailboxPart,
    Trusted,
    imap_date,
    mailbox_reads,
    merge,
    partial_answer,
    trusted,
)
from mail_imap_mcp.mail.cursors import CursorError, PositionCursor
from mail_imap_mcp.mail.pages import PagePosition, place

DAY = 86_400
START = 1_700_000_000
TODAY = dt.date(2023, 11, 20)  # START's day: a first page's bands end the day after


@dataclass(frozen=True)
class Message:
    uid: int
    key: int  # INTERNALDATE, epoch seconds
    zone: int  # its time zone, seconds east of UTC (what a date search "disregards")

    def local_day(self) -> dt.date:
        return dt.datetime.fromtimestamp(self.key + self.zone, dt.UTC).date()


@functools.cache  # strptime is slow, and a run asks for the same few dates many times
def _day(text: bytes) -> dt.date:
    return dt.datetime.strptime(text.decode(), "%d-%b-%Y").date()


class Server:
    """A mailbox as a server answers the plan's reads: dates compared in each message's own zone, equal
    arrival times in mailbox order (RFC 5256) or reversed (Courier 5)."""

    def __init__(self, messages: list[Message], *, ties_reversed: bool, partial: bool) -> None:
        self.messages, self.ties_reversed, self.partial = messages, ties_reversed, partial

    def _matching(self, args: tuple[bytes, ...]) -> list[Message]:
        found = list(self.messages)
        negated = False
        for name, value in itertools.pairwise(args):
            if name == b"SINCE":
                since = _day(value)
                found = [m for m in found if (m.local_day() >= since) != negated]
            elif name == b"BEFORE":
                before = _day(value)
                found = [m for m in found if m.local_day() < before]
            negated = name == b"NOT"
        return found

    def near(self, args: tuple[bytes, ...]) -> list[int]:
        return [m.uid for m in self._matching(args)]

    def sort(self, args: tuple[bytes, ...], *, partial: bool) -> tuple[list[int], int]:
        found = self._matching(args)
        tie = -1 if self.ties_reversed else 1
        found.sort(key=lambda m: (-m.key, tie * m.uid))
        uids = [m.uid for m in found]
        if partial:
            last = int(args[1].decode().split(":")[1].split()[0])
            return uids[:last], len(uids)
        return uids, len(uids)

    def keys(self, uids: list[int]) -> dict[int, int]:
        return {m.uid: m.key for m in self.messages if m.uid in uids}


def page(
    servers: list[Server], limit: int, mark: PagePosition | None, *, sorts: bool = True
) -> tuple[list[tuple[int, int, int]], PagePosition | None]:
    """One page, as imap/search/position_read.py reads it, from the simulated servers."""
    wanted = limit + 1
    known: list[Trusted] = []
    for index, server in enumerate(servers):
        reads = mailbox_reads(wanted, mark, partial=server.partial, sorts=sorts, today=TODAY)
        part = MailboxPart(f"box{index}", index)
        for read in reads:
            if read.kind == "near":
                part.near = server.near(read.tail)
            elif read.kind == "band":
                part.take_band(server.near(read.tail), read.floor)
            else:
                part.order, part.count = server.sort(read.head + read.tail, partial=server.partial)
        while True:
            if part.needs_order(wanted):
                part.order, part.count = server.sort(
                    mailbox_reads(wanted, mark, partial=False)[-1].tail, partial=False
                )
            goal, uids = part.keys_to_read(wanted)
            part.keys.update(server.keys(uids))
            part.keyed = goal
            found = trusted(part, mark, wanted)
            if found is not None:
                known.append(found)
                break
            assert uids, "no progress"
    merged = merge(known, limit)
    return merged.picks, merged.next_position


mailboxes = st.lists(
    st.lists(
        st.tuples(
            st.integers(0, 40).map(lambda d: START + d * DAY // 3),  # many equal and close arrival times
            st.sampled_from([-12 * 3600, -5 * 3600, 0, 3600, 14 * 3600]),
        ),
        max_size=25,
    ),
    min_size=1,
    max_size=5,
)


#: Without SORT, arrival times far apart (bands of many widths) and UIDs in any order of them.
spread = st.lists(
    st.lists(
        st.tuples(
            st.one_of(
                st.integers(-3, 40).map(lambda d: START + d * DAY // 3),
                st.integers(0, 3000).map(lambda d: START - d * DAY - d * 977),
            ),
            st.sampled_from([-12 * 3600, -5 * 3600, 0, 3600, 14 * 3600]),
        ),
        max_size=25,
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=300, deadline=None)
@given(
    boxes=mailboxes,
    limit=st.integers(1, 7),
    ties_reversed=st.booleans(),
    partial=st.booleans(),
)
def test_paging_by_one_position_lists_every_message_once_in_arrival_order(
    boxes: list[list[tuple[int, int]]], limit: int, ties_reversed: bool, partial: bool
) -> None:
    _pages_list_every_message_once_in_order(boxes, limit, ties_reversed=ties_reversed, partial=partial)


@settings(max_examples=150, deadline=None)
@given(boxes=st.one_of(mailboxes, spread), limit=st.integers(1, 7), shuffled=st.randoms(use_true_random=True))
def test_without_sort_paging_by_bands_of_days_lists_every_message_once_in_arrival_order(
    boxes: list[list[tuple[int, int]]], limit: int, shuffled: random.Random
) -> None:
    """Where the server cannot sort, mail imported late (old arrival times, high UIDs) or early comes at
    its place all the same: nothing trusts UIDs to follow arrival."""
    for box in boxes:
        shuffled.shuffle(box)
    _pages_list_every_message_once_in_order(boxes, limit, sorts=False)


def _pages_list_every_message_once_in_order(
    boxes: list[list[tuple[int, int]]],
    limit: int,
    *,
    ties_reversed: bool = False,
    partial: bool = False,
    sorts: bool = True,
) -> None:
    servers = [
        Server(
            [Message(uid, key, zone) for uid, (key, zone) in enumerate(box, start=1)],
            ties_reversed=ties_reversed,
            partial=partial,
        )
        for box in boxes
    ]
    expected = sorted(
        (place(m.key, index, m.uid), (index, m.uid)) for index, s in enumerate(servers) for m in s.messages
    )
    listed: list[tuple[int, int]] = []
    mark: PagePosition | None = None
    for _ in range(200):
        picks, mark = page(servers, limit, mark, sorts=sorts)
        assert len(picks) == limit or mark is None
        listed += [(index, uid) for index, uid, _ in picks]
        if mark is None:
            break
    assert listed == [where for _, where in expected]


def test_the_near_days_and_the_older_matches_are_asked_by_date() -> None:
    mark = PagePosition(int(dt.datetime(2026, 11, 25, 10, tzinfo=dt.UTC).timestamp()), 0, 7)
    near, top = mailbox_reads(11, mark, partial=True)
    assert (near.kind, near.head, near.tail) == (
        "near",
        (),
        (b"SINCE", b"23-Nov-2026", b"BEFORE", b"27-Nov-2026"),
    )
    assert top.head == (b"RETURN", b"(PARTIAL 1:19 COUNT)", b"(REVERSE ARRIVAL)")
    assert top.tail == (b"BEFORE", b"23-Nov-2026")
    (first,) = mailbox_reads(11, None, partial=False)
    assert (first.head, first.tail) == ((b"(REVERSE ARRIVAL)",), ())
    # Date order: the Date header's days, and every message without one (sorted by its arrival).
    near, top = mailbox_reads(11, mark, partial=False, sort="date")
    assert near.tail == (
        b"OR",
        b"(SENTSINCE 23-Nov-2026 SENTBEFORE 27-Nov-2026)",
        b"NOT",
        b"HEADER",
        b"DATE",
        b'""',
    )
    assert (top.head, top.tail) == ((b"(REVERSE DATE)",), (b"SENTBEFORE", b"23-Nov-2026"))
    assert NEAR_DAYS == 2 and imap_date(dt.date(2026, 1, 5)) == b"5-Jan-2026"


def test_an_esort_answer_gives_its_slice_in_order_and_its_count() -> None:
    assert partial_answer([b'(TAG "A1") UID PARTIAL (1:5 30,29,28:26) COUNT 30']) == (
        [30, 29, 28, 27, 26],
        30,
    )
    assert partial_answer([b'(TAG "A1") UID PARTIAL (1:5 NIL) COUNT 0']) == ([], 0)
    assert partial_answer([b'(TAG "A1") UID COUNT 4 PARTIAL (1:2 9,4)']) == ([9, 4], 4)


def test_a_position_cursor_is_short_whatever_the_number_of_mailboxes_and_checked_when_decoded() -> None:
    cursor = PositionCursor(
        "default", "d448e2735666", "0123456789ab", 100, 2**99 | 1, 3000, 20, START, 99, 4_000_000_000
    )
    token = cursor.encode("")
    assert len(token) <= 80 and PositionCursor.decode(token, "") == cursor
    for garbled in (
        PositionCursor(
            "default", "d448e2735666", "0123456789ab", 3, 0, 1, 1, START, 3, 1
        ),  # index past the list
        PositionCursor(
            "default", "d448e2735666", "0123456789ab", 3, 8, 1, 1, START, 0, 1
        ),  # a bit past the list
    ):
        try:
            PositionCursor.decode(garbled.encode(""), "")
        except CursorError:
            continue
        raise AssertionError(f"{garbled} decoded")


def test_without_sort_a_message_dated_the_day_before_a_band_in_a_western_zone_comes_at_its_place() -> None:
    """A date search reads a message's day in its own zone: at 11:00 UTC in UTC-12 it is still the day
    before, in an older band than messages of that day's early hours UTC, yet it arrived after them. The
    newer band is trusted only for messages past what the older band can hold (a day's margin)."""
    day = dt.datetime(2023, 11, 19, tzinfo=dt.UTC)  # the first band's first day (TODAY - 1)
    early = [
        Message(uid, int((day + dt.timedelta(hours=5, minutes=uid)).timestamp()), 0) for uid in range(1, 11)
    ]
    late = Message(11, int((day + dt.timedelta(hours=11)).timestamp()), -12 * 3600)
    server = Server([*early, late], ties_reversed=False, partial=False)
    assert late.local_day() == dt.date(2023, 11, 18) and early[0].local_day() == dt.date(2023, 11, 19)
    picks, _ = page([server], 1, None, sorts=False)
    assert [uid for _, uid, _ in picks] == [11]


def test_without_sort_the_older_matches_are_searched_in_bands_of_days() -> None:
    mark = PagePosition(int(dt.datetime(2026, 11, 25, 10, tzinfo=dt.UTC).timestamp()), 0, 7)
    near, first, second, *_, last = mailbox_reads(11, mark, partial=False, sorts=False)
    assert near.tail == (b"SINCE", b"23-Nov-2026", b"BEFORE", b"27-Nov-2026")
    assert (first.kind, first.tail, first.floor) == (
        "band",
        (b"SINCE", b"21-Nov-2026", b"BEFORE", b"23-Nov-2026"),
        dt.date(2026, 11, 21),
    )
    assert second.tail == (b"SINCE", b"15-Nov-2026", b"BEFORE", b"21-Nov-2026")
    assert (last.tail, last.floor) == (
        (b"NOT", b"SINCE", imap_date(dt.date(2026, 11, 23) - dt.timedelta(8192))),
        None,
    )
    # A first page: the newest band has no end (mail dated ahead); date order reads undated mail whole.
    undated, newest, *_ = mailbox_reads(
        11, None, partial=False, sort="date", sorts=False, today=dt.date(2026, 11, 25)
    )
    assert undated.tail == (b"NOT", b"HEADER", b"DATE", b'""')
    assert newest.tail == (b"SENTSINCE", b"24-Nov-2026")

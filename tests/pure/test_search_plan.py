"""The window rules of a search as data (imap/search/plan.py), without a server: the windows a page
reads, what it keeps of their answers, and a property that walking the windows over any mailbox finds
exactly the newest matches a full listing would."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from mail_imap_mcp.imap.search.plan import (
    MIN_FILTERED_WINDOW,
    WINDOW_GROWTH,
    UidWindows,
    first_window,
    reads_at_once,
)
from mail_imap_mcp.imap.view import MailboxState
from mail_imap_mcp.query import Contains


def mailbox(uidnext: int, exists: int) -> MailboxState:
    return MailboxState("INBOX", 7, uidnext, exists)


def test_the_first_window_is_sized_by_the_mailboxs_density() -> None:
    assert first_window(mailbox(10_001, 10_000), 11, filtered=False) == 22  # 11 x 1.25, + 8
    assert first_window(mailbox(10_001, 5_000), 11, filtered=False) == 36  # half the UIDs are gone
    assert first_window(mailbox(10_001, 10_000), 11, filtered=True) == MIN_FILTERED_WINDOW
    assert first_window(mailbox(1, 0), 11, filtered=False) == 22


def test_a_first_page_reads_up_to_star_and_sets_the_snapshot() -> None:
    windows = UidWindows.start(mailbox(10_001, 10_000), 11, filtered=False, below=None, upper=None)
    assert windows.uid_set() == "9979:*" and not windows.done
    # "n:*" also answers the highest UID when it is below n; a UID that arrived after EXAMINE counts.
    windows.take([10_002, 9_990, 9_985, 3], uidnext=10_001)
    assert windows.matches == [10_002, 9_990, 9_985]
    assert windows.upper == 10_002
    assert not windows.done


def test_a_later_page_reads_below_its_anchor_inside_the_snapshot() -> None:
    windows = UidWindows.start(mailbox(20_001, 20_000), 3, filtered=False, below=500, upper=10_000)
    assert windows.uid_set() == f"{499 - windows.window + 1}:499"
    windows.take([499, 498, 600, 12_000], uidnext=20_001)
    assert windows.matches == [499, 498] and windows.upper == 10_000


def test_windows_grow_below_each_other_until_enough_or_uid_1() -> None:
    windows = UidWindows.start(mailbox(101, 100), 5, filtered=False, below=None, upper=None)
    first = windows.window
    windows.take([], uidnext=101)
    windows.widen()
    assert windows.window == first * WINDOW_GROWTH
    assert windows.hi == 100 - first
    windows.take([5, 30], uidnext=101)  # 5 lies below this window: the next one reads it
    assert windows.matches == [30] and not windows.done
    windows.widen()
    windows.take([5], uidnext=101)
    assert windows.lo == 1 and windows.done and windows.matches == [30, 5]


def test_a_page_below_uid_1_reads_nothing() -> None:
    windows = UidWindows.start(mailbox(101, 100), 5, filtered=True, below=1, upper=100)
    assert windows.done


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=1, max_value=20_000),
    st.data(),
    st.integers(min_value=1, max_value=60),
    st.booleans(),
)
def test_walking_the_windows_finds_the_newest_matches(
    uidnext: int, data: st.DataObject, wanted: int, filtered: bool
) -> None:
    # A mailbox with runs of expunged UIDs, and (filtered) one message in `every` matching: sparse
    # enough that pages need several windows, each below the last, however the gaps fall.
    gaps = data.draw(st.lists(st.tuples(st.integers(1, 20_000), st.integers(0, 3_000)), max_size=4))
    gone = {uid for start, length in gaps for uid in range(start, start + length)}
    existing = [uid for uid in range(1, uidnext) if uid not in gone]
    every = data.draw(st.integers(min_value=1, max_value=700)) if filtered else 1
    matching = [uid for uid in existing if uid % every == 0]
    below = data.draw(st.one_of(st.none(), st.integers(min_value=1, max_value=uidnext + 5)))
    upper = None if below is None else data.draw(st.integers(min_value=0, max_value=uidnext + 5))
    state = mailbox(uidnext, len(existing))
    windows = UidWindows.start(state, wanted, filtered=filtered, below=below, upper=upper)
    read: list[tuple[int, int | None]] = []
    while not windows.done:
        lo, hi = windows.lo, windows.hi
        read.append((lo, hi))
        windows.take([u for u in matching if u >= lo and (hi is None or u <= hi)], uidnext)
        if not windows.done:
            windows.widen()
    expected = [
        u for u in reversed(matching) if (below is None or u < below) and (upper is None or u <= upper)
    ]
    # Every match of the windows read, newest first: at least the wanted ones, none skipped.
    assert windows.matches == expected[: len(windows.matches)]
    assert len(windows.matches) >= min(wanted, len(expected))
    # Each window starts right below the one before: no UID is read twice or skipped.
    assert all(hi == lower_lo - 1 for (lower_lo, _), (_, hi) in itertools.pairwise(read))
    assert len(read) <= 12


def test_mailboxes_are_read_at_once_only_where_nothing_waits_for_the_server() -> None:
    assert reads_at_once(Contains("from", "ann"))
    assert not reads_at_once(Contains("from", "zoë"))  # a literal waits for the server's continuation

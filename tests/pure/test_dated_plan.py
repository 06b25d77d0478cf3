"""Sent-date order of one mailbox as data (imap/search/dated_plan.py): where a page continues in a SORT
answer whose anchors were all deleted, and which windows a server without SORT is asked for."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mail_imap_mcp.imap.search.dated_plan import LOCATE_PROBES, DateWindows, Locate, older
from mail_imap_mcp.imap.search.merge import Candidate


@settings(max_examples=200, deadline=None)
@given(
    dates=st.lists(st.integers(0, 50), min_size=0, max_size=3000),
    anchor_key=st.integers(-1, 51),
    anchor_uid=st.integers(0, 3001),
)
def test_locate_finds_the_first_message_after_the_anchor_in_a_sort_answer(
    dates: list[int], anchor_key: int, anchor_uid: int
) -> None:
    """The position equals a scan's, in at most a few round trips of at most LOCATE_PROBES dates."""
    # A SORT answer: newest date first, equal dates by UID ascending.
    order = [uid for uid, _ in sorted(enumerate(dates, 1), key=lambda m: (-m[1], m[0]))]
    key_of = dict(enumerate(dates, 1))
    expected = next(
        (i for i, uid in enumerate(order) if older(key_of[uid], uid, anchor_key, anchor_uid)), len(order)
    )
    plan = Locate(order, anchor_key, anchor_uid)
    trips = 0
    while probes := plan.probes():
        assert len(probes) <= LOCATE_PROBES + 1
        plan.answered(probes, {order[i]: key_of[order[i]] for i in probes})
        trips += 1
    assert plan.position == expected
    assert trips <= 4


def test_date_windows_read_older_windows_until_the_page_has_its_candidates() -> None:
    plan = DateWindows(wanted=3, anchor=(100, 7))
    # The first window: what the page passed already (dates after the anchor's) is left out.
    plan.took(900, [Candidate(9, 120), Candidate(7, 100), Candidate(8, 100), Candidate(5, 90)])
    assert [c.uid for c in plan.candidates] == [8, 5] and plan.next_below() == 900
    plan.took(400, [Candidate(300, 95)])  # an older window is not filtered: all of it is after
    assert [c.uid for c in plan.candidates] == [8, 5, 300] and plan.next_below() is None
    assert plan.windowed and plan.more_beyond  # UIDs below 400 are still to read
    first_only = DateWindows(wanted=2, anchor=None)
    first_only.took(1, [Candidate(2, 5)])
    assert first_only.next_below() is None and not first_only.more_beyond and not first_only.windowed

"""A page of one mailbox as data (imap/search/plan.py and merge.py), without a server: what its read
sends, given its state and cursor; what the answers make of it; and how the page takes its messages and
says where the next one continues. A model mailbox answers the reads here as a server would."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from mail_imap_mcp.imap.parsing import uid_runs
from mail_imap_mcp.imap.search.merge import Candidate, StreamPage, take
from mail_imap_mcp.imap.search.plan import (
    MIN_FILTERED_WINDOW,
    Answer,
    Newest,
    Read,
    StreamRead,
    StreamStart,
)
from mail_imap_mcp.imap.view import MailboxState
from mail_imap_mcp.mail.cursors import StreamState


@dataclass
class Box:
    """A mailbox as a server holds it: UID -> INTERNALDATE (epoch seconds), and which UIDs match."""

    name: str
    keys: dict[int, int]
    matching: set[int] | None = None  # None: no filter
    uidvalidity: int = 7
    uidnext: int = 0
    reads: list[Read] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.uidnext = max(self.uidnext, max(self.keys, default=0) + 1)

    @property
    def state(self) -> MailboxState:
        return MailboxState(self.name, self.uidvalidity, self.uidnext, len(self.keys))

    def covered(self, uid_set: str) -> set[int]:
        """The UIDs of ``uid_set`` that exist (``n:*`` also names the highest UID when it is below n)."""
        found: set[int] = set()
        for part in uid_set.split(","):
            low, _, high = part.partition(":")
            if not high:
                found.add(int(low))
                continue
            top = max(self.keys, default=0) if high == "*" else int(high)
            first, last = sorted((int(low), top))
            found.update(range(first, last + 1))
        return found & self.keys.keys()

    def answer(self, read: Read) -> Answer:
        self.reads.append(read)
        pool = set(self.keys) if self.matching is None else self.matching & self.keys.keys()
        if read.kind == "count_all":
            count, runs = uid_runs(sorted(pool))
            return Answer(count=count, runs=runs)
        return Answer(uids=sorted(pool if read.uids is None else pool & self.covered(read.uids)))


def read_alone(
    box: Box, start: StreamStart, wanted: int, *, esearch: bool = True
) -> tuple[StreamRead, Newest]:
    """One mailbox read on its own, as the executor does it: EXAMINE first, then the plan's reads."""
    plan = StreamRead(start, wanted, box.matching is not None, esearch=esearch)
    plan.opened(box.state, [box.answer(read) for read in plan.opening(box.state)])
    while reads := plan.widening():
        plan.took(box.answer(reads[0]))
    result = plan.result()
    assert isinstance(result, Newest)
    return plan, result


def test_a_filtered_first_page_of_a_large_mailbox_is_one_counted_scan() -> None:
    box = Box("INBOX", {uid: uid for uid in range(1, 5001)}, matching={5, 2990, 2991, 4000})
    _, newest = read_alone(box, StreamStart("INBOX"), wanted=3)
    assert box.reads == [Read("count_all")]  # the total and every match, as runs: no window search
    assert newest.uids == [4000, 2991, 2990, 5] and newest.total == 4 and newest.upper == 5000


def test_without_esearch_the_one_scan_is_a_plain_search_of_the_whole_mailbox() -> None:
    box = Box("INBOX", {uid: uid for uid in range(1, 5001)}, matching={5, 2990})
    _, newest = read_alone(box, StreamStart("INBOX"), wanted=3, esearch=False)
    assert box.reads == [Read("search")]
    assert newest.uids == [2990, 5] and newest.total == 2


def test_a_small_mailbox_s_first_window_spans_it_so_its_matches_are_the_total() -> None:
    box = Box("INBOX", {uid: uid for uid in range(1, MIN_FILTERED_WINDOW // 2)}, matching={3, 7})
    _, newest = read_alone(box, StreamStart("INBOX"), wanted=11)
    assert box.reads == [Read("search")] and newest.total == 2 and newest.uids == [7, 3]


def test_an_empty_mailbox_read_on_its_own_sends_nothing_after_examine() -> None:
    box = Box("INBOX", {}, uidnext=42)
    _, newest = read_alone(box, StreamStart("INBOX"), wanted=11)
    assert box.reads == [] and newest.uids == [] and newest.total == 0 and newest.upper == 41


def test_a_later_page_reads_below_its_anchor_and_leaves_out_what_arrived_since() -> None:
    box = Box("INBOX", {uid: uid for uid in range(1, 201)})
    start = StreamStart("INBOX", uidvalidity=7, upper=150, below=120)
    _, newest = read_alone(box, start, wanted=5)
    assert all(read.uids is not None and read.uids.endswith(":119") for read in box.reads[:1])
    assert newest.uids[:5] == [119, 118, 117, 116, 115]
    assert newest.total == 0  # a later page: the cursor keeps the total
    box.keys[201] = 201  # arrived after the first page: above the snapshot, never on a later page
    _, again = read_alone(box, StreamStart("INBOX", uidvalidity=7, upper=150, below=None), wanted=3)
    assert again.uids[:3] == [150, 149, 148]


def test_a_mailbox_that_failed_is_its_failure_and_reads_nothing_more() -> None:
    plan = StreamRead(StreamStart("Gone"), 4, filtered=True, esearch=True)
    plan.opening(MailboxState("Gone", 7, 5000, 4000))
    plan.failure = LookupError("Gone")
    assert plan.widening() == [] and plan.result() is plan.failure


def page(mailbox: str, keys: list[int], *, more: bool = False) -> StreamPage:
    state = StreamState(mailbox, 7, 100)
    candidates = [Candidate(100 - i, key) for i, key in enumerate(keys)]
    return StreamPage(state, candidates=candidates, more_beyond=more)


def test_a_page_takes_the_first_candidates_and_its_stream_continues_after_them() -> None:
    inbox = page("INBOX", [50, 30, 10], more=True)
    picks, ongoing = take(inbox, 2, "arrival")
    assert picks == [("INBOX", 7, 100), ("INBOX", 7, 99)] and inbox.state.after == [99]
    assert ongoing is inbox.state
    last = page("INBOX", [50])
    assert take(last, 2, "arrival") == ([("INBOX", 7, 100)], None)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(min_value=0, max_value=3000),
    st.data(),
    st.integers(min_value=1, max_value=40),
)
def test_paging_one_mailbox_gives_every_match_once_newest_first_whatever_arrives_or_goes(
    size: int, data: st.DataObject, limit: int
) -> None:
    # The plan, the merge and the cursor's state together, page after page: mail arriving meanwhile stays
    # out, mail deleted meanwhile is not shown, everything else comes exactly once, newest first.
    every = data.draw(st.sampled_from([None, 1, 3, 50, 400]))
    keys = {uid: uid for uid in range(1, size + 1)}
    matching = None if every is None else {uid for uid in keys if uid % every == 0}
    box = Box("INBOX", keys, matching)
    first_snapshot = set(keys if matching is None else matching)
    state = StreamState("INBOX")
    shown: list[int] = []
    deleted: set[int] = set()
    for _ in range(3000 // limit + 5):
        start = StreamStart("INBOX", state.uidvalidity, state.upper, state.after[-1] if state.after else None)
        _, newest = read_alone(box, start, limit + 1)
        state.uidvalidity, state.upper = newest.state.uidvalidity, newest.upper
        stream = StreamPage(state, newest.state, [Candidate(uid, None) for uid in newest.uids[: limit + 1]])
        stream.more_beyond = len(newest.uids) > limit + 1
        picks, ongoing = take(stream, limit, "arrival")
        shown += [uid for _, _, uid in picks]
        if not ongoing or not picks:
            break
        # Between pages: one message arrives, one of the next page's may go.
        box.keys[box.uidnext] = box.uidnext
        if matching is not None:
            matching.add(box.uidnext)
        box.uidnext += 1
        if data.draw(st.booleans()) and newest.uids[limit:]:
            gone = newest.uids[limit]
            del box.keys[gone]
            deleted.add(gone)
    assert shown == sorted(set(shown), reverse=True)  # newest first, none twice
    assert set(shown) == first_snapshot - deleted  # every match that stayed, nothing that arrived later

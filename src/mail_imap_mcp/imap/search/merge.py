"""The merge of a page's streams, as data: each mailbox offers candidates in its order, the page takes
the newest by one key (INTERNALDATE in arrival order, the sent date in date order) and each stream moves
past what it gave. Pure: no session; :func:`~mail_imap_mcp.imap.sort.ordered_page` reads the candidates.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

from mail_imap_mcp.imap.mailbox_state import MailboxState
from mail_imap_mcp.imap.search.cursors import ANCHORS, SortOrder, StreamState


@dataclass
class Candidate:
    """A message a stream offers for the page, with its merge key (epoch seconds)."""

    uid: int
    key: int | None
    #: Without SORT, date order: the window the message was read in.
    window: tuple[int, int] = (0, 0)
    #: Place in the merged page.
    order: int = -1


@dataclass
class StreamPage:
    """What one mailbox offers for a page: candidates in its order, and whether more follow them."""

    state: StreamState
    mailbox_state: MailboxState | None = None
    candidates: list[Candidate] = field(default_factory=list)
    more_beyond: bool = False
    total: int = 0
    #: Without SORT: the date order of this mailbox spans several windows.
    windowed: bool = False
    taken: list[Candidate] = field(default_factory=list)

    @property
    def has_more(self) -> bool:
        return self.more_beyond or len(self.taken) < len(self.candidates)


def page_full_before(pages: list[StreamPage], limit: int, key: int) -> bool:
    """Whether merging ``pages`` fills the page with messages newer than ``key`` (so a stream whose next
    message has that key contributes nothing to it)."""
    taken = 0
    for candidate, _ in itertools.islice(merge_order(pages), limit):
        if (candidate.key or 0) <= key:
            return False
        taken += 1
    return taken >= limit


def merge_order(pages: list[StreamPage]) -> Iterator[tuple[Candidate, StreamPage]]:
    """The candidates newest first, always the head with the newest key, keeping each stream's order."""
    heap = [(-(page.candidates[0].key or 0), index, 0) for index, page in enumerate(pages) if page.candidates]
    heapq.heapify(heap)
    while heap:
        _, index, position = heapq.heappop(heap)
        page = pages[index]
        yield page.candidates[position], page
        if position + 1 < len(page.candidates):
            heapq.heappush(heap, (-(page.candidates[position + 1].key or 0), index, position + 1))


def _take(pages: list[StreamPage], limit: int) -> None:
    """Take up to ``limit`` candidates in merge order."""
    for order, (candidate, page) in enumerate(itertools.islice(merge_order(pages), limit)):
        candidate.order = order
        page.taken.append(candidate)


def advance(state: StreamState, taken: list[Candidate], sort: SortOrder) -> None:
    """Move the stream past what this page took from it."""
    if not taken:
        return
    if sort == "arrival":  # continues below the last UID taken; nothing else is needed
        state.after = [taken[-1].uid]
        return
    # Date order keeps a few UIDs and the date key (None when not read: the summary supplies it).
    state.after = (state.after + [c.uid for c in taken])[-ANCHORS:]
    last = taken[-1]
    state.key = last.key
    if last.window != (0, 0):
        state.window_lo, state.window_hi = last.window


def merge(
    pages: list[StreamPage], waiting: list[StreamState], limit: int, sort: SortOrder, *, merged: bool
) -> tuple[list[tuple[str, int, int]], list[StreamState]]:
    """Take up to ``limit`` candidates of ``pages`` newest first: the page's ``(mailbox, uidvalidity,
    uid)`` picks and the streams that continue on a next page (``waiting``: not opened, as their next
    message could not make this page). Each stream moves past what it gave; ``merged`` (a page of
    several), each keeps the key of its next candidate (its head), so a later page opens it only when
    that key can make it."""
    _take(pages, limit)
    taken = sorted(((c, page) for page in pages for c in page.taken), key=lambda pair: pair[0].order)
    picks = [(page.state.mailbox, page.state.uidvalidity, candidate.uid) for candidate, page in taken]
    for page in pages:
        advance(page.state, page.taken, sort)
        rest = page.candidates[len(page.taken) :]
        page.state.head = rest[0].key if merged and rest else None
    return picks, [page.state for page in pages if page.has_more] + waiting

"""Ordered streams: search pages in sent-date order and across several mailboxes, with one cursor.

Each mailbox searched is a *stream* of its matching messages in the page's order:

* arrival order: UID descending, read in UID windows (as :func:`~mail_imap_mcp.imap.search.search_page`);
* date order where the server advertises SORT: ``UID SORT (REVERSE DATE)`` of the matches (UIDs only);
* date order without SORT (Gmail, Microsoft 365): the newest :data:`DATE_WINDOW` matches by UID are read
  with their Date header and sorted here; older matches follow in further windows of that size, each
  sorted within itself, and the page says so (``date_order_windowed``) when a search spans several.

A page takes up to ``limit + 1`` candidates from every stream and merges them newest first by one key,
INTERNALDATE (arrival) or the sent date (Date header in UTC, else INTERNALDATE), so a page costs
O(limit x mailboxes), never a full listing. The cursor (:class:`StreamCursor`) keeps, per mailbox, its
UIDVALIDITY, the snapshot's highest UID (mail arriving later stays out of later pages) and the last UIDs
taken from it: the next page continues each stream right after them, so every message that exists
throughout comes exactly once, whatever arrives or is deleted in between.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field

from mail_imap_mcp import mime
from mail_imap_mcp.imap.across import Newest, StreamStart, epoch, newest_in_each
from mail_imap_mcp.imap.errors import UidValidityChanged, mailbox_failure
from mail_imap_mcp.imap.mailboxes import MailboxCounts
from mail_imap_mcp.imap.search import newest_matches, reads_at_once
from mail_imap_mcp.imap.search.cursors import ANCHORS, SortOrder, StreamState
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.imap.view import MailboxState
from mail_imap_mcp.query import Query, needs_utf8, search_keys

#: Without SORT, date order is exact within windows of this many matches (newest by UID first).
DATE_WINDOW = 1000
#: Probes per FETCH when a cursor's anchors were all deleted and the position is found by date.
LOCATE_PROBES = 64
_DATE_ITEMS = ["INTERNALDATE", "BODY.PEEK[HEADER.FIELDS (DATE)]"]


@dataclass
class Candidate:
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


@dataclass
class OrderedPage:
    """A merged page: ``(mailbox, uidvalidity, uid)`` newest first, plus what continues it."""

    picks: list[tuple[str, int, int]]
    total: int
    #: The streams that continue on a next page (empty: this was the last page).
    next_streams: list[StreamState]
    #: The mailboxes that could not be searched, and why (see :func:`~mail_imap_mcp.imap.errors.mailbox_failure`).
    failed: list[tuple[str, Exception]] = field(default_factory=list)
    windowed: bool = False
    mailboxes: list[str] = field(default_factory=list)


def sort_keys(session: ImapSession, uids: list[int], sort: SortOrder) -> dict[int, int | None]:
    """Sort key of each of ``uids`` in one FETCH: INTERNALDATE, or (date) the Date header else INTERNALDATE."""
    if not uids:
        return {}
    items = ["INTERNALDATE"] if sort == "arrival" else _DATE_ITEMS
    answer = session.fetch_range(uids, items)
    keys: dict[int, int | None] = {}
    for uid, response in answer.items():
        internal = epoch(response.get(b"INTERNALDATE"))
        if sort == "date":
            raw = next(
                (v for k, v in response.items() if isinstance(k, bytes) and k.startswith(b"BODY[")), b""
            )
            headers = mime.parse_header_block(raw or b"")
            values = headers.get("date")
            sent = epoch(mime.parse_date(values[0])) if values else None
            keys[uid] = sent if sent is not None else internal
        else:
            keys[uid] = internal
    return keys


def _after_anchor(order: list[int], state: StreamState) -> int | None:
    """Index just after the latest anchor still in ``order``; None when none is left."""
    where = {uid: index for index, uid in enumerate(order)}
    for uid in reversed(state.after):
        if uid in where:
            return where[uid] + 1
    return None


def _older(key: int | None, uid: int, anchor_key: int, anchor_uid: int) -> bool:
    """Whether a message comes after the anchor in date order (date descending, ties by UID ascending,
    which is how RFC 5256 SORT orders equal dates: by their place in the mailbox)."""
    key = key if key is not None else 0
    return key < anchor_key or (key == anchor_key and uid > anchor_uid)


def _locate(session: ImapSession, order: list[int], state: StreamState) -> int:
    """Where to continue ``order`` (SORT's answer) when every anchor was deleted: found by date, reading
    at most :data:`LOCATE_PROBES` dates per round trip (about three for 100,000 messages)."""
    if state.key is None or not state.after:
        return 0
    anchor_uid = state.after[-1]
    lo, hi = 0, len(order)  # the answer is in [lo, hi]
    while lo < hi:
        step = max(1, (hi - lo) // LOCATE_PROBES)
        probes = list(range(lo, hi, step))
        keys = sort_keys(session, [order[i] for i in probes], "date")
        first_older = next(
            (i for i in probes if _older(keys.get(order[i]), order[i], state.key, anchor_uid)), hi
        )
        if step == 1:
            return first_older
        lo, hi = max(lo, first_older - step + 1), first_older
    return lo


@dataclass
class Window:
    """Without SORT: matches of a UID range, read with their dates and sorted here."""

    lo: int
    hi: int
    candidates: list[Candidate]


class StreamSearch:
    """The streams of one page of one search, read on one session."""

    def __init__(
        self,
        session: ImapSession,
        search: Query,
        sort: SortOrder,
        limit: int,
        listed: Collection[str] = frozenset(),
    ) -> None:
        self.session = session
        #: Mailboxes this call's LIST just showed: like those of a cursor, known to exist.
        self.listed = listed
        self.sort = sort
        self.limit = limit
        self.charset = "UTF-8" if needs_utf8(search) else None
        self.criteria = search_keys(search)

    @property
    def server_sorts(self) -> bool:
        return self.sort == "date" and self.session.profile.sorts

    def open(self, state: StreamState, *, with_keys: bool) -> StreamPage:
        """Examine the stream's mailbox and read its candidates for this page (``with_keys``: with their
        sort keys, which a merge of several streams needs)."""
        first = not state.uidvalidity
        order = self._sort(state, first) if self.server_sorts else None
        mailbox = self.session.examine(state.mailbox)
        if state.uidvalidity and mailbox.uidvalidity != state.uidvalidity:
            raise UidValidityChanged(state.uidvalidity, mailbox.uidvalidity)
        state.uidvalidity = mailbox.uidvalidity
        page = StreamPage(state, mailbox)
        if first and mailbox.exists == 0:
            state.upper = max(mailbox.uidnext - 1, 0)
            return page
        if order is not None:
            self._sorted(page, first, order)
        else:
            counted = None
            if first:
                page.total, counted = self._count(mailbox)
                if page.total == 0:
                    state.upper = max(mailbox.uidnext - 1, 0)
                    return page
            if self.sort == "arrival":
                self._arrival(page, mailbox, counted)
            else:
                self._windowed(page, mailbox, counted)
        if with_keys and any(c.key is None for c in page.candidates):
            keys = sort_keys(self.session, [c.uid for c in page.candidates], self.sort)
            for candidate in page.candidates:
                candidate.key = keys.get(candidate.uid)
        return page

    def open_all(
        self, account_id: str, states: list[StreamState], hints: dict[str, MailboxCounts]
    ) -> dict[int, Newest | Exception]:
        """The newest candidates of every stream of a merged page, in a few round trips for all (by
        ``id`` of the state)."""
        starts = [
            StreamStart(
                s.mailbox, s.uidvalidity, s.upper, s.after[-1] if s.after else None, hints.get(s.mailbox)
            )
            for s in states
        ]
        found = newest_in_each(self.session, account_id, starts, self.criteria, self.limit + 1)
        return {id(state): result for state, result in zip(states, found, strict=True)}

    def opened(self, state: StreamState, found: Newest | Exception) -> StreamPage:
        """The stream's page from what :meth:`open_all` read of it (its failure raised here, as
        :meth:`open` raises it)."""
        if isinstance(found, Exception):
            raise found
        state.uidvalidity, state.upper = found.state.uidvalidity, found.upper
        page = StreamPage(state, found.state, total=found.total)
        wanted = self.limit + 1
        page.candidates = [Candidate(uid, found.keys.get(uid)) for uid in found.uids[:wanted]]
        page.more_beyond = len(found.uids) > wanted
        return page

    def _count(self, mailbox: MailboxState) -> tuple[int, list[tuple[int, int]] | None]:
        """A first page's total: EXISTS without a filter; with one, the matches counted by the one scan
        that also gives every match (as runs), so the first window needs no search of its own."""
        if not self.criteria:
            return self.session.refresh_counts(mailbox).exists, None
        return self.session.uid_search_counted(self.criteria, charset=self.charset)

    def _arrival(
        self, page: StreamPage, mailbox: MailboxState, counted: list[tuple[int, int]] | None
    ) -> None:
        state, wanted = page.state, self.limit + 1
        uids, state.upper = newest_matches(
            self.session,
            mailbox,
            self.criteria,
            charset=self.charset,
            wanted=wanted,
            below=state.after[-1] if state.after else None,
            upper=state.upper or None,
            counted=counted,
        )
        page.candidates = [Candidate(uid, None) for uid in uids[:wanted]]
        page.more_beyond = len(uids) > wanted

    def _sort(self, state: StreamState, first: bool) -> list[int]:
        """The stream's matches by ``UID SORT`` (of the snapshot after the first page), sent with the
        mailbox's EXAMINE (one round trip for both) where no literal is needed and the mailbox is known
        to exist: a name never seen would have the SORT answered BAD (no mailbox selected)."""
        if self.charset is None and (state.uidvalidity or state.mailbox in self.listed):
            self.session.examine_ahead(state.mailbox, uidvalidity=state.uidvalidity or None)
        elif self.session.examine(state.mailbox).exists == 0 and first:
            return []  # nothing to sort (open() reads the mailbox as empty): no round trip spent on SORT
        criteria = list(self.criteria)
        if not first:
            criteria = [b"UID", f"1:{max(state.upper, 1)}".encode(), *criteria]
        return self.session.uid_sort_by_date(criteria, charset=self.charset)

    def _sorted(self, page: StreamPage, first: bool, order: list[int]) -> None:
        state = page.state
        if first:
            assert page.mailbox_state is not None
            state.upper = max([page.mailbox_state.uidnext - 1, *order])
            page.total = len(order)
        else:
            order = [uid for uid in order if uid <= state.upper]
        start = 0
        if state.after:
            found = _after_anchor(order, state)
            start = found if found is not None else _locate(self.session, order, state)
        wanted = self.limit + 1
        page.candidates = [Candidate(uid, None) for uid in order[start : start + wanted]]
        page.more_beyond = len(order) > start + wanted

    def _windowed(
        self, page: StreamPage, mailbox: MailboxState, counted: list[tuple[int, int]] | None
    ) -> None:
        """Date order without SORT: windows of :data:`DATE_WINDOW` matches, newest UIDs first."""
        state, wanted = page.state, self.limit + 1
        if state.window_hi:
            uids = self.session.uid_search(
                [b"UID", f"{state.window_lo}:{state.window_hi}".encode(), *self.criteria],
                charset=self.charset,
            )
            window = self._window(state.window_lo, state.window_hi, uids)
        else:
            window = self._window_below(mailbox, None, state, counted)
        candidates = window.candidates
        if state.after and state.key is not None:
            anchor_key, anchor_uid = state.key, state.after[-1]
            candidates = [c for c in candidates if _older(c.key, c.uid, anchor_key, anchor_uid)]
        lowest = window.lo
        page.windowed = window.lo > 1 or window.hi < state.upper
        while len(candidates) < wanted and lowest > 1:
            older = self._window_below(mailbox, lowest, state)
            candidates = candidates + older.candidates
            lowest = older.lo
            page.windowed = True
        page.candidates = candidates[:wanted]
        page.more_beyond = len(candidates) > wanted or lowest > 1

    def _window_below(
        self,
        mailbox: MailboxState,
        below: int | None,
        state: StreamState,
        counted: list[tuple[int, int]] | None = None,
    ) -> Window:
        uids, upper = newest_matches(
            self.session,
            mailbox,
            self.criteria,
            charset=self.charset,
            wanted=DATE_WINDOW + 1,
            below=below,
            upper=state.upper or None,
            counted=counted,
        )
        state.upper = upper
        hi = (below - 1) if below is not None else upper
        if len(uids) > DATE_WINDOW:
            uids = uids[:DATE_WINDOW]
            return self._window(min(uids), hi, uids)
        return self._window(1, hi, uids)

    def _window(self, lo: int, hi: int, uids: Iterable[int]) -> Window:
        inside = sorted({u for u in uids if lo <= u <= hi})
        keys = sort_keys(self.session, inside, "date")
        candidates = [Candidate(uid, keys.get(uid), (lo, hi)) for uid in inside]
        candidates.sort(key=lambda c: (-(c.key or 0), c.uid))
        return Window(lo, hi, candidates)


def ordered_page(
    session: ImapSession,
    *,
    streams: list[StreamState],
    search: Query,
    sort: SortOrder,
    limit: int,
    strict: bool,
    total: int | None,
    returned: int,
    listed: Collection[str] = frozenset(),
    account_id: str = "",
    hints: dict[str, MailboxCounts] | None = None,
) -> OrderedPage:
    """One page over ``streams``, merged newest first. ``strict`` (one mailbox named alone): a mailbox
    error is the call's error; otherwise a failed mailbox leaves the search (``failed``).
    ``total``: from the cursor, None on the first page (then summed over the mailboxes); ``listed``:
    the mailboxes that this call's LIST showed; ``hints``: their counts from LIST-STATUS or STATUS
    (a first page's windows, where the streams are read all at once)."""
    reader = StreamSearch(session, search, sort, limit, listed)
    merged = len(streams) > 1
    pages: list[StreamPage] = []
    waiting: list[StreamState] = []
    failed: list[tuple[str, Exception]] = []
    # Unknown heads first, then the newest: a stream whose head cannot make the page is not opened.
    ordered = sorted(streams, key=lambda s: (s.head is not None, -(s.head or 0)))
    # Read at once, every stream's candidates are there before the merge; those the one-at-a-time plan
    # would not open are dropped the same way, so the page and its cursor are the same.
    at_once = reads_at_once(sort, search, several=merged)
    found = reader.open_all(account_id, ordered, hints or {}) if at_once else {}
    for state in ordered:
        if merged and state.head is not None and _page_full_before(pages, limit, state.head):
            waiting.append(state)
            continue
        try:
            opened = found.get(id(state))
            page = reader.open(state, with_keys=merged) if opened is None else reader.opened(state, opened)
            pages.append(page)
        except Exception as exc:
            failure = mailbox_failure(exc)
            if strict or failure is None:
                raise
            failed.append((state.mailbox, failure))
    _merge(pages, limit)
    picks = [
        (page.state.mailbox, page.state.uidvalidity, candidate.uid)
        for candidate, page in _in_merge_order(pages)
    ]
    for page in pages:
        _advance(page.state, page.taken, sort)
        rest = page.candidates[len(page.taken) :]
        page.state.head = rest[0].key if merged and rest else None
    ongoing = [page.state for page in pages if page.has_more] + waiting
    return OrderedPage(
        picks=picks,
        total=total if total is not None else sum(page.total for page in pages),
        next_streams=ongoing if picks else [],
        failed=failed,
        windowed=any(page.windowed for page in pages),
        mailboxes=[page.state.mailbox for page in pages],
    )


def _page_full_before(pages: list[StreamPage], limit: int, key: int) -> bool:
    """Whether merging ``pages`` fills the page with messages newer than ``key`` (so a stream whose next
    message has that key contributes nothing to it)."""
    taken = 0
    for candidate, _ in itertools.islice(_merge_order(pages), limit):
        if (candidate.key or 0) <= key:
            return False
        taken += 1
    return taken >= limit


def _merge_order(pages: list[StreamPage]) -> Iterator[tuple[Candidate, StreamPage]]:
    """The candidates newest first, always the head with the newest key, keeping each stream's order."""
    heap = [(-(page.candidates[0].key or 0), index, 0) for index, page in enumerate(pages) if page.candidates]
    heapq.heapify(heap)
    while heap:
        _, index, position = heapq.heappop(heap)
        page = pages[index]
        yield page.candidates[position], page
        if position + 1 < len(page.candidates):
            heapq.heappush(heap, (-(page.candidates[position + 1].key or 0), index, position + 1))


def _merge(pages: list[StreamPage], limit: int) -> None:
    """Take up to ``limit`` candidates in merge order."""
    for order, (candidate, page) in enumerate(itertools.islice(_merge_order(pages), limit)):
        candidate.order = order
        page.taken.append(candidate)


def _in_merge_order(pages: list[StreamPage]) -> list[tuple[Candidate, StreamPage]]:
    taken = [(candidate, page) for page in pages for candidate in page.taken]
    return sorted(taken, key=lambda pair: pair[0].order)


def _advance(state: StreamState, taken: list[Candidate], sort: SortOrder) -> None:
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

"""Ordered streams: search pages of one mailbox, in arrival or sent-date order, with one cursor.

The mailbox searched (one named alone, or Gmail's All Mail for every folder) is a *stream* of its
matching messages in the page's order:

* arrival order: UID descending, read in UID windows (:mod:`mail_imap_mcp.imap.search.plan`);
* date order where the server advertises SORT: ``UID SORT (REVERSE DATE)`` of the matches (UIDs only);
* date order without SORT (Gmail, Microsoft 365): the newest :data:`DATE_WINDOW` matches by UID are read
  with their Date header and sorted here; older matches follow in further windows of that size, each
  sorted within itself, and the page says so (``date_order_windowed``) when a search spans several.

A page takes up to ``limit + 1`` candidates, so it costs O(limit), never a full listing. The cursor
(:class:`StreamCursor`) keeps the mailbox's UIDVALIDITY, the snapshot's highest UID (mail arriving later
stays out of later pages) and the last UIDs taken from it: the next page continues right after them, so
every message that exists throughout comes exactly once, whatever arrives or is deleted in between. A
page of several mailboxes is read by one position (:mod:`mail_imap_mcp.imap.search.position`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mail_imap_mcp.imap.errors import mailbox_failure
from mail_imap_mcp.imap.search.dated_plan import DateWindows, Locate, after_anchor
from mail_imap_mcp.imap.search.execute import KEY_ITEMS, SearchExecutor, response_key
from mail_imap_mcp.imap.search.merge import Candidate, StreamPage, take
from mail_imap_mcp.imap.search.plan import Newest, StreamStart
from mail_imap_mcp.mail.cursors import SortOrder, StreamState
from mail_imap_mcp.mail.errors import UidValidityChanged
from mail_imap_mcp.mail.pages import StreamAsk
from mail_imap_mcp.mail.records import OrderedPage
from mail_imap_mcp.query import DIALECTS, Key, Query, needs_utf8, search_keys

if TYPE_CHECKING:
    from mail_imap_mcp.imap.session import ImapSession

#: Without SORT, date order is exact within windows of this many matches (newest by UID first).
DATE_WINDOW = 1000


def sort_keys(session: ImapSession, uids: list[int], sort: SortOrder) -> dict[int, int | None]:
    """Sort key of each of ``uids`` in one FETCH: INTERNALDATE, or (date) the Date header else INTERNALDATE."""
    if not uids:
        return {}
    answer = session.fetch_range(uids, KEY_ITEMS[sort])
    return {uid: response_key(response, sort) for uid, response in answer.items()}


def _locate(session: ImapSession, order: list[int], state: StreamState) -> int:
    """Where to continue ``order`` (SORT's answer) when every anchor was deleted: the position the
    :class:`~.search.dated_plan.Locate` plan finds by date, its probes read here."""
    if state.key is None or not state.after:
        return 0
    plan = Locate(order, state.key, state.after[-1])
    while probes := plan.probes():
        plan.answered(probes, sort_keys(session, [order[i] for i in probes], "date"))
    assert plan.position is not None
    return plan.position


@dataclass
class Window:
    """Without SORT: matches of a UID range, read with their dates and sorted here."""

    lo: int
    hi: int
    candidates: list[Candidate]
    #: On a first page: every match of the mailbox (the scan that read the first window counted them).
    total: int = 0


class StreamSearch:
    """The streams of one page of one search, read on one session."""

    def __init__(
        self,
        session: ImapSession,
        account_id: str,
        search: Query,
        sort: SortOrder,
        limit: int,
        *,
        listed: Collection[str] = frozenset(),
        compile_keys: Callable[[Query], list[Key]] = search_keys,
    ) -> None:
        self.session = session
        #: Arrival order: the newest matches; date order without SORT: the windows of matches, sorted here.
        self.reader = SearchExecutor(session, account_id, search, compile_keys=compile_keys)
        #: Mailboxes this call's LIST just showed: like those of a cursor, known to exist.
        self.listed = listed
        self.sort = sort
        self.limit = limit
        self.charset = "UTF-8" if needs_utf8(search) else None
        self.criteria = compile_keys(search)

    @property
    def server_sorts(self) -> bool:
        return self.sort == "date" and self.session.profile.sorts

    def open(self, state: StreamState) -> StreamPage:
        """Examine the stream's mailbox and read its candidates for this page."""
        if self.sort == "arrival":
            return self.opened(state, self.reader.newest(_start(state), self.limit + 1))
        first = not state.uidvalidity
        order = self._sort(state, first) if self.server_sorts else None
        mailbox = self.session.examine(state.mailbox)
        if state.uidvalidity and mailbox.uidvalidity != state.uidvalidity:
            raise UidValidityChanged(state.uidvalidity, mailbox.uidvalidity, state.mailbox)
        state.uidvalidity = mailbox.uidvalidity
        page = StreamPage(state, mailbox)
        if first and mailbox.exists == 0:
            state.upper = max(mailbox.uidnext - 1, 0)
            return page
        if order is not None:
            self._sorted(page, first, order)
        else:
            self._windowed(page, first)
        return page

    def opened(self, state: StreamState, found: Newest | Exception) -> StreamPage:
        """The stream's page from what was read of it (its failure raised here)."""
        if isinstance(found, Exception):
            raise found
        state.uidvalidity, state.upper = found.state.uidvalidity, found.upper
        page = StreamPage(state, found.state, total=found.total)
        wanted = self.limit + 1
        page.candidates = [Candidate(uid, None) for uid in found.uids[:wanted]]
        page.more_beyond = len(found.uids) > wanted
        return page

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
            found = after_anchor(order, state)
            start = found if found is not None else _locate(self.session, order, state)
        wanted = self.limit + 1
        page.candidates = [Candidate(uid, None) for uid in order[start : start + wanted]]
        page.more_beyond = len(order) > start + wanted

    def _windowed(self, page: StreamPage, first: bool) -> None:
        """Date order without SORT: windows of :data:`DATE_WINDOW` matches, newest UIDs first, as the
        :class:`~.search.dated_plan.DateWindows` plan asks them."""
        state = page.state
        anchor = (state.key, state.after[-1]) if state.after and state.key is not None else None
        plan = DateWindows(self.limit + 1, anchor)
        if state.window_hi:
            uids = self.session.uid_search(
                [b"UID", f"{state.window_lo}:{state.window_hi}".encode(), *self.criteria],
                charset=self.charset,
            )
            window = self._window(state.window_lo, state.window_hi, uids)
        else:
            window = self._window_below(state, None, first=first)
            if first:
                page.total = window.total
        plan.took(window.lo, window.candidates)
        while (below := plan.next_below()) is not None:
            older_window = self._window_below(state, below)
            plan.took(older_window.lo, older_window.candidates)
        page.windowed = window.lo > 1 or window.hi < state.upper or plan.windowed
        page.candidates = plan.candidates[: self.limit + 1]
        page.more_beyond = plan.more_beyond

    def _window_below(self, state: StreamState, below: int | None, *, first: bool = False) -> Window:
        """The next :data:`DATE_WINDOW` matches below ``below`` (None: the newest), read and sorted by
        date; on a first page, the one scan that also counts every match."""
        start = StreamStart(state.mailbox, 0 if first else state.uidvalidity, state.upper, below)
        found = self.reader.newest(start, DATE_WINDOW + 1)
        if isinstance(found, Exception):
            raise found
        uids, state.upper = found.uids, found.upper
        hi = (below - 1) if below is not None else found.upper
        if len(uids) > DATE_WINDOW:
            uids = uids[:DATE_WINDOW]
            return self._window(min(uids), hi, uids, found.total)
        return self._window(1, hi, uids, found.total)

    def _window(self, lo: int, hi: int, uids: Iterable[int], total: int = 0) -> Window:
        inside = sorted({u for u in uids if lo <= u <= hi})
        keys = sort_keys(self.session, inside, "date")
        candidates = [Candidate(uid, keys.get(uid), (lo, hi)) for uid in inside]
        candidates.sort(key=lambda c: (-(c.key or 0), c.uid))
        return Window(lo, hi, candidates, total)


def ordered_page(session: ImapSession, ask: StreamAsk, account_id: str) -> OrderedPage:
    """One page of the ask's stream's mailbox, in its order (:class:`~mail_imap_mcp.mail.pages.StreamAsk`:
    where ``strict``, one mailbox named alone, a mailbox error is the call's error; otherwise, Gmail's All
    Mail for every folder, it is the page's ``failed``)."""
    stream, sort, limit, total = ask.stream, ask.sort, ask.limit, ask.total
    compile_keys = DIALECTS[ask.dialect]
    reader = StreamSearch(
        session, account_id, ask.search, sort, limit, listed=ask.listed, compile_keys=compile_keys
    )
    try:
        page = reader.open(stream)
    except Exception as exc:
        failure = mailbox_failure(exc)
        if ask.strict or failure is None:
            raise
        return OrderedPage(picks=[], total=total or 0, next_stream=None, failed=[(stream.mailbox, failure)])
    picks, ongoing = take(page, limit, sort)
    return OrderedPage(
        picks=picks,
        total=total if total is not None else page.total,
        next_stream=ongoing if picks else None,
        windowed=page.windowed,
        mailboxes=[stream.mailbox],
    )


def _start(state: StreamState) -> StreamStart:
    """Where a stream's arrival-order read starts: below the last UID a page took from it."""
    return StreamStart(
        state.mailbox, state.uidvalidity, state.upper, state.after[-1] if state.after else None
    )

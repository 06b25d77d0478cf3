"""A page of several mailboxes in arrival order, continued from one position, as data.

The page order is one total order over every message searched: its key newest first (INTERNALDATE in
arrival order; in date order the Date header, else INTERNALDATE, as RFC 5256's SORT DATE), then the
mailbox's place in the search's list, then UID ascending (as RFC 5256 SORT orders equal keys: by their
place in the mailbox). A next page is what follows the last message taken (the
:class:`PagePosition`), so the cursor is that position and digests, whatever the number of mailboxes.
Every message that exists throughout the paging comes exactly once; one that arrives or moves in
meanwhile comes at its place if that place is still ahead, never twice.

Each mailbox answers its reads after its EXAMINE (:func:`mailbox_reads`), in one round trip for all:

* ``top`` (a server with SORT): ``UID SORT (REVERSE ARRIVAL)`` of the matches, a slice of the newest
  where ESORT offers ``RETURN (PARTIAL 1:n COUNT)``; on a next page, of the matches whose date is more
  than :data:`NEAR_DAYS` days before the position's (all of them older than it, whatever the time zones);
* ``band`` (a server without SORT, as Gmail or Microsoft 365): ``UID SEARCH`` of the older matches in
  bands of days (:data:`BAND_EDGES`), newest first; within a band nothing says which arrived last, so a
  band's keys are read whole, and what lies in the bands not read is older than the last band read, by
  its dates;
* ``near`` (a next page only): ``UID SEARCH`` of the matches of the days around the position's, whose
  INTERNALDATE decides which come after it; ``undated`` (date order without SORT): the matches without
  a Date header, which that order places by their arrival.

Then the INTERNALDATE of the first of ``top`` (or of the first bands) and of the ``near`` matches, one
FETCH each mailbox, in a second round trip. :func:`trusted` keeps what is known to follow the position
in order (reading more keys, in rare further round trips, where many messages share one arrival time or
one band of days), and :func:`merge` takes the page. Pure: no session.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from mail_imap_mcp.mail.pages import PagePosition, place

#: Either side of the position's day, the days whose matches are read whole: an IMAP date search
#: compares dates "disregarding time and timezone", so a day's bounds are only known to within a day.
NEAR_DAYS = 2

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def imap_date(day: date) -> bytes:
    """A search date (``25-Nov-2026``), spelled as RFC 3501 asks whatever the locale."""
    return f"{day.day}-{_MONTHS[day.month - 1]}-{day.year}".encode()


def _day(key: int) -> date:
    return datetime.fromtimestamp(key, UTC).date()


@dataclass(frozen=True)
class Read:
    """One command after a mailbox's EXAMINE: ``top`` (``UID SORT``: ``head`` before the charset, the
    search criteria after it), or ``near``, ``band`` or ``undated`` (``UID SEARCH`` of the criteria);
    ``tail`` follows the criteria (the days that bound them). ``floor``: a band's first day (None: the
    band of everything older)."""

    kind: str
    head: tuple[bytes, ...]
    tail: tuple[bytes, ...]
    floor: date | None = None


#: Without SORT, the older matches are searched in bands of days, each one's first day this many days
#: before the band's anchor (the day the older matches end; on a first page, tomorrow), and a last band of
#: everything older: eight searches a mailbox, in the same round trip. Widths growing fourfold from two
#: days (a band is at least as wide as a date search is uncertain): the band a page needs is found at
#: once, and its keys cost a few times what the page needs, as the days of a quiet mailbox run.
BAND_EDGES = (2, 8, 32, 128, 512, 2048, 8192)
#: How far past midnight UTC a day of a date search reaches: it compares dates "disregarding time and
#: timezone", so a message of a day before a band's first one arrived before that day's noon UTC (the
#: zones reach from UTC-12 to UTC+14); a day is kept as margin.
DAY_SLACK = 86_400
#: At most this many keys of a mailbox in one round trip (a band of many messages is read in several).
KEY_CHUNK = 2_000


#: Per order: the SORT criterion, and the search key of the older matches' days (arrival: INTERNALDATE;
#: date: the Date header; the near read of date order adds the messages without one, which the server
#: sorts by INTERNALDATE and may leave out of SENTSINCE and SENTBEFORE).
_ORDERS = {"arrival": (b"(REVERSE ARRIVAL)", b"BEFORE"), "date": (b"(REVERSE DATE)", b"SENTBEFORE")}


def mailbox_reads(
    wanted: int,
    position: PagePosition | None,
    *,
    partial: bool,
    sort: str = "arrival",
    sorts: bool = True,
    today: date | None = None,
) -> list[Read]:
    """What one mailbox is asked after its EXAMINE for ``wanted`` messages after ``position`` (None: a
    first page) in ``sort`` order, besides the search's own criteria. ``partial``: the server offers
    ESORT's PARTIAL (a slice and the count, not every match); ``sorts``: it offers SORT at all, else the
    older matches are searched in bands of days, the first of them ending after ``today`` (UTC) on a
    first page."""
    if not sorts:
        return _banded_reads(position, sort, today or datetime.now(UTC).date())
    criterion, before_key = _ORDERS[sort]
    older: tuple[bytes, ...] = ()
    reads = []
    if position is not None:
        day = _day(position.key)
        since, before = imap_date(day - timedelta(days=NEAR_DAYS)), imap_date(day + timedelta(days=NEAR_DAYS))
        if sort == "arrival":
            near: tuple[bytes, ...] = (b"SINCE", since, b"BEFORE", before)
        else:
            days = b"(SENTSINCE " + since + b" SENTBEFORE " + before + b")"
            near = (b"OR", days, b"NOT", b"HEADER", b"DATE", b'""')
        reads.append(Read("near", (), near))
        older = (before_key, since)
    head = (b"RETURN", f"(PARTIAL 1:{wanted + LOOKAHEAD} COUNT)".encode()) if partial else ()
    reads.append(Read("top", (*head, criterion), older))
    return reads


def _banded_reads(position: PagePosition | None, sort: str, today: date) -> list[Read]:
    since_key, before_key = (b"SINCE", b"BEFORE") if sort == "arrival" else (b"SENTSINCE", b"SENTBEFORE")
    reads = []
    if sort == "date":
        reads.append(Read("undated", (), (b"NOT", b"HEADER", b"DATE", b'""')))
    upper: date | None = None
    anchor = today + timedelta(days=1)
    if position is not None:
        day = _day(position.key)
        since, before = day - timedelta(days=NEAR_DAYS), day + timedelta(days=NEAR_DAYS)
        reads.append(Read("near", (), (since_key, imap_date(since), before_key, imap_date(before))))
        anchor = upper = since
    for edge in BAND_EDGES:
        floor = anchor - timedelta(days=edge)
        below = (before_key, imap_date(upper)) if upper is not None else ()
        reads.append(Read("band", (), (since_key, imap_date(floor), *below), floor))
        upper = floor
    # Everything else (NOT SINCE rather than BEFORE: a date the server cannot read is in no band before).
    assert upper is not None
    reads.append(Read("band", (), (b"NOT", since_key, imap_date(upper))))
    return reads


#: Beyond the messages a page wants of a mailbox, the INTERNALDATE of this many more is read: equal
#: arrival times at the end of the slice read are then rarely cut in two (see :func:`trusted`).
LOOKAHEAD = 8
#: Each further read of a mailbox's keys covers this many times as many messages.
GROWTH = 4


@dataclass
class MailboxPart:
    """One mailbox's part of a page: what its reads found, as far as they went."""

    mailbox: str
    index: int
    #: What its EXAMINE showed (0 until then, or when it failed).
    uidvalidity: int = 0
    #: The older matches newest first as the server sorted them: all of them, or the first (ESORT).
    order: list[int] = field(default_factory=list)
    #: How many older matches there are (the mailbox's matches on a first page).
    count: int = 0
    #: The matches of the days around the position (any order).
    near: list[int] = field(default_factory=list)
    #: UID -> INTERNALDATE (epoch seconds; 0 when unreadable) of what was read.
    keys: dict[int, int] = field(default_factory=dict)
    #: How many of ``order`` have had their INTERNALDATE read.
    keyed: int = 0
    #: What ended this mailbox's part (missing, recreated, refused): its result.
    failure: Exception | None = None
    #: Searched in bands of days (no SORT): where each band ends in ``order``, and its first day's
    #: midnight UTC (epoch seconds; None: the band of everything older).
    edges: list[int] = field(default_factory=list)
    floors: list[int | None] = field(default_factory=list)

    def take_band(self, uids: Sequence[int], floor: date | None) -> None:
        """A band's matches (any order), after those of the newer bands."""
        known = set(self.near)
        self.order.extend(sorted((uid for uid in set(uids) if uid not in known), reverse=True))
        self.edges.append(len(self.order))
        self.floors.append(_midnight(floor) if floor is not None else None)
        self.count = len(self.order)

    def needs_order(self, wanted: int) -> bool:
        """Whether the next keys to read lie beyond the slice the server sorted out (a full sort first)."""
        return not self.edges and self._goal(wanted) > len(self.order) and len(self.order) < self.count

    def keys_to_read(self, wanted: int) -> tuple[int, list[int]]:
        """How far into ``order`` the next read of keys reaches, and the UIDs it reads (with the first,
        the ``near`` matches too)."""
        goal = min(self._goal(wanted), len(self.order))
        uids = self.order[self.keyed : goal]
        return goal, sorted(set(uids) | set(self.near)) if self.keyed == 0 else uids

    def _goal(self, wanted: int) -> int:
        if not self.edges:
            return wanted + LOOKAHEAD if self.keyed == 0 else self.keyed * GROWTH
        # Bands: the first ones that hold what the page wants, later one more band, whole (in chunks).
        least = wanted + LOOKAHEAD if self.keyed == 0 else self.keyed + 1
        end = next((edge for edge in self.edges if edge >= least), len(self.order))
        return min(end, self.keyed + KEY_CHUNK)


@dataclass
class Trusted:
    """A mailbox's messages known to follow the position, in page order, and whether more follow them."""

    index: int
    messages: list[tuple[int, int]]
    #: Matches after these exist (the ``top`` slice was cut, or ``near`` held some past its end).
    more: bool


def trusted(part: MailboxPart, position: PagePosition | None, wanted: int) -> Trusted | None:
    """The messages of ``part`` that follow ``position``, in page order, as far as they are known to be
    complete; None when that is fewer than ``wanted`` while more exist (read more keys first).

    The older matches whose keys are unread are no newer than the last key read (the server sorted them
    by arrival), so everything newer than that is known. Equal arrival times are not trusted to the
    server's order (RFC 5256 keeps mailbox order, Courier 5 reverses it), only to their keys."""
    index = part.index
    seen = part.near + part.order[: part.keyed]
    known = [(part.keys[uid], uid) for uid in dict.fromkeys(seen) if uid in part.keys]
    after = [(k, uid) for k, uid in known if position is None or not position.passed(k, index, uid)]
    after.sort(key=lambda m: place(m[0], index, m[1]))
    if part.keyed >= part.count:
        return Trusted(index, after, False)
    if part.edges:
        return _trusted_by_bands(part, after, wanted)
    read = [part.keys[uid] for uid in part.order[: part.keyed] if uid in part.keys]
    last = min(read) if read else None
    complete = [m for m in after if last is not None and m[0] > last]
    return Trusted(index, complete, True) if len(complete) >= wanted else None


def tied_before(parts: Sequence[MailboxPart], position: PagePosition) -> int:
    """How many messages of ``parts`` share the position's key at or before it (listed by then), as the
    ``near`` reads found them (their keys are all read). More than when the position was set: messages
    filed meanwhile (a move keeps INTERNALDATE) into a place the order had passed, where a mailbox or UID
    before the position's breaks the tie: never listed if they came from a place not yet reached."""
    key = position.key
    return sum(
        1
        for part in parts
        if part.failure is None
        for uid in part.near
        if part.keys.get(uid) == key and position.passed(key, part.index, uid)
    )


def _trusted_by_bands(part: MailboxPart, after: list[tuple[int, int]], wanted: int) -> Trusted | None:
    """What follows in a mailbox searched in bands: the messages of the bands read whole (and ``near``)
    that arrived after the latest time a message of an unread band can have (its dates are before the
    last band read)."""
    full = sum(1 for edge in part.edges if edge <= part.keyed)
    floor = part.floors[full - 1] if full else None
    if floor is None:
        return None
    complete = [m for m in after if m[0] >= floor + DAY_SLACK]
    return Trusted(part.index, complete, True) if len(complete) >= wanted else None


def _midnight(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())


@dataclass
class MergedPage:
    """A page's picks, ``(mailbox index, uid, key)`` in page order, and where a next page starts."""

    picks: list[tuple[int, int, int]]
    #: None: this was the last page.
    next_position: PagePosition | None


def merge(parts: Sequence[Trusted], limit: int) -> MergedPage:
    """The first ``limit`` messages of every mailbox's known messages, in page order. Exact: a mailbox
    with more messages than it knows offers more than ``limit``, so a page never reaches past them."""
    streams = [
        [(place(key, part.index, uid), part.index, uid, key) for key, uid in part.messages] for part in parts
    ]
    ordered = heapq.merge(*streams)
    picks = [(index, uid, key) for _, index, uid, key in itertools.islice(ordered, limit)]
    offered = sum(len(part.messages) for part in parts)
    more = offered > len(picks) or any(part.more for part in parts)
    if not picks or not more:
        return MergedPage(picks, None)
    index, uid, key = picks[-1]
    return MergedPage(picks, PagePosition(key, index, uid))


def partial_answer(lines: Sequence[object]) -> tuple[list[int], int | None]:
    """The UIDs of an ESORT answer's ``PARTIAL (first:last uids)``, in the server's order, and its
    ``COUNT`` (None when absent); ``a:b`` inside the list runs from ``a`` to ``b`` as written."""
    uids: list[int] = []
    count = None
    for line in lines:
        if not isinstance(line, bytes):
            continue
        tokens = line.replace(b"(", b" ").replace(b")", b" ").split()
        for name, value in itertools.pairwise(tokens):
            if name.upper() == b"COUNT" and value.isdigit():
                count = int(value)
        head, found, _ = line.upper().partition(b"PARTIAL (")
        if not found:
            continue
        inside = line[len(head) + len(found) :].split(b")", 1)[0].split()
        if len(inside) == 2 and inside[1].upper() != b"NIL":
            for run in inside[1].split(b","):
                first, _, last = run.partition(b":")
                low, high = int(first), int(last or first)
                uids.extend(range(low, high + 1) if low <= high else range(low, high - 1, -1))
    return uids, count

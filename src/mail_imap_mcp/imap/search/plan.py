"""How a search reads a mailbox newest first, as data: what to send and what each answer means.

Pure: no session, no socket. :class:`UidWindows` holds the window rules (UID windows that grow until a
page has enough matches, kept inside the snapshot); :class:`StreamRead` is one mailbox's part of a page:
the :class:`Read` commands to send after its EXAMINE, then after each answer (:class:`Answer`) the next
ones, until it gives the mailbox's newest matches (:class:`Newest`). The executor (:mod:`.execute`)
sends them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from mail_imap_mcp.imap.mailbox_state import MailboxState
from mail_imap_mcp.query import Query, needs_utf8

#: A filtered search's first window spans at least this many UIDs (matches are sparser than messages).
MIN_FILTERED_WINDOW = 2000
#: Each further window spans this many times the one before.
WINDOW_GROWTH = 4


def reads_at_once(query: Query) -> bool:
    """Whether a page of several mailboxes (read by one position, :mod:`.position_read`) reads them all
    at once (pipelined: every mailbox's EXAMINE and reads in one round trip) rather than one after the
    other: for a query without non-ASCII text (a CHARSET search sends literals, which wait for the
    server's continuation)."""
    return not needs_utf8(query)


def first_window(state: MailboxState, wanted: int, *, filtered: bool) -> int:
    """How many UIDs the first window spans: ``wanted`` scaled by the mailbox's density (UIDs have gaps
    where messages were expunged), wider for a filtered search."""
    density = state.exists / max(1, state.uidnext - 1) if state.uidnext > 1 else 1.0
    window = math.ceil(wanted / max(density, 0.01) * 1.25) + 8
    return max(window, MIN_FILTERED_WINDOW) if filtered else window


@dataclass
class UidWindows:
    """The windows of one mailbox's search, newest first: read :meth:`uid_set`, give what it found to
    :meth:`take`, and :meth:`widen` while not :attr:`done`."""

    wanted: int
    window: int
    #: The window's highest UID; None: up to ``*`` (a first search also sees mail that arrived after
    #: the mailbox was opened).
    hi: int | None
    lo: int
    #: The snapshot's highest UID (None until the first window sets it): later arrivals stay out.
    upper: int | None
    #: The matches found, newest first.
    matches: list[int] = field(default_factory=list)
    done: bool = False

    @classmethod
    def start(
        cls, state: MailboxState, wanted: int, *, filtered: bool, below: int | None, upper: int | None
    ) -> UidWindows:
        """The first window of a search of ``state`` (its UIDNEXT and EXISTS size it) for ``wanted``
        matches below UID ``below`` (None: from the newest) and at most ``upper`` (None: a first page)."""
        window = first_window(state, wanted, filtered=filtered)
        hi = None if below is None else below - 1
        top = hi if hi is not None else max(state.uidnext - 1, 1)
        windows = cls(wanted, window, hi, max(1, top - window + 1), upper)
        windows.done = hi is not None and hi < 1
        return windows

    def uid_set(self) -> str:
        """The UID range of the window to read (``lo:hi`` or ``lo:*``)."""
        return f"{self.lo}:{self.hi if self.hi is not None else '*'}"

    def take(self, found: Iterable[int], uidnext: int) -> None:
        """What the window's read found (UIDs in any order; ``n:*`` also answers the highest UID when it
        is below ``n``): kept inside the window and the snapshot, newest first; the snapshot is set by
        the first window (``uidnext``: the mailbox's, as opening it said)."""
        lo, hi, upper = self.lo, self.hi, self.upper
        inside = [u for u in found if u >= lo and (hi is None or u <= hi) and (upper is None or u <= upper)]
        self.matches.extend(sorted(inside, reverse=True))
        if self.upper is None:
            top = hi if hi is not None else max(uidnext - 1, 1)
            self.upper = max([top, *inside])
        self.done = len(self.matches) >= self.wanted or lo <= 1

    def widen(self) -> None:
        """Move to the next window below this one, :data:`WINDOW_GROWTH` times as wide."""
        self.hi, self.window = self.lo - 1, self.window * WINDOW_GROWTH
        self.lo = max(1, self.hi - self.window + 1)


def newest_of(runs: list[tuple[int, int]], wanted: int) -> list[int]:
    """The ``wanted`` highest UIDs of ascending ``(first, last)`` runs, newest first."""
    newest: list[int] = []
    for first, last in reversed(runs):
        newest.extend(range(last, max(first, last - (wanted - len(newest)) + 1) - 1, -1))
        if len(newest) >= wanted:
            break
    return newest


@dataclass
class StreamStart:
    """Where one mailbox's part of a page starts."""

    mailbox: str
    #: The cursor's UIDVALIDITY and snapshot; 0 on a first page.
    uidvalidity: int = 0
    upper: int = 0
    #: Continue below this UID (None: from the newest).
    below: int | None = None

    @property
    def first(self) -> bool:
        return not self.uidvalidity


#: ``search``: ``UID SEARCH`` of the query in ``uids`` (None: the whole mailbox); ``count_all``: the same
#: with ``RETURN (COUNT ALL)`` (ESEARCH: the number of matches and every one as a compact set).
ReadKind = Literal["search", "count_all"]


@dataclass(frozen=True)
class Read:
    """One command to send on a mailbox once it is examined."""

    kind: ReadKind
    uids: str | None = None


@dataclass
class Answer:
    """A :class:`Read`'s answer as the executor parsed it."""

    #: ``search``: the UIDs found (any order).
    uids: list[int] = field(default_factory=list)
    #: ``count_all``: the number of matches and their ascending ``(first, last)`` runs.
    count: int = 0
    runs: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class Newest:
    """One mailbox's newest matches (UIDs newest first, as the windows found them)."""

    state: MailboxState
    uids: list[int]
    #: Matches on a first page (0 on later pages: the cursor keeps the total).
    total: int
    #: The snapshot's highest UID.
    upper: int


@dataclass
class StreamRead:
    """One mailbox's part of a page, as data: :meth:`opening` says what to send with its EXAMINE,
    :meth:`opened` takes the answers, then :meth:`widening` says what to send next while a window held
    too few matches, until :meth:`result`.

    A filtered first page reads every match in one scan, whose number is the total: a ``UID SEARCH``
    of the whole mailbox, or ``RETURN (COUNT ALL)`` where ESEARCH is offered and the mailbox is larger
    than the first window (a compact UID set instead of every UID). An unfiltered page reads UID windows."""

    start: StreamStart
    #: Matches the page needs from this mailbox (``limit + 1``: one more tells whether more follow).
    wanted: int
    filtered: bool
    esearch: bool
    windows: UidWindows | None = None
    state: MailboxState | None = None
    total: int = 0
    #: What ended this mailbox's read (the mailbox missing, recreated, refused): its result.
    failure: Exception | None = None
    #: A filtered first page's one scan of the whole mailbox: its matches are the total...
    whole: bool = False
    #: ... counted by ``RETURN (COUNT ALL)``.
    counted_all: bool = False

    def opening(self, state: MailboxState) -> list[Read]:
        """The reads sent right after the mailbox's EXAMINE (``state``: what it said, which sizes the
        first window)."""
        start = self.start
        upper = start.upper or None
        self.windows = UidWindows.start(
            state, self.wanted, filtered=self.filtered, below=start.below, upper=upper
        )
        self.whole = start.first and self.filtered
        self.counted_all = self.whole and self.esearch and self.windows.lo > 1
        if self.windows.done or (start.first and state.exists == 0):
            return []
        if self.whole:
            return [Read("count_all" if self.counted_all else "search")]
        return [self._window()]

    def _window(self) -> Read:
        assert self.windows is not None
        return Read("search", self.windows.uid_set())

    def opened(self, state: MailboxState, answers: list[Answer]) -> None:
        """What EXAMINE said of the mailbox and the answers of :meth:`opening`'s reads."""
        self.state = state
        windows = self.windows
        assert windows is not None
        if self.start.first:
            if state.exists == 0:  # nothing to search: the snapshot ends at UIDNEXT
                windows.upper, windows.done = max(state.uidnext - 1, 0), True
                return
            if not self.filtered:
                self.total = state.exists
        if not answers:  # nothing below the cursor's anchor
            windows.done = True
            return
        if self.counted_all:  # every match as runs: the newest taken, never the whole set expanded
            self.total, windows.done = answers[0].count, True
            windows.matches = newest_of(answers[0].runs, self.wanted + 1)
            windows.upper = max([max(state.uidnext - 1, 1), *windows.matches[:1]])
            return
        if self.whole:
            windows.lo = 1
        self.took(answers[0])
        if self.whole:
            self.total = len(windows.matches)

    def widening(self) -> list[Read]:
        """The next, wider window below the last one, while the mailbox has given too few matches."""
        if self.failure is not None or self.windows is None or self.windows.done:
            return []
        self.windows.widen()
        return [self._window()]

    def took(self, answer: Answer) -> None:
        """The answer of a window just read: its matches kept by the windows' rules."""
        assert self.windows is not None and self.state is not None
        self.windows.take(answer.uids, self.state.uidnext)

    def result(self) -> Newest | Exception:
        if self.failure is not None:
            return self.failure
        assert self.state is not None and self.windows is not None
        windows = self.windows
        return Newest(self.state, windows.matches, self.total, windows.upper or 0)

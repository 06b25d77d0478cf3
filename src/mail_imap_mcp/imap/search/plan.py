"""How a search reads a mailbox newest first, as data: UID windows that grow until a page has enough
matches, kept inside the snapshot. Pure: no session, no socket; the one-mailbox page
(:func:`~mail_imap_mcp.imap.search.pages.newest_matches`, one window per round trip) and the pipelined
plan over many mailboxes (:mod:`mail_imap_mcp.imap.across`, every mailbox's window in one round trip)
both step the same :class:`UidWindows`, so their rules cannot drift apart.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from mail_imap_mcp.imap.view import MailboxState
from mail_imap_mcp.query import Query, needs_utf8

#: A filtered search's first window spans at least this many UIDs (matches are sparser than messages).
MIN_FILTERED_WINDOW = 2000
#: Each further window spans this many times the one before.
WINDOW_GROWTH = 4


def reads_at_once(sort: str, query: Query, *, several: bool) -> bool:
    """Whether a page reads its mailboxes all at once (pipelined: every mailbox's EXAMINE and window in
    one round trip) rather than one after the other: in arrival order, over several mailboxes, and for
    a query without non-ASCII text (a CHARSET search sends literals, which wait for the server's
    continuation). The one place this is decided."""
    return sort == "arrival" and several and not needs_utf8(query)


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

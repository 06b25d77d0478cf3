"""Sent-date order of one mailbox, as data: where a page continues in the server's SORT answer, and the
windows of matches sorted here where the server cannot sort. Pure: no session;
:mod:`mail_imap_mcp.imap.sort` sends what these ask and hands the answers back.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mail_imap_mcp.imap.search.merge import Candidate
from mail_imap_mcp.mail.cursors import StreamState

#: Probes per FETCH when a cursor's anchors were all deleted and the position is found by date.
LOCATE_PROBES = 64


def older(key: int | None, uid: int, anchor_key: int, anchor_uid: int) -> bool:
    """Whether a message comes after the anchor in date order (date descending, ties by UID ascending,
    which is how RFC 5256 SORT orders equal dates: by their place in the mailbox)."""
    key = key if key is not None else 0
    return key < anchor_key or (key == anchor_key and uid > anchor_uid)


def after_anchor(order: list[int], state: StreamState) -> int | None:
    """Index just after the latest anchor still in ``order``; None when none is left."""
    where = {uid: index for index, uid in enumerate(order)}
    for uid in reversed(state.after):
        if uid in where:
            return where[uid] + 1
    return None


@dataclass
class Locate:
    """Where to continue ``order`` (SORT's answer) when every anchor was deleted, found by date: ask
    :meth:`probes` (positions whose date to read, at most :data:`LOCATE_PROBES` a round trip), hand the
    dates to :meth:`answered`, until :attr:`position` (about three round trips for 100,000 messages)."""

    order: list[int]
    key: int
    anchor_uid: int
    #: The position lies in [lo, hi].
    lo: int = 0
    hi: int = -1
    step: int = 0
    position: int | None = None

    def __post_init__(self) -> None:
        if self.hi < 0:
            self.hi = len(self.order)

    def probes(self) -> list[int]:
        """The positions of ``order`` whose date the next round trip reads; empty once located."""
        if self.position is not None:
            return []
        if self.lo >= self.hi:
            self.position = self.lo
            return []
        self.step = max(1, (self.hi - self.lo) // LOCATE_PROBES)
        return list(range(self.lo, self.hi, self.step))

    def answered(self, probes: list[int], keys: dict[int, int | None]) -> None:
        """The dates (by UID) of the messages at ``probes``."""
        order = self.order
        first_older = next(
            (i for i in probes if older(keys.get(order[i]), order[i], self.key, self.anchor_uid)), self.hi
        )
        if self.step == 1:
            self.position = first_older
        else:
            self.lo, self.hi = max(self.lo, first_older - self.step + 1), first_older


@dataclass
class DateWindows:
    """Without SORT: a page's candidates in date order from windows of matches, each sorted here, newest
    UIDs first. Take each window read (:meth:`took`), and read the next one below :meth:`next_below`
    while it says so."""

    wanted: int
    #: After the cursor's last message (its date and UID), where the page continues; None: a first page.
    anchor: tuple[int, int] | None
    candidates: list[Candidate] = field(default_factory=list)
    #: The lowest UID of the windows read (1: the mailbox's oldest reached).
    lowest: int = 0
    #: The page spans several windows (its order is exact within each).
    windowed: bool = False
    windows: int = 0

    def took(self, lo: int, candidates: list[Candidate]) -> None:
        """A window from UID ``lo`` up, its candidates in date order."""
        if self.anchor is not None and self.windows == 0:
            key, uid = self.anchor
            candidates = [c for c in candidates if older(c.key, c.uid, key, uid)]
        self.candidates += candidates
        self.lowest = lo
        self.windows += 1
        self.windowed = self.windowed or self.windows > 1

    def next_below(self) -> int | None:
        """The UID the next, older window ends below; None when the page has its candidates."""
        if len(self.candidates) >= self.wanted or self.lowest <= 1:
            return None
        return self.lowest

    @property
    def more_beyond(self) -> bool:
        return len(self.candidates) > self.wanted or self.lowest > 1

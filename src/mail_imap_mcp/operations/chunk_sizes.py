"""How many UIDs the next command of a run on a whole search takes: sized from the server's work in the last
chunk (its time less its waits for the link's round trip) so each takes about :attr:`ChunkSizes.target_s`
of the server's time whatever the link, and a cancel (seen between two chunks) takes effect within one
chunk plus its round trips. Pure: no clock, no I/O."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ChunkSizes:
    """The first chunk's size, the bounds every size stays within, and the time a chunk aims at."""

    #: UIDs of the first chunk, before any time is measured.
    first: int = 100
    #: No chunk smaller (a server slow for any size gets at least this many per round trip).
    least: int = 10
    #: No chunk larger (one UID set of ranges in one command).
    most: int = 500
    #: The time a chunk aims at.
    target_s: float = 0.5
    #: A chunk grows at most this many times over the last one (a quick chunk of a few UIDs says little).
    growth: float = 4.0

    def __post_init__(self) -> None:
        if not 1 <= self.least <= self.first <= self.most:
            raise ValueError(f"chunk sizes out of order: {self.least} <= {self.first} <= {self.most}")
        if self.target_s <= 0 or self.growth < 1:
            raise ValueError("target_s must be positive and growth at least 1")

    def after(self, size: int, seconds: float, round_trips: int = 0, round_trip_s: float = 0.0) -> int:
        """The next chunk's size, the last one having taken ``seconds`` for ``size`` UIDs, of which
        ``round_trips`` waits of about ``round_trip_s`` each were the link's, not the server's work."""
        if size <= 0:
            return self.first
        seconds = max(0.0, seconds - round_trips * round_trip_s)
        if seconds <= 0:
            wanted = size * self.growth
        else:
            wanted = min(size * self.target_s / seconds, size * self.growth)
        return max(self.least, min(self.most, int(wanted)))

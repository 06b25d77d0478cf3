"""At most so many uses in any hour, counted in the store so that every process sharing it agrees.

A fixed clock hour lets twice the limit through across its end (all at 17:59, all again at 18:00). The
hour here slides: it is kept as five-minute slots, and a use is allowed while the slots that overlap the
last hour hold fewer than the limit. So no hour, wherever it starts, holds more than the limit; the cost
is that a use may be refused up to one slot (five minutes) before a strict count would allow it.

Round trips to the store (Redis in team mode): :meth:`HourlyRate.wait_s` one (the slots read at once);
:meth:`HourlyRate.take` two (the count, then the slots), three when refused (the count taken back).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from mail_imap_mcp.state.store import Store

HOUR_S = 3600
SLOT_S = 300


@dataclass(frozen=True)
class HourlyRate:
    """Uses of one thing (``key``, e.g. an account's sends) in the last hour, at most ``limit``.

    ``clock`` gives the time in seconds since the epoch (a test moves it). Every method may raise the
    store's :class:`~mail_imap_mcp.state.store.StateUnavailable`.
    """

    store: Store
    key: str
    limit: int
    clock: Callable[[], float] = time.time

    def wait_s(self) -> int | None:
        """None while a use may go now; else the whole seconds until one may."""
        now = self.clock()
        return self._wait_s(now, self._counts(now))

    def take(self) -> int | None:
        """Count a use now and None; or, where the hour's uses reached the limit, count nothing and
        return the whole seconds until a use may go. Two processes taking the last use at once are
        both refused, never both allowed."""
        now = self.clock()
        slot = int(now // SLOT_S)
        # The slot is counted while any hour that ends after it began overlaps it.
        self.store.incr(self._slot_key(slot), HOUR_S + SLOT_S)
        counts = self._counts(now)
        if sum(counts.values()) <= self.limit:
            return None
        self.store.incr(self._slot_key(slot), HOUR_S + SLOT_S, by=-1)
        counts[slot] -= 1
        return self._wait_s(now, counts)

    def _slot_key(self, slot: int) -> str:
        return f"{self.key}\0{slot}"

    def _counts(self, now: float) -> dict[int, int]:
        """Uses in each slot that overlaps the hour before ``now``, oldest first."""
        first, last = math.floor((now - HOUR_S) / SLOT_S), int(now // SLOT_S)
        slots = range(first, last + 1)
        # All in one read (one round trip to Redis, where a get a slot cost 13).
        values = self.store.get_many([self._slot_key(slot) for slot in slots])
        return {slot: int(value or 0) for slot, value in zip(slots, values, strict=True)}

    def _wait_s(self, now: float, counts: dict[int, int]) -> int | None:
        left = sum(counts.values())
        if left < self.limit:
            return None
        for slot, count in counts.items():
            left -= count
            if left < self.limit:
                # When this slot stops overlapping the hour before the time asked.
                return max(1, math.ceil((slot + 1) * SLOT_S + HOUR_S - now))
        return HOUR_S  # a limit of 0: never

"""A clock the test moves: handed to the product where its own timing is under test (issue 57).

Move it past a limit, never by exactly it: ``(b + 300) - b`` falls short of 300 for some ``b``.
"""

from __future__ import annotations

import threading

#: Real seconds a pause on a fake clock lasts: how soon the product sees the test move the clock.
REAL_TICK_S = 0.02


class FakeClock:
    """Monotonic seconds that change only when the test sets or adds to ``now``; ``waited`` tells whether
    the product has paused on it yet (a move before that only moves the product's deadline along), and
    ``pauses`` how often: one more than a count read after the product did something means it has
    since taken its next deadline from ``now``."""

    def __init__(self, now: float) -> None:
        self.now = now
        self.waited = False
        self.pauses = 0

    def __call__(self) -> float:
        return self.now

    def pause(self, event: threading.Event, seconds: float) -> bool:
        """The product's sleep on this clock (``WatchHub(pause=...)``): back after a real tick, or at once
        when ``event`` is set; the product looks at ``now`` again and sleeps on until the test moved it
        past what it waits for."""
        self.waited = True
        self.pauses += 1
        return event.wait(REAL_TICK_S)

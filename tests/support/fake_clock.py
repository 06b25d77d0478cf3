"""A clock the test moves: handed to the product where its own timing is under test (issue 57).

Move it past a limit, never by exactly it: ``(b + 300) - b`` falls short of 300 for some ``b``.
"""

from __future__ import annotations


class FakeClock:
    """Monotonic seconds that change only when the test sets or adds to ``now``."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

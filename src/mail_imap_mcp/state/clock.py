"""Sleeping on a clock a test can move (issue 57): the watchers' polls and reconnect pauses, the index
leases' renewals and asks. The product passes :func:`time.monotonic` and :meth:`threading.Event.wait`;
a test passes a clock it moves and a pause that comes back after a short real tick."""

from __future__ import annotations

import threading
from collections.abc import Callable

#: Seconds now, monotonic.
Clock = Callable[[], float]
#: Wait up to the seconds given or until the event is set; whether it is.
Pause = Callable[[threading.Event, float], bool]


def sleep_on(
    clock: Clock,
    pause: Pause,
    event: threading.Event,
    seconds: float,
    tick_s: float,
    holds: Callable[[], bool],
) -> bool:
    """Sleep ``seconds`` of ``clock`` while ``holds`` (asked at least every ``tick_s``, and the ``event``
    that ends a pause at once is set by whatever makes it False); whether it still holds."""
    until = clock() + seconds
    while (left := until - clock()) > 0 and holds():
        pause(event, min(left, tick_s))
    return holds()

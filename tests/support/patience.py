"""The suite's one patience: how long a test waits for something whose speed is not under test.

A test waits for a server to answer, a child to print, a file to appear. How long that takes depends on
how loaded the machine is, and the suite loads it itself (several xdist workers per core, each with its
own servers). So no test picks a wait of its own: it asks this module, which scales every wait by one
factor read once per run.

- ``MIM_TEST_PATIENCE`` (a number), where set, is the factor.
- Otherwise the factor is what the run will load the machine with: xdist workers per core (at least 1).
  The load average at the start says nothing (it is near zero before the suite runs).

``patient(seconds)`` is a timeout (a socket's, a client's, a child's ``wait``); ``eventually(condition,
within=...)`` polls until a condition holds. Lower bounds ("took at least") are exact and never scaled:
patience only ever lengthens how long a test is willing to wait, never what it asserts.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

#: The setting that fixes the factor for a run.
PATIENCE_ENV = "MIM_TEST_PATIENCE"


def _workers() -> int:
    count = os.environ.get("PYTEST_XDIST_WORKER_COUNT") or os.environ.get("MIM_TEST_WORKERS")
    try:
        return max(1, int(count)) if count else 1
    except ValueError:
        return 1


def _cores() -> int:
    # The cores this process may run on (what nproc says), not every core of the machine.
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _setting() -> float | None:
    setting = os.environ.get(PATIENCE_ENV, "").strip()
    if not setting:
        return None
    try:
        value = float(setting)
    except ValueError:
        raise RuntimeError(f"{PATIENCE_ENV}={setting!r} is not a number") from None
    if value <= 0:
        raise RuntimeError(f"{PATIENCE_ENV}={setting!r} must be above 0")
    return value


def _factor(workers: int) -> float:
    setting = _setting()
    return setting if setting is not None else max(1.0, workers / _cores())


#: Read once per test process: every wait of the run is scaled by it.
FACTOR = _factor(_workers())


def describe(workers: int | None = None) -> str:
    """One line for the run's header: the factor its workers will use and where it came from.

    The header is written by xdist's controller, which runs no test and knows the worker count only
    from its options (``workers``); each worker reads its own from xdist's environment."""
    if _setting() is not None:
        return f"patience: x{FACTOR:g} ({PATIENCE_ENV})"
    count = workers or _workers()
    return f"patience: x{_factor(count):g} ({count} xdist workers on {_cores()} cores)"


def patient(seconds: float) -> float:
    """A timeout of ``seconds`` on an idle machine, scaled to this run's load."""
    return seconds * FACTOR


class NotYet(AssertionError):
    """``eventually`` gave up: the condition never held within its patience."""


class _Tries:
    """The schedule both forms of ``eventually`` share: the pause before the next try, growing to
    ``LONGEST_PAUSE``, the last try at the deadline, and the failure once the patience is spent."""

    def __init__(self, within: float, interval: float, what: str | None) -> None:
        self.within, self.interval, self.what = within, interval, what
        self.deadline = time.monotonic() + patient(within)
        self.pause = interval

    def next_pause(self, last: object, error: BaseException | None) -> float:
        """How long to wait before the next try; raises :class:`NotYet` when no try is left."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            described = self.what or "the condition"
            detail = f"; last error: {error!r}" if error is not None else f"; last value: {last!r}"
            raise NotYet(f"{described} did not hold within {patient(self.within):.1f} s{detail}")
        pause, self.pause = min(self.pause, left), min(self.pause * 1.5, max(self.interval, LONGEST_PAUSE))
        return pause


#: The longest pause between two tries (unless ``interval`` asks for more): a server that became ready
#: is seen within this, where a pause growing to a second made every start of a server up to 1 s late.
LONGEST_PAUSE = 0.2


def eventually(
    condition: Callable[[], T | None],
    *,
    within: float = 10.0,
    interval: float = 0.05,
    what: str | None = None,
    retry_on: tuple[type[BaseException], ...] = (),
) -> T:
    """Call ``condition`` until it returns something true, and return that.

    ``within`` is the wait on an idle machine (scaled by the run's patience); ``retry_on`` are the
    exceptions that mean "not yet" (others fail at once); ``what`` names the wait in the failure."""
    tries = _Tries(within, interval, what)
    while True:
        try:
            last, error = condition(), None
        except retry_on as caught:
            last, error = None, caught
        if last:
            return last
        time.sleep(tries.next_pause(last, error))


async def eventually_async(
    condition: Callable[[], Awaitable[T | None]],
    *,
    within: float = 10.0,
    interval: float = 0.05,
    what: str | None = None,
    retry_on: tuple[type[BaseException], ...] = (),
) -> T:
    """``eventually`` for a coroutine condition, pausing with ``asyncio.sleep``."""
    tries = _Tries(within, interval, what)
    while True:
        try:
            last, error = await condition(), None
        except retry_on as caught:
            last, error = None, caught
        if last:
            return last
        await asyncio.sleep(tries.next_pause(last, error))

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


def _failure(what: str | None, within: float, last: object, error: BaseException | None) -> NotYet:
    described = what or "the condition"
    detail = f"; last error: {error!r}" if error is not None else f"; last value: {last!r}"
    return NotYet(f"{described} did not hold within {patient(within):.1f} s{detail}")


#: The longest pause between two tries (unless ``interval`` asks for more): a server that became ready
#: is seen within this, where a pause growing to a second made every start of a server up to 1 s late.
LONGEST_PAUSE = 0.2


def _next_pause(pause: float, interval: float) -> float:
    return min(pause * 1.5, max(interval, LONGEST_PAUSE))


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
    deadline = time.monotonic() + patient(within)
    last: T | None = None
    error: BaseException | None = None
    pause = interval
    while True:
        try:
            last = condition()
            error = None
        except retry_on as caught:
            error = caught
        else:
            if last:
                return last
        left = deadline - time.monotonic()
        if left <= 0:
            raise _failure(what, within, last, error)
        time.sleep(min(pause, left))  # the last try comes at the deadline, not a pause past it
        pause = _next_pause(pause, interval)


async def eventually_async(
    condition: Callable[[], Awaitable[T | None]],
    *,
    within: float = 10.0,
    interval: float = 0.05,
    what: str | None = None,
    retry_on: tuple[type[BaseException], ...] = (),
) -> T:
    """``eventually`` for a coroutine condition, pausing with ``asyncio.sleep``."""
    deadline = time.monotonic() + patient(within)
    last: T | None = None
    error: BaseException | None = None
    pause = interval
    while True:
        try:
            last = await condition()
            error = None
        except retry_on as caught:
            error = caught
        else:
            if last:
                return last
        left = deadline - time.monotonic()
        if left <= 0:
            raise _failure(what, within, last, error)
        await asyncio.sleep(min(pause, left))
        pause = _next_pause(pause, interval)

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


def _factor() -> float:
    setting = os.environ.get(PATIENCE_ENV, "").strip()
    if setting:
        try:
            value = float(setting)
        except ValueError:
            raise RuntimeError(f"{PATIENCE_ENV}={setting!r} is not a number") from None
        if value <= 0:
            raise RuntimeError(f"{PATIENCE_ENV}={setting!r} must be above 0")
        return value
    return max(1.0, _workers() / (os.cpu_count() or 1))


#: Read once per test process: every wait of the run is scaled by it.
FACTOR = _factor()


def describe() -> str:
    """One line for the run's header: the factor and where it came from."""
    source = PATIENCE_ENV if os.environ.get(PATIENCE_ENV, "").strip() else "xdist workers per core"
    return f"patience: x{FACTOR:g} ({source})"


def patient(seconds: float) -> float:
    """A timeout of ``seconds`` on an idle machine, scaled to this run's load."""
    return seconds * FACTOR


class NotYet(AssertionError):
    """``eventually`` gave up: the condition never held within its patience."""


def _failure(what: str | None, within: float, last: object, error: BaseException | None) -> NotYet:
    described = what or "the condition"
    detail = f"; last error: {error!r}" if error is not None else f"; last value: {last!r}"
    return NotYet(f"{described} did not hold within {patient(within):.1f} s{detail}")


def eventually(
    condition: Callable[[], T],
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
    last: object = None
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
        if time.monotonic() >= deadline:
            raise _failure(what, within, last, error)
        time.sleep(pause)
        pause = min(pause * 1.5, 1.0)


async def eventually_async(
    condition: Callable[[], Awaitable[T]],
    *,
    within: float = 10.0,
    interval: float = 0.05,
    what: str | None = None,
    retry_on: tuple[type[BaseException], ...] = (),
) -> T:
    """``eventually`` for a coroutine condition, pausing with ``asyncio.sleep``."""
    deadline = time.monotonic() + patient(within)
    last: object = None
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
                return last  # type: ignore[return-value]  # last holds a T here
        if time.monotonic() >= deadline:
            raise _failure(what, within, last, error)
        await asyncio.sleep(pause)
        pause = min(pause * 1.5, 1.0)

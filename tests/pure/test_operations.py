"""Background writes: inline when quick, an operation to poll and cancel when not."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.envelope.mcp import progress_reporter
from mail_imap_mcp.operations import Operation, OperationRegistry, OperationState, Progress, background
from mail_imap_mcp.operations.background import Cancelled
from tests.support.patience import NotYet, eventually, patient


def ok(result: Any) -> OperationState:
    return OperationState.OK


@dataclass
class Hold:
    """Holds batch ``at`` once it has started (``reached``) until the test lets it go (``release``)."""

    at: int
    reached: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


def batches(
    count: int, pause_s: float, done: list[int], hold: Hold | None = None
) -> Callable[[Progress], str]:
    def work(progress: Progress) -> str:
        for index in range(count):
            if progress.cancelled:
                return f"stopped after {len(done)}"
            if hold is not None and index == hold.at:
                hold.reached.set()
                hold.release.wait(patient(5))
            time.sleep(pause_s)
            done.append(index)
            progress.advance(1, f"batch {index}")
        return "all done"

    return work


def test_quick_work_answers_inline_and_is_not_kept() -> None:
    registry = OperationRegistry(inline_s=2)
    reports: list[tuple[int, int, str]] = []
    token = progress_reporter.set(lambda done, total, message: reports.append((done, total, message)))
    try:
        assert registry.run("t", "a", 3, batches(3, 0.01, []), ok, user="") == "all done"
    finally:
        progress_reporter.reset(token)
    assert reports and reports[-1] == (3, 3, "batch 2")


def test_slow_work_becomes_an_operation_that_finishes_in_the_background() -> None:
    # The work is held until the test has looked: 4 x 0.1 s of sleeps left 0.3 s past inline_s for
    # run() to return and the state to be read, which a loaded machine could use up.
    release = threading.Event()
    four = batches(4, 0.01, [])

    def slow(progress: Progress) -> str:
        release.wait(patient(5))
        return four(progress)

    registry = OperationRegistry(inline_s=0.1)
    operation = registry.run("t", "a", 4, slow, ok, user="")
    assert isinstance(operation, Operation)
    assert operation.state in {OperationState.ACCEPTED, OperationState.RUNNING}
    release.set()
    assert operation.finished.wait(patient(5))
    polled = registry.get(operation.operation_id, "")
    assert (polled.state, polled.done, operation.result) == (OperationState.OK, 4, "all done")


def test_cancel_takes_effect_between_batches_and_keeps_what_was_done() -> None:
    # The cancel comes while the third batch is in progress, held there: before, it had to come within
    # 50 batches of 50 ms, which a starved test thread could miss.
    hold = Hold(at=2)
    registry = OperationRegistry(inline_s=0.05)
    done: list[int] = []
    operation = registry.run("t", "a", 50, batches(50, 0.0, done, hold), ok, user="")
    assert isinstance(operation, Operation)
    assert hold.reached.wait(patient(5))
    registry.cancel(operation.operation_id, "")
    hold.release.set()
    assert operation.finished.wait(patient(5))
    assert operation.state is OperationState.CANCELED
    assert done == [0, 1, 2]  # the batch in progress was finished, none started after
    assert operation.done == 3
    assert operation.result == "stopped after 3"  # what was done is reported


def test_a_failure_inline_is_raised_and_in_the_background_is_kept() -> None:
    def fail(progress: Progress) -> None:
        raise ToolFailure(ErrorCode.UNAVAILABLE, "down")

    with pytest.raises(ToolFailure, match="down"):
        OperationRegistry().run("t", "a", 1, fail, ok, user="")

    release = threading.Event()

    def fail_late(progress: Progress) -> None:
        release.wait(patient(5))
        raise RuntimeError("bug")

    registry = OperationRegistry(inline_s=0.05)
    operation = registry.run("t", "a", 1, fail_late, ok, user="")
    assert isinstance(operation, Operation)
    release.set()
    assert operation.finished.wait(patient(5))
    assert operation.state is OperationState.FAILED
    assert operation.failure is not None and operation.failure.code == ErrorCode.INTERNAL


def test_work_that_stops_on_cancel_before_changing_anything_ends_canceled_with_its_words() -> None:
    """A send waiting for the user's approval stops on cancel with nothing done: the operation is
    canceled (not failed), and its error says what happened."""

    def waits(progress: Progress) -> None:
        with contextlib.suppress(NotYet):
            eventually(lambda: progress.cancelled, within=5, interval=0.01)
        raise Cancelled(ErrorCode.CONFIRMATION_REQUIRED, "cancelled; nothing was sent", retryable=False)

    registry = OperationRegistry(inline_s=0.05)
    operation = registry.run("t", "a", 1, waits, ok, user="")
    assert isinstance(operation, Operation)
    registry.cancel(operation.operation_id, "")
    assert operation.finished.wait(patient(5))
    view = registry.get(operation.operation_id, "")
    assert (view.state, view.result) == (OperationState.CANCELED, None)
    assert view.error is not None and view.error.message == "cancelled; nothing was sent"


def held_until(release: threading.Event) -> Any:
    """Work that ends only once ``release`` is set: it cannot finish before ``run`` looks."""

    def work(progress: Progress) -> str:
        release.wait(patient(5))
        progress.advance(1, "released")
        return "all done"

    return work


class StartsAtOnce(threading.Thread):
    """A thread whose work has run to its end when ``start`` returns: the quickest work there can be."""

    def start(self) -> None:
        self.run()


def test_no_wait_inline_means_the_background_however_quick_the_work(monkeypatch: pytest.MonkeyPatch) -> None:
    # Regression: with inline_s=0 ("0: always in the background") run() still looked whether the work had
    # finished, and a one-message move that ended before it looked answered inline: the team test that
    # then polled the operation from another instance found none (CI of e295e65).
    registry = OperationRegistry(inline_s=0)
    # The registry's module alone starts its threads so (the process's other threads are left alone).
    monkeypatch.setattr(background, "threading", SimpleNamespace(Thread=StartsAtOnce))
    operation = registry.run("t", "a", 1, batches(1, 0.0, []), ok, user="")
    assert isinstance(operation, Operation)
    assert (operation.state, operation.result) == (OperationState.OK, "all done")


def test_finished_operations_are_bounded_oldest_first() -> None:
    # Regression: the work was a 20 ms sleep, which on a loaded machine ended before run() looked (with
    # inline_s=0), so run() answered inline and the test failed on isinstance(operation, Operation).
    registry = OperationRegistry(inline_s=0, max_finished=2)
    started = []
    for _ in range(4):
        release = threading.Event()
        operation = registry.run("t", "a", 1, held_until(release), ok, user="")
        assert isinstance(operation, Operation)
        release.set()
        operation.finished.wait(patient(5))
        started.append(operation.operation_id)
    registry.run("t", "a", 1, batches(1, 0.0, []), ok, user="")  # the next start evicts
    with pytest.raises(ToolFailure) as caught:
        registry.get(started[0], "")
    assert caught.value.code == ErrorCode.NOT_FOUND
    assert registry.get(started[-1], "").state == OperationState.OK

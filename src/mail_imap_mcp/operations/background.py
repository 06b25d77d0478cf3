"""Long write operations: a bulk write answers inline when it is quick, else continues in the background.

:meth:`OperationRegistry.run` starts the work on a thread of its own and waits up to
:data:`INLINE_S`. Finished by then, the caller gets the work's result as usual. Still running, the
caller gets an :class:`OperationRef` to poll with ``imap_get_operation`` and to stop with
``imap_cancel_operation``; cancelling takes effect between batches (a batch already sent to the
server is never undone or abandoned half-way). While the caller waits, progress goes to the MCP
client as progress notifications when it asked for them. Finished operations are kept, at most
:data:`MAX_FINISHED`, and evicted oldest first.

An operation belongs to the user who started it (the call's caller, given to it): to any
other user it does not exist. With a shared store (``[state] redis_url``) its view (state, progress,
result) is written there as it changes, so any instance answers imap_get_operation, and a cancel asked
of another instance reaches the one running it through the store (:mod:`.shared`).
"""

from __future__ import annotations

import contextvars
import itertools
import queue
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field

from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.envelope.call_context import progress_reporter
from mail_imap_mcp.operations.shared import OperationView, SharedOperations
from mail_imap_mcp.state import MemoryStore, Store

INLINE_S = 1.5
MAX_FINISHED = 100


class OperationState(StrEnum):
    ACCEPTED = "accepted"
    RUNNING = "running"
    OK = "ok"
    PARTIAL = "partial"
    FAILED = "failed"
    CANCELED = "canceled"


FINISHED = {OperationState.OK, OperationState.PARTIAL, OperationState.FAILED, OperationState.CANCELED}


class Cancelled(ToolFailure):
    """Raised by work that stopped on cancellation before it changed anything: the operation ends
    ``canceled``, its error saying what was (not) done."""


class OperationRef(BaseModel):
    """A write still running in the background: poll it with imap_get_operation."""

    operation_id: str = Field(description="Pass to imap_get_operation or imap_cancel_operation.")
    state: Literal["accepted", "running", "ok", "partial", "failed", "canceled"] = Field(
        description="accepted, running, ok, partial, failed or canceled."
    )
    done: int = Field(description="Items processed so far.")
    total: int = Field(description="Items in the operation.")


class Progress:
    """Handed to the work: report each finished batch, and check :attr:`cancelled` before the next.

    Work that stops on cancellation returns what it did (the rest reported as not attempted); the
    operation then ends as ``canceled`` with that result.
    """

    def __init__(self, operation: Operation, shared: SharedOperations | None = None) -> None:
        self._operation = operation
        self._shared = shared or SharedOperations(MemoryStore(), 0.0, list)

    def advance(self, count: int, message: str = "") -> None:
        """``count`` more items are done."""
        op = self._operation
        op.done = min(op.total, op.done + count)
        op.updates.put((op.done, message))
        self._shared.publish(op.view(), op.user)

    @property
    def cancelled(self) -> bool:
        op = self._operation
        if not op.cancel_requested.is_set() and self._shared.cancel_asked(op.user, op.operation_id):
            op.cancel_requested.set()
        return op.cancel_requested.is_set()


@dataclass
class Operation:
    operation_id: str
    tool: str
    account_id: str
    total: int
    state: OperationState = OperationState.ACCEPTED
    done: int = 0
    started_utc: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="milliseconds"))
    finished_utc: str | None = None
    #: The work's result (a ToolResult) or the failure that ended it.
    result: Any = None
    failure: ToolFailure | None = None
    cancel_requested: threading.Event = field(default_factory=threading.Event)
    updates: queue.SimpleQueue[tuple[int, str]] = field(default_factory=queue.SimpleQueue)
    finished: threading.Event = field(default_factory=threading.Event)
    #: Whose it is (the caller's name): nobody else sees it.
    user: str = ""

    def ref(self) -> OperationRef:
        return OperationRef(
            operation_id=self.operation_id, state=self.state.value, done=self.done, total=self.total
        )

    def view(self) -> OperationView:
        """What imap_get_operation answers of it, as data any instance can read."""
        done = self.state in FINISHED
        result = self.result if done and self.failure is None else None
        data = getattr(result, "data", None)
        return OperationView(
            operation_id=self.operation_id,
            tool=self.tool,
            account_id=self.account_id,
            state=self.state.value,
            done=self.done,
            total=self.total,
            started_utc=self.started_utc,
            finished_utc=self.finished_utc,
            summary=getattr(result, "summary", None),
            result=data.model_dump(mode="json", by_alias=True) if isinstance(data, BaseModel) else None,
            error=self.failure.to_error() if self.failure else None,
            failure_next_action=self.failure.next_action if self.failure else None,
        )


class OperationRegistry:
    """The operations of one server process (thread-safe)."""

    def __init__(
        self,
        *,
        inline_s: float = INLINE_S,
        max_finished: int = MAX_FINISHED,
        store: Store | None = None,
        ttl_s: float = 3600.0,
    ) -> None:
        self.inline_s = inline_s
        self._max_finished = max_finished
        self._operations: OrderedDict[str, Operation] = OrderedDict()
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)
        self.shared = SharedOperations(store or MemoryStore(), ttl_s, self._running_views)

    def running_users(self) -> set[str]:
        """The users whose operations are running in this process now."""
        with self._lock:
            return {op.user for op in self._operations.values() if op.state not in FINISHED}

    def _running_views(self) -> list[tuple[OperationView, str]]:
        with self._lock:
            return [(op.view(), op.user) for op in self._operations.values() if op.state not in FINISHED]

    def run(
        self,
        tool: str,
        account_id: str,
        total: int,
        work: Callable[[Progress], Any],
        state_of: Callable[[Any], OperationState],
        *,
        user: str,
    ) -> Any | Operation:
        """Run ``work(progress)`` for ``user``; its result when done within :attr:`inline_s`, else the
        :class:`Operation` (always the operation when :attr:`inline_s` is 0, however quick the work).

        ``state_of(result)`` says whether a finished result is ok or partial. A :class:`ToolFailure`
        from the work is raised to the caller when inline, kept on the operation otherwise. With a shared
        store out of reach nothing is run: :class:`~mail_imap_mcp.state.StateUnavailable` (an operation
        gone to the background would be known to this instance alone, and every other would say it
        does not exist).
        """
        operation = Operation(
            f"op_{next(self._numbers)}_{secrets.token_hex(6)}", tool, account_id, total, user=user
        )
        self.shared.announce(operation.view(), user)
        with self._lock:
            self._operations[operation.operation_id] = operation
            self._evict()
        # The work's thread sees this call's context (request id for the audit line, and so on).
        context = contextvars.copy_context()
        thread = threading.Thread(
            target=context.run,
            args=(self._execute, operation, work, state_of),
            name=operation.operation_id,
            daemon=True,
        )
        thread.start()
        if self.inline_s <= 0:
            return operation
        report = progress_reporter.get()
        deadline = time.monotonic() + self.inline_s
        while not operation.finished.wait(timeout=max(0.0, min(0.05, deadline - time.monotonic()))):
            self._forward(operation, report)
            if time.monotonic() >= deadline:
                return operation
        self._forward(operation, report)
        with self._lock:  # answered inline: nobody will poll it
            self._operations.pop(operation.operation_id, None)
        self.shared.forget(operation.user, operation.operation_id)
        if operation.failure is not None:
            raise operation.failure
        return operation.result

    @staticmethod
    def _forward(operation: Operation, report: Callable[[int, int, str], None] | None) -> None:
        last: tuple[int, str] | None = None
        while True:
            try:
                last = operation.updates.get_nowait()
            except queue.Empty:
                break
        if last is not None and report is not None:
            report(last[0], operation.total, last[1])

    def _execute(
        self, operation: Operation, work: Callable[[Progress], Any], state_of: Callable[[Any], OperationState]
    ) -> None:
        operation.state = OperationState.RUNNING
        try:
            operation.result = work(Progress(operation, self.shared))
            stopped = operation.cancel_requested.is_set() and operation.done < operation.total
            operation.state = OperationState.CANCELED if stopped else state_of(operation.result)
        except ToolFailure as failure:
            operation.failure = failure
            operation.state = (
                OperationState.CANCELED if isinstance(failure, Cancelled) else OperationState.FAILED
            )
        except Exception as exc:  # never lose an operation's end to a crash
            operation.failure = ToolFailure(
                ErrorCode.INTERNAL,
                f"The operation stopped on an unexpected error ({type(exc).__name__}); the server log has details.",
            )
            operation.state = OperationState.FAILED
        operation.finished_utc = datetime.now(UTC).isoformat(timespec="milliseconds")
        self.shared.publish(operation.view(), operation.user)
        operation.finished.set()

    def _evict(self) -> None:
        finished = [op_id for op_id, op in self._operations.items() if op.state in FINISHED]
        for op_id in finished[: max(0, len(finished) - self._max_finished)]:
            del self._operations[op_id]

    def _local(self, operation_id: str, user: str) -> Operation | None:
        with self._lock:
            operation = self._operations.get(operation_id)
        # Another user's operation is answered as one that does not exist.
        return operation if operation is not None and operation.user == user else None

    def _not_found(self, operation_id: str) -> ToolFailure:
        where = (
            f"kept {int(self.shared.ttl_s)} s after it ended"
            if self.shared.store.shared
            else f"in this server process (finished operations are kept, {self._max_finished} at most, "
            "until the server restarts)"
        )
        return ToolFailure(
            ErrorCode.NOT_FOUND,
            f"No operation {operation_id!r} {where}.",
            details={"parameter": "operation_id", "operation_id": operation_id},
        )

    def get(self, operation_id: str, user: str) -> OperationView:
        """``user``'s operation's view, from this process or (with a shared store) from the instance
        running it; ``not_found`` for an unknown one and another user's."""
        operation = self._local(operation_id, user)
        if operation is not None:
            return operation.view()
        view = self.shared.read(user, operation_id)
        if view is None:
            raise self._not_found(operation_id)
        return view

    def cancel(self, operation_id: str, user: str) -> OperationView:
        """Ask ``user``'s operation to stop after its current batch (wherever it runs); its view."""
        operation = self._local(operation_id, user)
        if operation is not None:
            operation.cancel_requested.set()
            return operation.view()
        view = self.get(operation_id, user)
        if view.state not in FINISHED:
            self.shared.ask_cancel(user, operation_id)
        return view

    def close(self) -> None:
        self.shared.close()

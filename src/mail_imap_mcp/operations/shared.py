"""Background operations in the shared store: the view any instance answers imap_get_operation with,
the cancel another instance asks for, and what is said of an operation whose instance stopped.

In one process (the memory store) nothing is written: the registry's own operations are the truth.
With a shared store, the instance running an operation writes its view when it starts, after each
batch, when it ends, and every :data:`HEARTBEAT_S` while it runs; a view not written for
:data:`STALE_S` belongs to an instance that stopped, and is answered as failed with its outcome unknown
(what it did is done, nothing is run again).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from mail_imap_mcp.envelope import ErrorCode, ErrorInfo, NextAction
from mail_imap_mcp.state import StateUnavailable, Store, user_key

log = logging.getLogger("mail_imap_mcp.operations")

HEARTBEAT_S = 2.0
STALE_S = 10.0


class OperationView(BaseModel):
    """An operation as imap_get_operation describes it: plain data, the same from any instance."""

    operation_id: str
    tool: str
    account_id: str
    state: str
    done: int
    total: int
    started_utc: str
    finished_utc: str | None = None
    summary: str | None = None
    result: dict[str, Any] | None = None
    error: ErrorInfo | None = None
    failure_next_action: NextAction | None = None
    #: When the instance running it last wrote it (seconds since the epoch; 0: never written).
    written_at: float = 0.0


def _outcome_unknown(view: OperationView) -> OperationView:
    return view.model_copy(
        update={
            "state": "failed",
            "error": ErrorInfo(
                code=ErrorCode.UNAVAILABLE,
                message=(
                    f"The server instance running this write stopped after {view.done} of {view.total} "
                    "items; what it did is done, the rest is outcome_unknown and was not run again. "
                    "Search the mailbox to see where each message is before writing again."
                ),
                retryable=False,
                details={"outcome_unknown": True, "done": view.done, "total": view.total},
            ),
        }
    )


class SharedOperations:
    """The registry's link to the store (thread-safe). ``running`` lists the views of this process's
    operations still running (for the heartbeat)."""

    def __init__(
        self, store: Store, ttl_s: float, running: Callable[[], list[tuple[OperationView, str]]]
    ) -> None:
        self.store = store
        self.ttl_s = ttl_s
        self._running = running
        self._heartbeat: threading.Thread | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()

    def announce(self, view: OperationView, user: str) -> None:
        """Write a new operation's first view before it runs (only with a shared store);
        :class:`StateUnavailable` when the store cannot be reached: the write is then refused, since its
        status would live on this instance alone (regression: it ran, and the other instances said
        it did not exist)."""
        if self.store.shared:
            self._write(view, user)

    def publish(self, view: OperationView, user: str) -> None:
        """Write ``view`` for any instance to read (only with a shared store); a store out of reach is
        logged, never the end of the write itself."""
        if not self.store.shared:
            return
        try:
            self._write(view, user)
        except StateUnavailable as exc:
            log.warning("operation %s not written to the shared state: %s", view.operation_id, exc.detail)
        except Exception:  # a bug must not end the write (nor the heartbeat) either: the next write may do
            log.exception("operation %s not written to the shared state", view.operation_id)

    def _write(self, view: OperationView, user: str) -> None:
        self._start_heartbeat()
        stamped = view.model_copy(update={"written_at": time.time()})
        self.store.set(
            user_key("op", view.operation_id, user=user), stamped.model_dump_json().encode(), self.ttl_s
        )

    def read(self, user: str, operation_id: str) -> OperationView | None:
        """The view any instance wrote of ``operation_id`` (None: none did, or not for ``user``);
        :class:`StateUnavailable` when the store cannot be reached, which the tool answers as
        ``unavailable`` (retryable), never as an operation that does not exist."""
        if not self.store.shared:
            return None
        raw = self.store.get(user_key("op", operation_id, user=user))
        if raw is None:
            return None
        view = OperationView.model_validate_json(raw)
        if view.finished_utc is None and time.time() - view.written_at > STALE_S:
            return _outcome_unknown(view)
        return view

    def forget(self, user: str, operation_id: str) -> None:
        """An operation answered inline: nobody polls it."""
        if self.store.shared:
            with contextlib.suppress(StateUnavailable):  # else it expires by itself
                self.store.delete(user_key("op", operation_id, user=user))

    def ask_cancel(self, user: str, operation_id: str) -> None:
        """Ask the instance running ``operation_id`` to stop it; :class:`StateUnavailable` (the tool's
        ``unavailable``, retryable) when the store cannot be reached: nobody was asked."""
        self.store.set(user_key("op-cancel", operation_id, user=user), b"1", self.ttl_s)

    def cancel_asked(self, user: str, operation_id: str) -> bool:
        if not self.store.shared:
            return False
        try:
            return self.store.get(user_key("op-cancel", operation_id, user=user)) is not None
        except StateUnavailable:
            return False  # asked again on the next batch

    def _start_heartbeat(self) -> None:
        with self._lock:
            if self._heartbeat is not None:
                return
            self._heartbeat = threading.Thread(target=self._beat, name="operations-heartbeat", daemon=True)
            self._heartbeat.start()

    def _beat(self) -> None:
        """Write every running operation's view each :data:`HEARTBEAT_S` until closed. No failure ends
        it (regression: one did, and the other instances then said a running write had stopped)."""
        while not self._stop.wait(HEARTBEAT_S):
            try:
                for view, user in self._running():
                    self.publish(view, user)
            except Exception:
                log.exception("heartbeat of the running operations failed; trying again in %g s", HEARTBEAT_S)

    def close(self) -> None:
        self._stop.set()

"""A sandboxed child that runs many extractions, one after another (the index's attachments).

Starting an interpreter and importing a parser costs 100-300 ms; parsing a small document, a few. A
:class:`SandboxWorker` keeps one child (the command, bare environment, own session and rlimits of
:func:`.sandbox.run_in_sandbox`'s, see there) for up to ``max_tasks`` tasks or ``max_input_bytes`` of their
input, and sends it one task at a time as a line of JSON, answered by a line. What bounds a task in a
child of its own bounds it here: the parent gives each task its own wall-clock deadline (from when it is
sent) and watches the child's resident memory; the child gives each its own CPU time; its address space is
limited as ever. A task that ends its child (stopped at the deadline or the memory limit, crashed, out of
memory, flooding its output) fails alone, with the error it would have had in a child of its own, and the
next task starts a fresh child. A task that failed in a way the tasks before it in the same child could
have brought about (memory, a crash, no answer) runs once more, alone in a fresh child, so that the error
it ends with is its own. A worker holds one of the sandbox's slots while its child lives.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from dataclasses import dataclass
from typing import Any

from mail_imap_mcp.processes import kill_tree, resident_bytes

from .errors import ExtractionError
from .sandbox import (
    MEMORY_WATCH_S,
    READ_CHUNK,
    PipeReader,
    SandboxLimits,
    acquire_slot,
    child_command,
    ended_error,
    outcome_error,
    release_slot,
    result_of,
    start_child,
)

__all__ = ["SandboxWorker"]

#: Tasks and input bytes one child serves before a fresh one takes over (what a parser leaves behind,
#: memory it keeps or fragments, stays bounded).
MAX_TASKS = 256
MAX_INPUT_BYTES = 256 << 20


class _LineReader(PipeReader):
    """Reads the child's stdout on a thread of its own and queues each line; None once it ends (EOF, or
    a line longer than ``most``: then :attr:`overflow`)."""

    def __init__(self, pipe: Any) -> None:
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self._bound = 1 << 20
        super().__init__(pipe, self._bound)

    def _read(self) -> None:
        buffer = bytearray()
        try:
            while chunk := self._pipe.read1(READ_CHUNK):
                buffer += chunk
                while (end := buffer.find(b"\n")) >= 0 and end <= self._bound:
                    self.lines.put(bytes(buffer[:end]))
                    del buffer[: end + 1]
                if len(buffer) > self._bound:
                    self.overflow = True
                    return
        except (OSError, ValueError):  # closed under it: the child was stopped
            pass
        finally:
            self.ended.set()
            self.lines.put(None)

    def expect(self, most: int) -> None:
        """The next answer is at most ``most`` bytes."""
        self._bound = most


@dataclass(frozen=True)
class _Failed:
    """A task's error, and whether the child's earlier tasks could have caused it."""

    error: ExtractionError
    shared_cause: bool


class _Child:
    """One serving child process, its pipes and what it has served."""

    def __init__(self, limits: SandboxLimits, max_tasks: int) -> None:
        self.key = (limits.cpu_s, limits.memory_bytes)
        acquire_slot(limits)
        try:
            self.proc = start_child(child_command(limits, serve_tasks=max_tasks))
        except ExtractionError:
            release_slot()
            raise
        self.out = _LineReader(self.proc.stdout)
        self.err = PipeReader(self.proc.stderr, None)
        self.served = 0
        self.input_bytes = 0

    def ask(self, request: bytes, limits: SandboxLimits) -> tuple[str, bytes]:
        """Send one request; ("answer", its line), or the first of "ended" (the child ended), "timeout"
        (the task's deadline), "overflow" and "memory" (resident memory past the limit), with b""."""
        deadline = time.monotonic() + limits.timeout_s
        self.out.expect(limits.max_response_bytes)
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(request + b"\n")  # far below the pipe buffer: never blocks
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # ended: its reader says so
        while True:
            remaining = deadline - time.monotonic()
            try:
                line = self.out.lines.get(timeout=max(min(MEMORY_WATCH_S, remaining), 0))
            except queue.Empty:
                line = b""
            if line is None:
                return ("overflow" if self.out.overflow else "ended"), b""
            if line:
                return "answer", line
            if deadline - time.monotonic() <= 0:
                return "timeout", b""
            used = resident_bytes(self.proc.pid)
            if used is not None and used > limits.memory_bytes and self.proc.poll() is None:
                return "memory", b""

    def stop(self) -> tuple[int | None, bytes]:
        """Stop the child (its whole group) and reap it; its return code and the end of its stderr."""
        try:
            kill_tree(self.proc)
            self.proc.wait()
            self.out.join()
            self.err.join()
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        finally:
            release_slot()
        return self.proc.returncode, self.err.data()


class SandboxWorker:
    """Runs sandboxed tasks (as :func:`.sandbox.run_in_sandbox` does, with the same errors) in a child
    that serves several, one at a time (thread-safe). Close it (or use it as a context manager) to stop
    the child."""

    def __init__(self, *, max_tasks: int = MAX_TASKS, max_input_bytes: int = MAX_INPUT_BYTES) -> None:
        self.max_tasks = max_tasks
        self.max_input_bytes = max_input_bytes
        #: Children started so far (each serves up to ``max_tasks`` tasks).
        self.children_started = 0
        self._child: _Child | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> SandboxWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._retire()

    def run(
        self, task: str, params: dict[str, Any], limits: SandboxLimits, *, input_bytes: int = 0
    ) -> dict[str, Any]:
        """The result of ``task``; raises :class:`ExtractionError` as :func:`run_in_sandbox` does."""
        request = json.dumps({"task": task, "params": params}).encode()
        with self._lock:
            if self._child is not None and self._child.key != (limits.cpu_s, limits.memory_bytes):
                self._retire()
            shared = self._child is not None
            outcome = self._ask(request, limits, input_bytes)
            if isinstance(outcome, _Failed) and shared and outcome.shared_cause:
                # Alone in a fresh child: what it ends with now is its own.
                outcome = self._ask(request, limits, input_bytes)
            if isinstance(outcome, _Failed):
                raise outcome.error
            return outcome

    def _ask(self, request: bytes, limits: SandboxLimits, input_bytes: int) -> dict[str, Any] | _Failed:
        child = self._child
        if child is None:
            child = self._child = _Child(limits, self.max_tasks)
            self.children_started += 1
        outcome, line = child.ask(request, limits)
        if outcome == "answer":
            child.served += 1
            child.input_bytes += input_bytes
            try:
                answer = json.loads(line)
            except ValueError:
                answer = None
            try:
                return result_of(answer, b"", limits)
            except ExtractionError as exc:
                shared_cause = exc.limit == "memory" or not isinstance(answer, dict)
                if shared_cause:
                    self._retire()  # what its heap holds now, the next task should not inherit
                return _Failed(exc, shared_cause=shared_cause)
            finally:
                if child.served >= self.max_tasks or child.input_bytes >= self.max_input_bytes:
                    self._retire()
        returncode, stderr = self._retire()
        if outcome == "ended":
            error = ended_error(returncode, stderr, limits)
            # Out of its own CPU time (SIGXCPU) is its own; any other end may be the heap's.
            return _Failed(error, shared_cause=error.limit != "extract_timeout_s")
        # Stopped by the parent: its own deadline and output; memory may be the heap's.
        return _Failed(outcome_error(outcome, limits), shared_cause=outcome == "memory")

    def _retire(self) -> tuple[int | None, bytes]:
        child, self._child = self._child, None
        return child.stop() if child is not None else (None, b"")

"""Run one extraction in a fresh, resource-limited child process.

The server is multi-threaded, so nothing is forked from it: every extraction starts a new
interpreter (``python -I -B``, running ``mail_imap_mcp.content._child``) in its own session and
process group where the platform has them. The child sets its own limits before it reads any input
(address space, CPU seconds, no file writes, no core dumps, few descriptors) where the platform has
rlimits, gets one small JSON request on stdin and answers with one JSON object on stdout. The parent
reads at most a fixed number of bytes back (a thread per pipe: pipes cannot be selected on Windows),
enforces a wall-clock deadline, watches the child's resident memory (the limit where no rlimit holds
it: Windows, and macOS, which does not enforce ``RLIMIT_AS``), and always kills the child (its whole
process group where it leads one) and reaps it, so a bomb, a crash, a hang or a flood of output ends as
an :class:`ExtractionError` and never as a dead server, a stuck thread or a zombie.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from mail_imap_mcp.processes import HAS_PROCESS_GROUPS, kill_tree, resident_bytes

from .errors import ExtractionError, error_code, format_bytes
from .text import remove_unsafe_characters

__all__ = ["ChildLimits", "SandboxLimits", "check_input", "run_in_sandbox"]

# The child imports this package from where the server imported it (an installed wheel, an
# editable install or a source tree on PYTHONPATH, which -I would otherwise ignore).
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
#: The child's one line; ``__ENTRY__`` names its entry point (replaced, not ``str.format``-ed: code put
#: before it, as the Windows simulation's, may hold braces of its own).
_BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from mail_imap_mcp.content._child import __ENTRY__; sys.exit(__ENTRY__())"
)
# At most this many children at once (each may use memory_bytes of address space); further
# extractions wait for a slot within their own wall-clock limit.
MAX_CONCURRENT_CHILDREN = max(2, os.cpu_count() or 2)
_SLOTS = threading.BoundedSemaphore(MAX_CONCURRENT_CHILDREN)
_MAX_STDERR_BYTES = 64 * 1024
_MAX_MESSAGE_CHARS = 500
READ_CHUNK = 64 * 1024
#: How often the parent reads the child's resident memory while it runs.
MEMORY_WATCH_S = 0.05


class ChildLimits(Protocol):
    """The resource limits of a child (ExtractLimits and ImageLimits have them)."""

    @property
    def timeout_s(self) -> float: ...
    @property
    def cpu_s(self) -> float: ...
    @property
    def memory_bytes(self) -> int: ...


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits of one child run."""

    timeout_s: float
    cpu_s: float
    memory_bytes: int
    max_response_bytes: int

    @classmethod
    def of(cls, limits: ChildLimits, max_response_bytes: int) -> SandboxLimits:
        return cls(limits.timeout_s, limits.cpu_s, limits.memory_bytes, max_response_bytes)


def check_input(path: Path, max_input_bytes: int) -> int:
    """The size of the attachment file; ``limit_exceeded`` (max_attachment_bytes) when too big."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ExtractionError(
            "extract_failed", f"The attachment file cannot be read ({exc.strerror})."
        ) from exc
    if size > max_input_bytes:
        raise ExtractionError(
            "limit_exceeded",
            f"The attachment is {format_bytes(size)}, larger than max_attachment_bytes "
            f"({format_bytes(max_input_bytes)}); it is not read. Fetch a byte range instead.",
            limit="max_attachment_bytes",
        )
    return size


def _child_env() -> dict[str, str]:
    # -I already ignores PYTHON* variables; the child gets nothing of the server's environment
    # (credentials, proxies) beyond what an interpreter needs.
    env = {"PATH": os.defpath, "LC_ALL": "C.UTF-8", "MALLOC_ARENA_MAX": "2"}
    # Windows: an interpreter without SYSTEMROOT cannot initialise its random numbers, and so not start.
    if "SYSTEMROOT" in os.environ:
        env["SYSTEMROOT"] = os.environ["SYSTEMROOT"]
    return env


def child_command(limits: SandboxLimits, *, serve_tasks: int = 0) -> list[str]:
    """The argv of the child interpreter (exposed for the startup benchmark): one task, or with
    ``serve_tasks`` up to that many, one a line (:class:`.sandbox_worker.SandboxWorker`)."""
    cpu = max(1, int(limits.cpu_s + 0.999))
    entry = "serve" if serve_tasks else "main"
    command = [sys.executable, "-I", "-B", "-c", _BOOT.replace("__ENTRY__", entry), _PACKAGE_ROOT, str(cpu)]
    return [*command, str(limits.memory_bytes), *([str(serve_tasks)] if serve_tasks else [])]


def start_child(command: list[str]) -> subprocess.Popen[bytes]:
    """The child process of ``command``: its own session, a bare environment, pipes on every stream."""
    try:
        return subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=HAS_PROCESS_GROUPS,
            close_fds=True,
            cwd=os.path.abspath(os.sep),
            env=_child_env(),
        )
    except OSError as exc:
        raise ExtractionError(
            "extract_failed", f"Could not start the extraction process: {exc.strerror or exc}."
        ) from exc


def acquire_slot(limits: SandboxLimits) -> None:
    """One of the :data:`MAX_CONCURRENT_CHILDREN` slots, waited for within ``limits.timeout_s``; release
    it with :func:`release_slot`."""
    if not _SLOTS.acquire(timeout=limits.timeout_s):
        raise ExtractionError(
            "limit_exceeded",
            f"{MAX_CONCURRENT_CHILDREN} other extractions were running for the whole extract_timeout_s "
            f"({limits.timeout_s:g} s); try again shortly.",
            limit="extract_timeout_s",
        )


def release_slot() -> None:
    _SLOTS.release()


def run_in_sandbox(task: str, params: dict[str, Any], limits: SandboxLimits) -> dict[str, Any]:
    """Run ``task`` in a limited child and return its result object.

    Raises :class:`ExtractionError` for everything that is not a well-formed successful
    answer: an error reported by the child, a timeout (``extract_timeout_s``), exhausted
    memory (``memory``), a signal death, or malformed/oversized output.
    """
    request = json.dumps({"task": task, "params": params}).encode()
    started = time.monotonic()
    acquire_slot(limits)
    try:
        return _run_child(request, started, limits)
    finally:
        release_slot()


def _run_child(request: bytes, started: float, limits: SandboxLimits) -> dict[str, Any]:
    proc = start_child(child_command(limits))
    out = PipeReader(proc.stdout, limits.max_response_bytes)
    err = PipeReader(proc.stderr, None)
    try:
        outcome = _exchange(proc, request, started + limits.timeout_s, limits, out, err)
    finally:
        kill_tree(proc)
        proc.wait()
        out.join()
        err.join()
    return _interpret(proc.returncode, out.data(), err.data(), outcome, limits)


class PipeReader:
    """Reads one of the child's pipes on a thread of its own until EOF, or until ``most`` bytes (then it
    says so and stops), keeping the last ``_MAX_STDERR_BYTES`` when there is no bound."""

    def __init__(self, pipe: Any, most: int | None) -> None:
        self._pipe = pipe
        self._most = most
        self._buffer = bytearray()
        self.overflow = False
        self.ended = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True, name="sandbox-pipe")
        self._thread.start()

    def _read(self) -> None:
        try:
            while chunk := self._pipe.read1(READ_CHUNK):
                self._buffer += chunk
                if self._most is not None and len(self._buffer) > self._most:
                    self.overflow = True
                    return
                if self._most is None and len(self._buffer) > _MAX_STDERR_BYTES:
                    del self._buffer[: len(self._buffer) - _MAX_STDERR_BYTES]
        except (OSError, ValueError):  # closed under it: the child was killed
            pass
        finally:
            self.ended.set()

    def data(self) -> bytes:
        return bytes(self._buffer)

    def join(self) -> None:
        self._thread.join(timeout=5)
        # A descendant outside the killed group (no groups on Windows) may still hold the pipe: then the
        # reader, a daemon, ends when it lets go; closing under a blocked read would wait for it here.
        if not self._thread.is_alive():
            self._pipe.close()


def _exchange(
    proc: subprocess.Popen[bytes],
    request: bytes,
    deadline: float,
    limits: SandboxLimits,
    out: PipeReader,
    err: PipeReader,
) -> str:
    """Send the request and wait for the answer: "done", or the first of "timeout" (the deadline),
    "overflow" (more output than allowed) and "memory" (resident memory past the limit)."""
    assert proc.stdin is not None
    try:
        proc.stdin.write(request)  # far below the pipe buffer: never blocks
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass
    while not (out.ended.is_set() and err.ended.is_set()):
        if out.overflow:
            return "overflow"
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return "timeout"
        used = resident_bytes(proc.pid)
        if used is not None and used > limits.memory_bytes and proc.poll() is None:
            return "memory"
        (err if out.ended.is_set() else out).ended.wait(min(MEMORY_WATCH_S, remaining))
    if out.overflow:
        return "overflow"
    try:
        proc.wait(max(deadline - time.monotonic(), 0.05))
    except subprocess.TimeoutExpired:
        return "timeout"
    return "done"


def _memory_error(limits: SandboxLimits) -> ExtractionError:
    return ExtractionError(
        "limit_exceeded",
        f"The document needs more memory than the extraction limit ({format_bytes(limits.memory_bytes)}); "
        "it cannot be read as text. Fetch its bytes instead.",
        limit="memory",
    )


def _timeout_error(limits: SandboxLimits, *, cpu: bool) -> ExtractionError:
    what = f"{limits.cpu_s:g} s of CPU time" if cpu else f"{limits.timeout_s:g} s"
    return ExtractionError(
        "limit_exceeded",
        f"Extraction did not finish within extract_timeout_s ({what}) and was stopped; the document "
        "is too large or too complex to read. Fetch its bytes instead.",
        limit="extract_timeout_s",
    )


def _last_line(stderr: bytes) -> str:
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    text = lines[-1] if lines else ""
    return "".join(ch for ch in text if ch.isprintable())[:200]


def _interpret(
    returncode: int | None, stdout: bytes, stderr: bytes, outcome: str, limits: SandboxLimits
) -> dict[str, Any]:
    if outcome != "done":
        raise outcome_error(outcome, limits)
    if returncode is not None and returncode < 0:
        raise ended_error(returncode, stderr, limits)
    try:
        answer = json.loads(stdout)
    except ValueError:
        answer = None
    return result_of(answer, stderr, limits)


def outcome_error(outcome: str, limits: SandboxLimits) -> ExtractionError:
    """The error of a child the parent stopped: "timeout", "memory" or "overflow"."""
    if outcome == "timeout":
        return _timeout_error(limits, cpu=False)
    if outcome == "memory":
        return _memory_error(limits)
    return ExtractionError(
        "extract_failed",
        f"The extraction process produced more than {format_bytes(limits.max_response_bytes)} of output; "
        "its answer was discarded.",
    )


def ended_error(returncode: int | None, stderr: bytes, limits: SandboxLimits) -> ExtractionError:
    """The error of a child that ended without a well-formed answer (``returncode`` < 0: by a signal)."""
    if returncode is not None and returncode < 0:
        return _signal_error(-returncode, stderr, limits)
    if b"MemoryError" in stderr:
        return _memory_error(limits)
    detail = _last_line(stderr)
    return ExtractionError(
        "extract_failed",
        "The extraction process ended without an answer" + (f" ({detail})." if detail else "."),
    )


def _signal_error(signum: int, stderr: bytes, limits: SandboxLimits) -> ExtractionError:
    if signum == getattr(signal, "SIGXCPU", None):
        return _timeout_error(limits, cpu=True)
    fatal = {getattr(signal, name, None) for name in ("SIGKILL", "SIGSEGV", "SIGABRT", "SIGBUS")}
    if signum in fatal and b"MemoryError" in stderr:
        return _memory_error(limits)
    name = signal.Signals(signum).name if signum in signal.Signals._value2member_map_ else str(signum)
    return ExtractionError(
        "extract_failed",
        f"The document parser crashed (signal {name}); the file is malformed or hostile, or it "
        f"exhausted the extraction memory limit ({format_bytes(limits.memory_bytes)}).",
    )


def result_of(answer: object, stderr: bytes, limits: SandboxLimits) -> dict[str, Any]:
    """The result of the child's ``answer`` (its JSON), or the error it reports or amounts to."""
    if not isinstance(answer, dict):
        raise ended_error(None, stderr, limits)
    error = answer.get("error")
    if isinstance(error, dict):
        if error.get("limit") == "memory":
            raise _memory_error(limits)
        message = error.get("message")
        limit = error.get("limit")
        # Messages can quote the document (a part name, a bad value): clean and bound them.
        text = remove_unsafe_characters(message)[:_MAX_MESSAGE_CHARS] if isinstance(message, str) else ""
        raise ExtractionError(
            error_code(error.get("code")),
            text or "The document could not be read.",
            limit=remove_unsafe_characters(limit)[:64] if isinstance(limit, str) else None,
        )
    result = answer.get("result")
    if not isinstance(result, dict):
        raise ExtractionError("extract_failed", "The extraction process returned a malformed answer.")
    return result

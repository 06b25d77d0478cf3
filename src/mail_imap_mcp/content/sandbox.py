"""Run one extraction in a fresh, resource-limited child process.

The server is multi-threaded, so nothing is forked from it: every extraction starts a new
interpreter (``python -I -B``, running ``mail_imap_mcp.content._child``) in its own session and
process group. The child sets its own limits before it reads any input (address space,
CPU seconds, no file writes, no core dumps, few descriptors), gets one small JSON request
on stdin and answers with one JSON object on stdout. The parent reads at most a fixed
number of bytes back, enforces a wall-clock deadline, and always kills the whole process
group and reaps the child, so a bomb, a crash, a hang or a flood of output ends as an
:class:`ExtractionError` and never as a dead server, a stuck thread or a zombie.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .errors import ExtractionError, error_code, format_bytes
from .text import remove_unsafe_characters

__all__ = ["ChildLimits", "SandboxLimits", "check_input", "run_in_sandbox"]

# The child imports this package from where the server imported it (an installed wheel, an
# editable install or a source tree on PYTHONPATH, which -I would otherwise ignore).
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
_BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from mail_imap_mcp.content._child import main; sys.exit(main())"
# At most this many children at once (each may use memory_bytes of address space); further
# extractions wait for a slot within their own wall-clock limit.
MAX_CONCURRENT_CHILDREN = max(2, os.cpu_count() or 2)
_SLOTS = threading.BoundedSemaphore(MAX_CONCURRENT_CHILDREN)
_MAX_STDERR_BYTES = 64 * 1024
_MAX_MESSAGE_CHARS = 500
_READ_CHUNK = 64 * 1024


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
    return {"PATH": os.defpath, "LC_ALL": "C.UTF-8", "MALLOC_ARENA_MAX": "2"}


def child_command(limits: SandboxLimits) -> list[str]:
    """The argv of the child interpreter (exposed for the startup benchmark)."""
    cpu = max(1, int(limits.cpu_s + 0.999))
    return [sys.executable, "-I", "-B", "-c", _BOOT, _PACKAGE_ROOT, str(cpu), str(limits.memory_bytes)]


def run_in_sandbox(task: str, params: dict[str, Any], limits: SandboxLimits) -> dict[str, Any]:
    """Run ``task`` in a limited child and return its result object.

    Raises :class:`ExtractionError` for everything that is not a well-formed successful
    answer: an error reported by the child, a timeout (``extract_timeout_s``), exhausted
    memory (``memory``), a signal death, or malformed/oversized output.
    """
    request = json.dumps({"task": task, "params": params}).encode()
    started = time.monotonic()
    if not _SLOTS.acquire(timeout=limits.timeout_s):
        raise ExtractionError(
            "limit_exceeded",
            f"{MAX_CONCURRENT_CHILDREN} other extractions were running for the whole extract_timeout_s "
            f"({limits.timeout_s:g} s); try again shortly.",
            limit="extract_timeout_s",
        )
    try:
        return _run_child(request, started, limits)
    finally:
        _SLOTS.release()


def _run_child(request: bytes, started: float, limits: SandboxLimits) -> dict[str, Any]:
    try:
        proc = subprocess.Popen(
            child_command(limits),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
            cwd="/",
            env=_child_env(),
        )
    except OSError as exc:
        raise ExtractionError(
            "extract_failed", f"Could not start the extraction process: {exc.strerror or exc}."
        ) from exc
    try:
        stdout, stderr, outcome = _exchange(proc, request, started + limits.timeout_s, limits)
    finally:
        _kill_group(proc)
        proc.wait()
    return _interpret(proc.returncode, stdout, stderr, outcome, limits)


def _exchange(
    proc: subprocess.Popen[bytes], request: bytes, deadline: float, limits: SandboxLimits
) -> tuple[bytes, bytes, str]:
    """Send the request, read bounded stdout/stderr until EOF, the deadline or overflow."""
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        proc.stdin.write(request)  # far below the pipe buffer: never blocks
        proc.stdin.close()
    except BrokenPipeError:
        pass
    out = bytearray()
    err = bytearray()
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ, out)
        selector.register(proc.stderr, selectors.EVENT_READ, err)
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return bytes(out), bytes(err), "timeout"
            for key, _ in selector.select(remaining):
                chunk = os.read(key.fd, _READ_CHUNK)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                buffer: bytearray = key.data
                buffer += chunk
                if buffer is out and len(out) > limits.max_response_bytes:
                    return bytes(out), bytes(err), "overflow"
                if buffer is err and len(err) > _MAX_STDERR_BYTES:
                    del err[: len(err) - _MAX_STDERR_BYTES]
    try:
        proc.wait(max(deadline - time.monotonic(), 0.05))
    except subprocess.TimeoutExpired:
        return bytes(out), bytes(err), "timeout"
    return bytes(out), bytes(err), "done"


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    # The child leads its own process group (start_new_session); until it is reaped its
    # pid cannot be reused, so this never hits an unrelated group.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


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
    if outcome == "timeout":
        raise _timeout_error(limits, cpu=False)
    if outcome == "overflow":
        raise ExtractionError(
            "extract_failed",
            f"The extraction process produced more than {format_bytes(limits.max_response_bytes)} of output; "
            "its answer was discarded.",
        )
    if returncode is not None and returncode < 0:
        signum = -returncode
        if signum == signal.SIGXCPU:
            raise _timeout_error(limits, cpu=True)
        if (
            signum in (signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS)
            and b"MemoryError" in stderr
        ):
            raise _memory_error(limits)
        name = signal.Signals(signum).name if signum in signal.Signals._value2member_map_ else str(signum)
        raise ExtractionError(
            "extract_failed",
            f"The document parser crashed (signal {name}); the file is malformed or hostile, or it "
            f"exhausted the extraction memory limit ({format_bytes(limits.memory_bytes)}).",
        )
    try:
        answer = json.loads(stdout)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        if b"MemoryError" in stderr:
            raise _memory_error(limits)
        detail = _last_line(stderr)
        raise ExtractionError(
            "extract_failed",
            "The extraction process ended without an answer" + (f" ({detail})." if detail else "."),
        )
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

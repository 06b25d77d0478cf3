"""Entry point of the sandboxed extraction child (see sandbox.py).

``python -I -B -c <boot> PACKAGE_ROOT CPU_SECONDS MEMORY_BYTES`` (see sandbox.py): limits itself
first, then reads one JSON request from stdin and writes one JSON answer to stdout:
``{"result": {...}}`` or ``{"error": {"code", "message", "limit"}}``. Only the parser the
task needs is imported, after the limits are in force.

:func:`serve` (``... CPU_SECONDS MEMORY_BYTES TASKS``, the worker of :class:`.sandbox.SandboxWorker`) answers
up to TASKS requests, one JSON line each, one after another, and then ends. Its address space is limited
for its whole life; its CPU time afresh for each request (the soft limit moved to what it has used plus
CPU_SECONDS, under a hard limit that bounds the whole batch), so every request has the same CPU budget.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import sys
from types import ModuleType
from typing import Any

_resource: ModuleType | None
try:
    import resource as _resource
except ImportError:  # Windows: no rlimits; the parent watches the memory and the clock instead
    _resource = None

_MAX_REQUEST_BYTES = 64 * 1024


def _apply_limits(cpu_s: int, memory_bytes: int, cpu_hard: int | None = None) -> None:
    """Every rlimit the platform has; one it refuses (macOS may refuse RLIMIT_AS) is left to the parent,
    which bounds the child's wall-clock time, resident memory and output whatever the platform."""
    if _resource is None:
        return
    for name, value in (
        ("RLIMIT_CORE", (0, 0)),
        ("RLIMIT_FSIZE", (0, 0)),
        ("RLIMIT_CPU", (cpu_s, cpu_s + 1 if cpu_hard is None else cpu_hard)),
        ("RLIMIT_NOFILE", (32, 32)),
        ("RLIMIT_AS", (memory_bytes, memory_bytes)),
    ):
        limit = getattr(_resource, name, None)
        if limit is not None:
            with contextlib.suppress(ValueError, OSError):
                _resource.setrlimit(limit, value)


def _run(task: str, params: dict[str, Any]) -> dict[str, Any]:
    if task == "document":
        from ._extract import extract_document

        return extract_document(params)
    if task == "image":
        from ._image import prepare_image_file

        return prepare_image_file(params)
    raise ValueError(f"unknown task {task!r}")


def _error(code: str, message: str, limit: str | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "limit": limit}}


def _unexpected(exc: BaseException) -> dict[str, Any]:
    detail = "".join(ch for ch in str(exc) if ch.isprintable())[:200]
    return _error(
        "extract_failed", f"The document is malformed and could not be read ({type(exc).__name__}: {detail})."
    )


def _limit_cpu_from_now(cpu_s: int) -> None:
    """The next ``cpu_s`` seconds of CPU time (rounded up to a whole second) are the next request's."""
    if _resource is None:
        return
    with contextlib.suppress(ValueError, OSError):
        used = _resource.getrusage(_resource.RUSAGE_SELF)
        hard = _resource.getrlimit(_resource.RLIMIT_CPU)[1]
        soft = math.ceil(used.ru_utime + used.ru_stime + cpu_s)
        _resource.setrlimit(_resource.RLIMIT_CPU, (soft if hard < 0 else min(soft, hard), hard))


def _answer(request_bytes: bytes) -> dict[str, Any]:
    """The answer to one request: its result, or the error it ended with."""
    # Released on MemoryError so that the answer itself can still be built.
    reserve: bytearray | None = bytearray(1 << 20)
    from .errors import ExtractionError

    try:
        request = json.loads(request_bytes)
        answer = {"result": _run(request["task"], request["params"])}
    except ExtractionError as exc:
        answer = _error(exc.code, exc.message, exc.limit)
    except MemoryError:
        reserve = None
        answer = _error("limit_exceeded", "out of memory", "memory")
    except OSError as exc:
        # The loader reports an address-space limit as a failed mmap of a shared library.
        if "map segment" in str(exc) or exc.errno == errno.ENOMEM:
            answer = _error("limit_exceeded", "out of memory", "memory")
        else:
            answer = _unexpected(exc)
    except ImportError as exc:
        if "map segment" in str(exc) or "allocate memory" in str(exc):
            answer = _error("limit_exceeded", "out of memory", "memory")
        else:
            answer = _unexpected(exc)
    except RecursionError:
        answer = _error("extract_failed", "The document is nested too deeply to be read.")
    except Exception as exc:
        answer = _unexpected(exc)
    del reserve
    return answer


def _write(answer: dict[str, Any], end: bytes = b"") -> None:
    # JSON escapes every line end inside strings: one answer is one line.
    sys.stdout.buffer.write(json.dumps(answer, ensure_ascii=False).encode("utf-8", "replace") + end)
    sys.stdout.buffer.flush()


def main() -> int:
    _apply_limits(int(sys.argv[-2]), int(sys.argv[-1]))
    _write(_answer(sys.stdin.buffer.read(_MAX_REQUEST_BYTES)))
    return 0


def serve() -> int:
    """Answer up to TASKS requests, one line each, until stdin ends."""
    cpu_s, memory_bytes, tasks = (int(value) for value in sys.argv[-3:])
    # The whole batch's CPU: each request's budget, its rounding, and the interpreter's start.
    _apply_limits(cpu_s, memory_bytes, cpu_hard=(cpu_s + 1) * (tasks + 1))
    for _ in range(tasks):
        line = sys.stdin.buffer.readline(_MAX_REQUEST_BYTES)
        if not line.endswith(b"\n"):
            return 0  # stdin ended (or a request too long: the parent never sends one)
        _limit_cpu_from_now(cpu_s)
        _write(_answer(line), b"\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

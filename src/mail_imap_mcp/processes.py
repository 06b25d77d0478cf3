"""What this platform offers to stop and watch a child process, found by feature, not by platform name.

POSIX has process groups (a child in a session of its own is stopped with everything it started); Windows
has none, so there a child is stopped alone. A child's resident memory is read from ``/proc`` where there
is one (Linux), from the Windows API where that is the platform, and from ``ps`` elsewhere (macOS): the
extraction sandbox watches it where the child cannot limit its own address space (no ``resource`` module
on Windows; ``RLIMIT_AS`` is not enforced on macOS). The child and token-helper runners import this; it
imports nothing of the project.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

_PROC = Path("/proc/self/statm")
#: A child can lead a session of its own and be stopped with its whole process group.
HAS_PROCESS_GROUPS = hasattr(os, "setsid") and hasattr(os, "killpg")


def kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """Stop ``proc`` at once, with its process group where it leads one (``start_new_session``).

    Until ``proc`` is reaped its pid cannot be reused, so the group is never an unrelated one.
    """
    killpg = getattr(os, "killpg", None)
    kill_signal = getattr(signal, "SIGKILL", signal.SIGTERM)
    if killpg is not None:
        with contextlib.suppress(OSError):
            killpg(proc.pid, kill_signal)
    with contextlib.suppress(OSError):
        proc.kill()


def resident_bytes(pid: int) -> int | None:
    """The resident memory of process ``pid`` in bytes, or None when it cannot be read (it has ended)."""
    if _PROC.exists():
        try:
            return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            return None
    if sys.platform == "win32":  # pragma: no cover - not run on this project's CI (Linux)
        return _windows_working_set(pid)
    return _ps_resident_bytes(pid)


def _ps_resident_bytes(pid: int) -> int | None:
    """``ps -o rss=`` (KiB), where the system has no ``/proc`` (macOS, the BSDs)."""
    try:
        done = subprocess.run(
            ["ps", "-o", "rss=", "-p", str(pid)], capture_output=True, timeout=2, check=False
        )
        return int(done.stdout.split()[0]) * 1024 if done.returncode == 0 and done.stdout.split() else None
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def _windows_working_set(pid: int) -> int | None:  # pragma: no cover - Windows only
    """The process's working set, through ``OpenProcess`` and ``K32GetProcessMemoryInfo``."""
    import ctypes
    from ctypes import wintypes

    class Counters(ctypes.Structure):
        _fields_ = [
            ("cb", wintypes.DWORD),
            ("PageFaultCount", wintypes.DWORD),
            ("PeakWorkingSetSize", ctypes.c_size_t),
            ("WorkingSetSize", ctypes.c_size_t),
            ("QuotaPeakPagedPoolUsage", ctypes.c_size_t),
            ("QuotaPagedPoolUsage", ctypes.c_size_t),
            ("QuotaPeakNonPagedPoolUsage", ctypes.c_size_t),
            ("QuotaNonPagedPoolUsage", ctypes.c_size_t),
            ("PagefileUsage", ctypes.c_size_t),
            ("PeakPagefileUsage", ctypes.c_size_t),
        ]

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined,unused-ignore]
    query_limited_information = 0x1000
    handle = kernel32.OpenProcess(query_limited_information, False, pid)
    if not handle:
        return None
    try:
        counters = Counters()
        counters.cb = ctypes.sizeof(Counters)
        if not kernel32.K32GetProcessMemoryInfo(handle, ctypes.byref(counters), counters.cb):
            return None
        # Committed private memory, what an address-space limit would count, and the working set.
        return int(max(counters.PagefileUsage, counters.WorkingSetSize))
    finally:
        kernel32.CloseHandle(handle)

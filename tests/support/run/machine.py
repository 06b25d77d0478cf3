"""What machine a benchmark or soak ran on, for the reports in docs/."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any

from tests.support.patience import patient


def _proc_field(path: str, prefix: str) -> str | None:
    with contextlib.suppress(OSError):
        for line in Path(path).read_text().splitlines():
            if line.startswith(prefix):
                return line.split(":", 1)[1].strip()
    return None


def _git_commit() -> str | None:
    """Short HEAD commit of the repository, marked when src/ has uncommitted changes."""
    root = str(Path(__file__).resolve().parents[3])
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        head = subprocess.run(
            ["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", root, "status", "--porcelain", "--untracked-files=no", "src"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return head + ("+dirty src" if dirty else "")
    return None


def machine_info(dovecot_binary: str | None = None) -> dict[str, Any]:
    """Date, load, CPUs and model, memory, Python, kernel and Dovecot versions, git commit."""
    mem_kib = _proc_field("/proc/meminfo", "MemTotal:")
    dovecot = "unknown"
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        binary = dovecot_binary or shutil.which("dovecot") or "/usr/sbin/dovecot"
        dovecot = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=patient(10), check=True
        ).stdout.strip()
    commit = _git_commit()
    return {
        "date_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "nproc": len(os.sched_getaffinity(0)),
        "cpu_model": _proc_field("/proc/cpuinfo", "model name") or "unknown",
        "mem_total_gib": round(int(mem_kib.split()[0]) / 1024 / 1024, 1) if mem_kib else None,
        "python": platform.python_version(),
        "kernel": platform.release(),
        "dovecot": dovecot,
        "git_commit": commit,
    }


def child_pid(marker: str) -> int | None:
    """PID of a child process of this one whose command line contains ``marker``, else None."""
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            command_line = (entry / "cmdline").read_text().replace("\0", " ")
            if int(stat.rsplit(")", 1)[1].split()[1]) == me and marker in command_line:
                return int(entry.name)
    return None


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time a process has used so far (from /proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

"""Processes of this test process: its children (running or zombie), read from ``/proc``."""

from __future__ import annotations

import os
from pathlib import Path


def live_children() -> list[str]:
    """Processes (zombies included) whose parent is this test process."""
    me = str(os.getpid())
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[1] == me:
            found.append(f"{entry} {stat.split(' ', 2)[1]} state={fields[0]}")
    return found


def child_pids(children: list[str]) -> set[str]:
    """The pids of ``live_children()`` entries."""
    return {child.split()[0] for child in children}


def session_members(sid: int) -> list[str]:
    """Live processes (zombies excluded) of session ``sid`` (a server's main process leads one)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append(f"{entry} {stat.split(' ', 2)[1]} state={fields[0]}")
    return found

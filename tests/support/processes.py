"""Processes seen through ``/proc``: this test process's children (running or zombie), and the
processes of a session (a test server's main process leads one)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path


def _processes() -> Iterator[tuple[str, str, list[str]]]:
    """Each process as (pid, "(name)", the fields of its stat line after the name: state, ppid, pgrp, sid...)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        yield entry, stat.split(" ", 2)[1], stat.rsplit(")", 1)[1].split()


def live_children() -> list[str]:
    """Processes (zombies included) whose parent is this test process."""
    me = str(os.getpid())
    return [f"{pid} {name} state={fields[0]}" for pid, name, fields in _processes() if fields[1] == me]


def child_pids(children: list[str]) -> set[str]:
    """The pids of ``live_children()`` entries."""
    return {child.split()[0] for child in children}


def session_members(sid: int) -> list[str]:
    """Live processes (zombies excluded) of session ``sid`` (a server's main process leads one)."""
    return [
        f"{pid} {name} state={fields[0]}"
        for pid, name, fields in _processes()
        if int(fields[3]) == sid and fields[0] != "Z"
    ]

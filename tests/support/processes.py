"""Processes seen through ``/proc``: this test process's children (running or zombie), and the
processes of a session (a test server's main process leads one)."""

from __future__ import annotations

import contextlib
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


def _child_pids_of_self() -> list[str] | None:
    """This process's children (zombies included) as the kernel lists them per thread, or None where it
    does not (a kernel built without ``CONFIG_PROC_CHILDREN``)."""
    if not Path(f"/proc/self/task/{os.getpid()}/children").exists():
        return None
    pids: list[str] = []
    for task in os.listdir("/proc/self/task"):
        with contextlib.suppress(FileNotFoundError):  # a thread that ended meanwhile
            pids += Path(f"/proc/self/task/{task}/children").read_text().split()
    return pids


def live_children() -> list[str]:
    """Processes (zombies included) whose parent is this test process."""
    me = str(os.getpid())
    pids = _child_pids_of_self()
    if pids is None:
        return [f"{pid} {name} state={fields[0]}" for pid, name, fields in _processes() if fields[1] == me]
    # Read from the children lists: the whole of /proc (over a thousand processes while the suite runs)
    # was read twice a test by no_leftover_children, 6% of a worker's CPU.
    children = []
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:  # reaped meanwhile
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[1] == me:
            children.append(f"{pid} {stat.split(' ', 2)[1]} state={fields[0]}")
    return children


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

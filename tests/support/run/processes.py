"""Processes seen through ``/proc``: this test process's children (running or zombie), and the
processes of a session (a test server's main process leads one)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path


def _stat(pid: str) -> tuple[str, str, list[str]] | None:
    """Process ``pid`` as (pid, "(name)", the fields of its stat line after the name: state, ppid, pgrp,
    sid...), or None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return pid, stat.split(" ", 2)[1], stat.rsplit(")", 1)[1].split()


def _processes() -> Iterator[tuple[str, str, list[str]]]:
    """Each process as :func:`_stat` reads it."""
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (process := _stat(entry)) is not None:
            yield process


def _children_of_self() -> Iterator[tuple[str, str, list[str]]] | None:
    """This process's children (zombies included) from the lists the kernel keeps per thread, as
    :func:`_stat` reads them; None where the kernel keeps none (built without ``CONFIG_PROC_CHILDREN``)."""
    if not Path(f"/proc/self/task/{os.getpid()}/children").exists():
        return None
    pids: list[str] = []
    for task in os.listdir("/proc/self/task"):
        with contextlib.suppress(FileNotFoundError):  # a thread that ended meanwhile
            pids += Path(f"/proc/self/task/{task}/children").read_text().split()
    return (process for pid in pids if (process := _stat(pid)) is not None)


def live_children() -> list[str]:
    """Processes (zombies included) whose parent is this test process."""
    me = str(os.getpid())
    # The kernel's children lists where it keeps them: the whole of /proc (over a thousand processes
    # while the suite runs), read twice a test by no_leftover_children, was 6% of a worker's CPU. The
    # parent is checked either way: a pid listed, then reaped, may be another process's by its stat.
    processes = _children_of_self()
    if processes is None:
        processes = _processes()
    return [f"{pid} {name} state={fields[0]}" for pid, name, fields in processes if fields[1] == me]


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

"""Fixtures of the pure unit tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


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


def _pids(children: list[str]) -> set[str]:
    return {child.split()[0] for child in children}


@pytest.fixture
def no_leftover_children() -> Iterator[None]:
    """Fails the test if it leaves a child process (running or zombie) behind; children that were
    there before it (IMAP servers of a whole-suite run) do not count."""
    before = _pids(live_children())
    yield
    assert [child for child in live_children() if child.split()[0] not in before] == []

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


@pytest.fixture
def no_leftover_children() -> Iterator[None]:
    """Fails the test if it leaves a child process (running or zombie) behind."""
    yield
    assert live_children() == []

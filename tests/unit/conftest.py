"""Fixtures of the pure unit tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.run.processes import child_pids, live_children


@pytest.fixture
def no_leftover_children() -> Iterator[None]:
    """Fails the test if it leaves a child process (running or zombie) behind; children that were
    there before it (IMAP servers of a whole-suite run) do not count."""
    before = child_pids(live_children())
    yield
    assert [child for child in live_children() if child.split()[0] not in before] == []

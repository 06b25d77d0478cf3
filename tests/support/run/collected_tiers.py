"""A pytest plugin that says which test directories a run collected, before ``-k`` or ``-m`` deselect any:
``-p tests.support.run.collected_tiers`` prints ``tests collected per directory: tests/pure 2345``.

``tests/unit/test_tiers.py`` runs ``scripts/test --pure`` once with it, selecting a single test: one
collection of the pure tier both proves what the tier holds and runs a test of it (with a second run
that only listed the tier, the module took 9.8 CPU-seconds in a full run; 4.4-7.6 since).
"""

from __future__ import annotations

from collections import Counter
from pathlib import PurePosixPath

import pytest

PREFIX = "tests collected per directory:"


def tier_of(nodeid: str) -> str:
    """The directory a test belongs to: ``tests/pure`` for ``tests/pure/test_x.py::test_y``."""
    return "/".join(PurePosixPath(nodeid.split("::", 1)[0]).parts[:2])


def collected_line(nodeids: list[str]) -> str:
    """``tests collected per directory: tests/pure 300, tests/unit 2``."""
    counts = Counter(tier_of(nodeid) for nodeid in nodeids)
    return f"{PREFIX} " + ", ".join(f"{tier} {count}" for tier, count in sorted(counts.items()))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    config.stash[_LINE] = collected_line([item.nodeid for item in items])


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    terminalreporter.write_line(config.stash.get(_LINE, f"{PREFIX} nothing"))


_LINE = pytest.StashKey[str]()

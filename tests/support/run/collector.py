"""Python's cyclic collector in a test process that collects the suite: paused while it collects, then
what the collection made frozen out of its reach, and all that is left frozen as the process ends.

Before its first test, each xdist worker imports every test module (and through them the MCP SDK,
Hypothesis, Selenium and the whole product) and builds about 4,000 test items. Those objects live as
long as the process, yet each of the collector's full passes walked all of them again, and so did
the three ``gc.collect()`` of pytest's own ending. Measured on this 2-core machine, one process each:

- ``pytest --collect-only`` of the whole suite: 3.6 CPU-seconds before, 2.5 with this module;
- the 341 tests of ``-k "test_search or test_read or test_get_changes" -m "not slow"`` after a
  collection of the whole suite (a worker's day): the collector's passes took 5.6 CPU-seconds before
  and 2.2 with this module, and the run 47.6 and 40.0 CPU-seconds (servers included).

The product's commands do the same around their imports (``mail_imap_mcp.cli.startup``).
"""

from __future__ import annotations

import gc

import pytest


def collects_here(config: pytest.Config) -> bool:
    """Whether this process collects the tests: not xdist's controller, which hands them out."""
    return hasattr(config, "workerinput") or not config.getoption("numprocesses", None)


def pause_for_the_collection(config: pytest.Config) -> None:
    """Pause the collector in a process that is about to collect (``pytest_configure``)."""
    if collects_here(config):
        gc.disable()


def freeze_what_the_collection_made() -> None:
    """Move every object alive now out of the collector's reach, and let it run again
    (``pytest_collection_finish``)."""
    gc.freeze()
    gc.enable()


def freeze_for_the_exit(config: pytest.Config) -> None:
    """Move every object alive now out of the collector's reach as a process that ran tests ends
    (``pytest_unconfigure``).

    What the tests made since the collection lives until the process ends, and two full passes walked
    all of it there: pytest's, which looks for exceptions no test could raise, and the interpreter's as
    it exits. A worker that ran 580 tests (``tests/integration/search/test_search.py``, ``test_read.py``,
    ``test_faults.py``, ``test_get_changes.py``, ``tests/pure/test_mime.py``, ``test_html.py``, ``-n 1``)
    spent 4.6 CPU-seconds after its last test before, 0.15 with this (measured 2026-11-27), and its
    controller waited as long for it: at the end of a full run, every worker ends at once on two cores.
    ``atexit`` still runs (servers stop); what the passes would have found dies with the process.
    """
    if collects_here(config):
        gc.freeze()

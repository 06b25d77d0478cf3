"""A test process collects with the cyclic collector paused, then freezes what it collected, and freezes
all that is left as it ends (tests/support/run/collector.py)."""

from __future__ import annotations

import gc
from types import SimpleNamespace
from typing import Any, cast

import pytest

from tests.support.run.collector import collects_here, freeze_for_the_exit


def test_this_process_runs_its_tests_with_the_collection_frozen_and_the_collector_on() -> None:
    assert gc.isenabled()
    assert gc.get_freeze_count() > 10_000  # the modules and items of the collection, at least


def _config(numprocesses: int | None, worker: bool) -> pytest.Config:
    config: Any = SimpleNamespace(getoption=lambda name, default=None: numprocesses)
    if worker:
        config.workerinput = {"workerid": "gw0"}
    return cast(pytest.Config, config)


@pytest.mark.parametrize(
    ("numprocesses", "worker", "collects"),
    [(7, False, False), (7, True, True), (0, False, True), (None, False, True)],
    ids=["xdist-controller", "xdist-worker", "one-process", "without-xdist"],
)
def test_only_a_process_that_collects_pauses_the_collector(
    numprocesses: int | None, worker: bool, collects: bool
) -> None:
    assert collects_here(_config(numprocesses, worker)) is collects


@pytest.mark.parametrize(
    ("worker", "frozen"), [(True, True), (False, False)], ids=["xdist-worker", "xdist-controller"]
)
def test_a_process_that_ran_tests_ends_with_what_it_made_out_of_the_collectors_reach(
    worker: bool, frozen: bool
) -> None:
    # The exit's full passes (pytest's and the interpreter's) skip frozen objects: only a process that
    # ran tests has a heap worth skipping.
    made = [[]]  # a container the collector tracks, made after the last freeze
    before = gc.get_freeze_count()
    freeze_for_the_exit(_config(7, worker))
    assert (gc.get_freeze_count() > before) is frozen
    assert gc.is_tracked(made)

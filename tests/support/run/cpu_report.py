"""What each test module costs in CPU seconds, not only wall: the suite is CPU-bound on two cores.

Each test process (every xdist worker, or the one process) adds up, per test module, the CPU time its
tests took: the process's own (every thread of it) and that of the child processes it reaped meanwhile
(a command the test ran, a server a fixture stopped), from setup to teardown, with the wall time beside
it. Workers hand their sums to xdist's controller, which adds them up; with ``--cpu-report=PATH`` the
run writes them there (a tab-separated table, most expensive first) and shows the ten most expensive
modules at the end. ``scripts/test`` asks for it (``.cache/test-cpu.tsv``).

A server a worker keeps for the whole session is reaped when the worker's last test tears down: its
whole CPU, meanwhile counted nowhere, lands then. That teardown has a row of its own (:data:`WORKER_END`),
not the last test's module (a unit test that ran last carried a worker's Cyrus: 10-33 CPU-seconds on
test_wire_lines.py, test_qresync.py, test_secret_files.py in three CI runs). The table is what the
tests' own processes spent, a floor of the run's CPU.

A module fixture is built again on each worker that runs one of its module's tests (the schedule hands
tests out one by one): the report also says which were built more than once, how often, and the wall
seconds their setups took (a full run built 28 submission chains before they became one per worker).

``scripts/test`` becomes pytest (``exec``) after its installs, and a process's count of its children's
CPU survives ``exec``: what the script ran first (uv, npm, the servers unpacked, the bytecode written
ahead) is counted before the first test, in a row of its own (:data:`BEFORE`), not as the run's.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

#: The key of a worker's sums in ``workeroutput`` (xdist sends it to the controller as it ends).
WORKER_KEY = "cpu_by_module"
#: The key of a worker's module fixture builds in ``workeroutput``: ``[module, fixture, builds, setup_s]``.
BUILDS_KEY = "module_fixture_builds"
#: How many modules the end of the run shows.
SHOWN = 10
#: The row of what each process spent outside its tests: its start, imports, collection, the controller.
OUTSIDE = "(outside tests: each process's start and collection)"
#: The row of each process's last teardown: the servers it kept for the session (and its last module's
#: fixtures), stopped and reaped.
WORKER_END = "(each process's end: the servers it kept for the session, stopped)"
#: The row of what the process that became pytest had reaped before: scripts/test's installs.
BEFORE = "(before pytest: the installs and bytecode scripts/test made first)"


@dataclass
class FixtureBuilds:
    """How often a module fixture was built in the run, and the wall seconds of its setups."""

    count: int = 0
    setup_s: float = 0.0


@dataclass
class ModuleCost:
    tests: int = 0
    cpu_s: float = 0.0
    wall_s: float = 0.0

    def add(self, tests: int, cpu_s: float, wall_s: float) -> None:
        self.tests += tests
        self.cpu_s += cpu_s
        self.wall_s += wall_s


def _cpu_now() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _children_cpu_now() -> float:
    times = os.times()
    return times.children_user + times.children_system


class CpuReport:
    """The plugin: registered once per process by tests/conftest.py."""

    def __init__(
        self,
        config: pytest.Config,
        *,
        cpu_now: Callable[[], float] = _cpu_now,
        children_cpu_now: Callable[[], float] = _children_cpu_now,
    ) -> None:
        """``cpu_now`` and ``children_cpu_now`` are the clocks (a test of the report gives its own: the
        run's report reads the real ones meanwhile)."""
        self.config = config
        self.costs: dict[str, ModuleCost] = {}
        #: (module, fixture) -> the builds of a module-scoped fixture.
        self.builds: dict[tuple[str, str], FixtureBuilds] = {}
        #: CPU and wall seconds of the teardown after the last test (set by it, moved to WORKER_END).
        self._ending: tuple[float, float] | None = None
        self._cpu_now = cpu_now
        #: The children's CPU this process had counted before the run (moved to BEFORE).
        self._before = children_cpu_now()

    def cost(self, module: str) -> ModuleCost:
        return self.costs.setdefault(module, ModuleCost())

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> Generator[None, Any, Any]:
        cpu, wall = self._cpu_now(), time.monotonic()
        try:
            return (yield)
        finally:
            module = item.nodeid.split("::", 1)[0]
            end_cpu, end_wall = self._ending or (0.0, 0.0)
            self._ending = None
            self.cost(module).add(1, self._cpu_now() - cpu - end_cpu, time.monotonic() - wall - end_wall)
            if nextitem is None:
                self.cost(WORKER_END).add(0, end_cpu, end_wall)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> Generator[None, Any, Any]:
        if nextitem is not None:
            return (yield)
        cpu, wall = self._cpu_now(), time.monotonic()
        try:
            return (yield)
        finally:
            self._ending = (self._cpu_now() - cpu, time.monotonic() - wall)

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef: Any, request: Any) -> Generator[None, Any, Any]:
        if fixturedef.scope != "module":
            return (yield)
        wall = time.monotonic()
        try:
            return (yield)
        finally:
            self.built(request.node.nodeid.split("::", 1)[0], fixturedef.argname, 1, time.monotonic() - wall)

    def built(self, module: str, fixture: str, count: int, setup_s: float) -> None:
        builds = self.builds.setdefault((module, fixture), FixtureBuilds())
        builds.count += count
        builds.setup_s += setup_s

    def built_again(self) -> list[tuple[tuple[str, str], FixtureBuilds]]:
        """The module fixtures built more than once, the most setup seconds first."""
        again = [(key, builds) for key, builds in self.builds.items() if builds.count > 1]
        return sorted(again, key=lambda entry: entry[1].setup_s, reverse=True)

    def _count_outside(self) -> None:
        if self._before:
            self.cost(BEFORE).add(0, self._before, 0.0)
        self.cost(OUTSIDE).add(0, self._cpu_now() - sum(cost.cpu_s for cost in self.costs.values()), 0.0)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        output = getattr(self.config, "workeroutput", None)
        if output is not None:  # an xdist worker: its controller adds it up
            self._count_outside()
            output[WORKER_KEY] = {module: vars(cost) for module, cost in self.costs.items()}
            output[BUILDS_KEY] = [[*key, b.count, b.setup_s] for key, b in self.builds.items()]

    @pytest.hookimpl(optionalhook=True)  # xdist's hook: absent under -p no:xdist
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        output = getattr(node, "workeroutput", {})
        for module, cost in output.get(WORKER_KEY, {}).items():
            self.cost(module).add(cost["tests"], cost["cpu_s"], cost["wall_s"])
        for module, fixture, count, setup_s in output.get(BUILDS_KEY, []):
            self.built(module, fixture, count, setup_s)

    def ranked(self) -> list[tuple[str, ModuleCost]]:
        return sorted(self.costs.items(), key=lambda entry: entry[1].cpu_s, reverse=True)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        path = self.config.getoption("cpu_report")
        if path is None or hasattr(self.config, "workeroutput") or not self.costs:
            return
        self._count_outside()
        ranked = self.ranked()
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(table(ranked))
        total = sum(cost.cpu_s for _, cost in ranked)
        terminalreporter.write_sep(
            "=", f"CPU seconds per test module: {total:.0f} s in all, written to {path}"
        )
        for module, cost in ranked[:SHOWN]:
            terminalreporter.write_line(
                f"{cost.cpu_s:8.1f} s CPU {cost.wall_s:8.1f} s wall {cost.tests:5d} tests  {module}"
            )
        terminalreporter.write_line(by_tier(ranked))
        for line in built_again_lines(self.built_again()[:SHOWN]):
            terminalreporter.write_line(line)


def by_tier(ranked: list[tuple[str, ModuleCost]]) -> str:
    """One line: the CPU seconds of each tier's tests. The pure tier starts no server and no child, the
    same work in every run of one tree: a rough gauge of the host's speed (23 CPU-seconds on a quick day;
    45-59 in seven full runs of 2026-11-27, whose tests took 677-846 s; since ``9d0a7b7`` its models do
    about a fifth less work: docs/test-suite.md)."""
    tiers: dict[str, float] = {}
    for module, cost in ranked:
        parts = module.split("/")
        if len(parts) > 2 and parts[0] == "tests":
            tiers[parts[1]] = tiers.get(parts[1], 0.0) + cost.cpu_s
    return "CPU seconds by tier: " + ", ".join(f"{tier} {cpu:.1f}" for tier, cpu in sorted(tiers.items()))


def built_again_lines(again: list[tuple[tuple[str, str], FixtureBuilds]]) -> list[str]:
    """The lines that name the module fixtures built more than once (none when there are none)."""
    if not again:
        return []
    lines = ["Module fixtures built more than once (once per worker that ran one of the module's tests):"]
    for (module, fixture), builds in again:
        lines.append(f"{builds.count:8d} builds {builds.setup_s:8.1f} s of setup  {module}::{fixture}")
    return lines


def table(ranked: list[tuple[str, ModuleCost]]) -> str:
    """The report file: a header, then one line per module, most CPU first."""
    lines = ["module\ttests\tcpu_s\twall_s"]
    lines += [f"{module}\t{cost.tests}\t{cost.cpu_s:.2f}\t{cost.wall_s:.2f}" for module, cost in ranked]
    return "\n".join(lines) + "\n"


def add_option(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cpu-report",
        metavar="PATH",
        default=None,
        help="write the CPU and wall seconds of each test module to PATH (scripts/test: .cache/test-cpu.tsv)",
    )

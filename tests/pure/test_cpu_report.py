"""The CPU report's sums (tests/support/run/cpu_report.py): workers' modules added up, most CPU first."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace
from typing import Any

import pytest

from tests.support.run import cpu_report
from tests.support.run.cpu_report import (
    BEFORE,
    BUILDS_KEY,
    OUTSIDE,
    WORKER_END,
    WORKER_KEY,
    CpuReport,
    ModuleCost,
    built_again_lines,
    by_tier,
    table,
)


def worker(**modules: tuple[int, float, float]) -> Any:
    sums = {name: {"tests": n, "cpu_s": cpu, "wall_s": wall} for name, (n, cpu, wall) in modules.items()}
    return SimpleNamespace(workeroutput={WORKER_KEY: sums})


def test_each_workers_sums_are_added_per_module_and_ranked_by_cpu() -> None:
    report = CpuReport(SimpleNamespace())  # type: ignore[arg-type]
    report.pytest_testnodedown(worker(a=(2, 1.5, 3.0), b=(1, 4.0, 1.0)), None)
    report.pytest_testnodedown(worker(a=(3, 3.0, 2.0)), None)
    report.pytest_testnodedown(SimpleNamespace(workeroutput={}), None)  # a worker that crashed says nothing
    ranked = [(module, cost.tests, cost.cpu_s, cost.wall_s) for module, cost in report.ranked()]
    assert ranked == [("a", 5, 4.5, 5.0), ("b", 1, 4.0, 1.0)]
    assert table(report.ranked()) == "module\ttests\tcpu_s\twall_s\na\t5\t4.50\t5.00\nb\t1\t4.00\t1.00\n"


def run_test(
    report: CpuReport, nodeid: str, last: bool, cpu: list[float], spent: float, at_end: float
) -> None:
    """One test through the report's hooks: ``spent`` CPU-seconds in it, ``at_end`` in the teardown
    after it when it is the process's last."""
    item: Any = SimpleNamespace(nodeid=nodeid)
    nextitem = None if last else item
    protocol = report.pytest_runtest_protocol(item, nextitem)
    next(protocol)
    cpu[0] += spent
    teardown = report.pytest_runtest_teardown(item, nextitem)
    next(teardown)
    cpu[0] += at_end if last else 0.0
    for hook in (teardown, protocol):
        with contextlib.suppress(StopIteration):
            hook.send(None)


def test_the_servers_a_process_stops_at_its_end_are_not_its_last_tests() -> None:
    cpu = [0.0]
    report = CpuReport(SimpleNamespace(), cpu_now=lambda: cpu[0])  # type: ignore[arg-type]
    run_test(report, "tests/integration/test_a.py::one", False, cpu, spent=2.0, at_end=0.0)
    run_test(report, "tests/unit/test_b.py::two", True, cpu, spent=0.5, at_end=20.0)
    cpus = {module: round(cost.cpu_s, 6) for module, cost in report.ranked()}
    assert cpus == {WORKER_END: 20.0, "tests/integration/test_a.py": 2.0, "tests/unit/test_b.py": 0.5}


def test_what_the_shell_ran_before_it_became_pytest_is_a_row_of_its_own_not_the_runs() -> None:
    """scripts/test execs pytest after its installs: the 58 CPU-seconds they took (2026-11-27) were
    counted "outside tests", as if the run's own processes had spent them."""
    report = CpuReport(
        SimpleNamespace(),  # type: ignore[arg-type]
        cpu_now=lambda: 58.0 + 100.0 + 12.0,
        children_cpu_now=lambda: 58.0,
    )
    report.pytest_testnodedown(worker(a=(2, 100.0, 30.0)), None)
    report._count_outside()
    cpus = {module: round(cost.cpu_s, 6) for module, cost in report.ranked()}
    assert cpus == {"a": 100.0, BEFORE: 58.0, OUTSIDE: 12.0}


def test_a_process_that_reaped_nothing_before_the_run_has_no_such_row() -> None:
    report = CpuReport(SimpleNamespace(), cpu_now=lambda: 5.0, children_cpu_now=lambda: 0.0)  # type: ignore[arg-type]
    report._count_outside()
    assert {module for module, _ in report.ranked()} == {OUTSIDE}


def test_a_clock_replaced_by_a_test_does_not_reach_the_runs_report(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's report reads its clocks around every test, this module's too. When these tests replaced
    the module's clock instead of giving the report under test its own, a worker whose last test was one
    of them counted its end at -1.8 CPU-seconds."""
    report = CpuReport(SimpleNamespace())  # type: ignore[arg-type]
    item: Any = SimpleNamespace(nodeid="tests/pure/test_x.py::t")
    protocol = report.pytest_runtest_protocol(item, item)
    next(protocol)
    monkeypatch.setattr(cpu_report, "_cpu_now", lambda: 1e9)
    with contextlib.suppress(StopIteration):
        protocol.send(None)
    spent = dict(report.ranked())["tests/pure/test_x.py"].cpu_s
    assert 0 <= spent < 1e8, spent  # what the process spent, not the replaced clock's 1e9


def test_the_tiers_are_summed_from_their_modules_and_the_processes_own_rows_left_out() -> None:
    ranked = [
        (OUTSIDE, ModuleCost(0, 90.0, 0.0)),
        ("tests/integration/test_a.py", ModuleCost(3, 20.0, 9.0)),
        ("tests/pure/test_b.py", ModuleCost(9, 1.5, 1.0)),
        ("tests/integration/test_c.py", ModuleCost(1, 2.5, 1.0)),
        ("tests/unit/test_d.py", ModuleCost(2, 0.5, 1.0)),
        (WORKER_END, ModuleCost(0, 30.0, 4.0)),
        (BEFORE, ModuleCost(0, 58.0, 0.0)),
    ]
    assert by_tier(ranked) == "CPU seconds by tier: integration 22.5, pure 1.5, unit 0.5"


def set_up(report: CpuReport, scope: str, nodeid: str, name: str) -> None:
    """One fixture setup through the report's hook."""
    fixturedef: Any = SimpleNamespace(scope=scope, argname=name)
    request: Any = SimpleNamespace(node=SimpleNamespace(nodeid=nodeid))
    setup = report.pytest_fixture_setup(fixturedef, request)
    next(setup)
    with contextlib.suppress(StopIteration):
        setup.send(None)


def test_module_fixtures_built_on_several_workers_are_counted_and_named() -> None:
    """A module's tests handed out one by one build its module fixtures on each worker that runs one: a
    full run built 28 submission chains before they became one per worker (2026-11-27)."""
    workers = []
    for _ in range(2):
        report = CpuReport(SimpleNamespace(workeroutput={}))  # type: ignore[arg-type]
        set_up(report, "module", "tests/integration/drafts_and_sending/test_send.py", "chain")
        set_up(report, "function", "tests/integration/drafts_and_sending/test_send.py::test_a", "tmp_path")
        set_up(report, "session", "tests/integration/drafts_and_sending/test_send.py::test_a", "dovecot")
        report.pytest_sessionfinish(SimpleNamespace())  # type: ignore[arg-type]
        workers.append(report.config.workeroutput)  # type: ignore[attr-defined]
    only_once = CpuReport(SimpleNamespace(workeroutput={}))  # type: ignore[arg-type]
    set_up(only_once, "module", "tests/integration/setup/test_readme.py", "installed_home")
    only_once.pytest_sessionfinish(SimpleNamespace())  # type: ignore[arg-type]
    workers.append(only_once.config.workeroutput)  # type: ignore[attr-defined]

    controller = CpuReport(SimpleNamespace())  # type: ignore[arg-type]
    for output in workers:
        controller.pytest_testnodedown(SimpleNamespace(workeroutput=output), None)
    again = controller.built_again()
    assert [(key, builds.count) for key, builds in again] == [
        (("tests/integration/drafts_and_sending/test_send.py", "chain"), 2)
    ]
    assert controller.builds[("tests/integration/setup/test_readme.py", "installed_home")].count == 1
    (title, line) = built_again_lines(again)
    assert "more than once" in title and line.split()[:2] == ["2", "builds"]
    assert line.endswith("tests/integration/drafts_and_sending/test_send.py::chain")


def test_no_fixture_built_twice_adds_no_line() -> None:
    report = CpuReport(SimpleNamespace())  # type: ignore[arg-type]
    report.pytest_testnodedown(SimpleNamespace(workeroutput={BUILDS_KEY: [["m.py", "f", 1, 0.5]]}), None)
    assert built_again_lines(report.built_again()) == []

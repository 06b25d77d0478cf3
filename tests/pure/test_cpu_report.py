"""The CPU report's sums (tests/support/cpu_report.py): workers' modules added up, most CPU first."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from tests.support.cpu_report import WORKER_KEY, CpuReport, table


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

"""A short soak (``scripts/soak.py``): 4 clients over stdio, then 4 in-process, then 4 over HTTP
(one server process), mixed tool calls from a fixed seed.

About 18 s of load in all (6 s per mode, sampled every second); ``scripts/soak`` runs the long one. It asserts what must hold on any machine, however slow or noisy: no call
fails (every envelope valid and successful) and no process holds more open file descriptors at the
end than after the warm-up. Latency and memory are reported, not asserted; the 10-minute figures are
in docs/reliability.md ("Load (soak)").
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support.servers.dovecot import Dovecot

SOAK_PATH = Path(__file__).resolve().parents[3] / "scripts" / "soak.py"


def load_soak_module() -> ModuleType:
    """Import ``scripts/soak.py`` (``scripts`` is not a package)."""
    name = "mail_imap_mcp_soak"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, SOAK_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is created
    spec.loader.exec_module(module)
    return module


def soaked(dovecot: Dovecot, **options: Any) -> tuple[ModuleType, dict[str, Any]]:
    """The soak module and the report of a run of 4 clients with ``options`` on ``dovecot``."""
    soak = load_soak_module()
    return soak, soak.run_soak(soak.SoakOptions(clients=4, **options), dovecot)


@pytest.mark.slow
def test_short_soak_has_no_errors_and_no_fd_growth(dovecot: Dovecot) -> None:
    soak, report = soaked(
        dovecot,
        duration_s=6,
        sample_interval_s=1.0,
        messages=2000,
        command="tests/integration/harness/test_soak.py (6 s per mode)",
    )
    print(soak.format_report(report))  # shown with -s, and on failure

    assert [mode["mode"] for mode in report["modes"]] == ["stdio", "inprocess", "http"]
    for mode in report["modes"]:
        name = mode["mode"]
        examples = json.dumps(mode["error_examples"], ensure_ascii=False, indent=1)
        assert mode["errors"] == 0, f"{name}: {mode['errors_by_code']}\n{examples}"
        assert mode["fds"]["max_process_growth"] <= 0, f"{name}: fds grew after warm-up: {mode['fds']}"
        assert mode["ok"], f"{name}: {mode['problems']}"
        # The load really ran: every tool was called, by every process, with samples after the warm-up.
        assert all(mode["latency"][tool]["calls"] > 0 for tool in soak.TOOLS), mode["latency"]
        assert mode["rss"]["processes"] == (4 if name == "stdio" else 1)
        assert mode["rss"]["warmup_t_s"] >= mode["warmup_s"]
        assert sum(1 for s in mode["samples"] if s["t_s"] >= mode["warmup_s"]) >= 3
    assert report["ok"]


def test_regression_the_warm_up_ends_after_every_client_made_its_first_calls_not_at_a_time_alone() -> None:
    """A loaded CI run took the warm-up sample at 1.9 s, one call in, before a stdio server process had
    made its first IMAP call, and counted the descriptor it then opened as growth (35 -> 36, per process
    [9, 9, 9, 9] at the end)."""
    soak = load_soak_module()

    def sample(t_s: float, calls: int, fewest: int, fds: int, settled: bool = False) -> Any:
        return soak.Sample(
            t_s=t_s, calls=calls, errors=0, rss_kb={1: 1}, fds={1: fds}, settled=settled, fewest_calls=fewest
        )

    samples = [
        sample(0, 0, 0, 32),
        sample(1.9, 1, 0, 35),
        sample(2, 8, 1, 36),
        sample(2.5, 60, 4, 36),  # 60 calls of 4 clients, one of which had made 4 of them
        sample(3, 80, 10, 36),
        sample(6.1, 249, 50, 36, True),
    ]
    assert soak.first_after_warmup(samples, 1.2).t_s == 3
    assert soak.first_after_warmup(samples[:4], 1.2) is None


def test_regression_a_warm_up_longer_than_the_duration_ends_before_the_measured_span(
    dovecot: Dovecot,
) -> None:
    """On a loaded machine (load 11-17) the clients had not made their ten calls each when the duration
    was up: the warm-up's sample was the first one, taken before the IMAP connection was made, and the
    descriptor of that connection counted as growth (one more after the warm-up). A duration too short
    for the warm-up is the same: the mode runs until the warm-up ended, then the rest of the duration."""
    soak, report = soaked(
        dovecot, duration_s=1.0, sample_interval_s=0.1, warmup_fraction=0.1, messages=60, modes=("inprocess",)
    )
    [mode] = report["modes"]
    assert mode["ok"] and mode["fds"]["max_process_growth"] <= 0, soak.format_report(report)
    samples = mode["samples"]
    warm = next(s for s in samples if s["fewest_calls"] >= soak.WARMUP_CALLS_PER_CLIENT and not s["settled"])
    assert mode["rss"]["warmup_t_s"] == warm["t_s"], samples
    assert sum(1 for s in samples if s["t_s"] > warm["t_s"] and not s["settled"]) >= 3, samples

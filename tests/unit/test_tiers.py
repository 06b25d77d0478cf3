"""The test tiers as the README runs them: ``scripts/test --pure`` runs the pure tier alone, and that
tier is large enough to catch most mistakes in seconds."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.patience import patient

ROOT = Path(__file__).resolve().parents[2]
MIN_PURE_TESTS = 300


def run_pure(*arguments: str) -> subprocess.CompletedProcess[str]:
    """``scripts/test --pure`` in one process: each xdist worker would collect the whole pure tier again
    (with them, these two tests took 18 of the unit tier's 66 CPU seconds)."""
    return subprocess.run(
        [str(ROOT / "scripts" / "test"), "--pure", "-n", "0", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=patient(240),
        check=False,
    )


def test_scripts_test_pure_collects_only_the_pure_tier_and_enough_of_it() -> None:
    listed = run_pure("--collect-only")
    assert listed.returncode == 0, listed.stdout[-2000:] + listed.stderr[-2000:]
    tests = [line for line in listed.stdout.splitlines() if "::" in line]
    assert len(tests) >= MIN_PURE_TESTS
    assert all(line.startswith("tests/pure/") for line in tests)


def test_scripts_test_pure_runs_and_reports_a_failure() -> None:
    passing = run_pure("-k", "test_the_keys_mean_what_the_tree_means")
    assert passing.returncode == 0 and "1 passed" in passing.stdout, passing.stdout[-2000:]
    # pytest's failure status comes back through the script (a usage error: refused before it collects
    # the tier a third time, which cost a CPU-second more).
    refused = run_pure("--no-such-option")
    assert refused.returncode == 4 and "--no-such-option" in refused.stderr, refused.stderr[-2000:]

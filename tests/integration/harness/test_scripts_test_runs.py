"""``scripts/test``'s full run as a developer repeats it in one checkout (its setup steps, then pytest on
the run's own paths): kept out of the unit tier, whose CPU budget it would spend on the setup's checks."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.patience import patient
from tests.support.run.rewrite_ahead import python_with_storage

ROOT = Path(__file__).resolve().parents[3]
#: What scripts/test's setup steps and collection may take (on an idle machine; scaled by patience).
SETUP_S = 600


@pytest.mark.timeout(SETUP_S + 60)  # pytest-timeout's limit, scaled as the wait for the run is
def test_regression_a_second_full_run_in_the_same_checkout_finds_its_options() -> None:
    """Issue 57: the full run's ``--cpu-report PATH`` came as two words; once the first run had written
    PATH, pytest took it for the path to run, looked for no tests/conftest.py, and refused the option
    it declares ("unrecognized arguments: --cpu-report"): every run after the first failed at once."""
    report = ROOT / ".cache" / "test-cpu.tsv"
    report.parent.mkdir(exist_ok=True)
    report.touch()  # as a full run before this one left it
    listed = subprocess.run(
        # No path: the run's own (testpaths); the two larger tiers left out only to collect less.
        [
            str(ROOT / "scripts" / "test"),
            "-n",
            "0",
            "--collect-only",
            "-q",
            "-k",
            "no_test_is_named_so",
            "--ignore=tests/integration",
            "--ignore=tests/unit",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=patient(SETUP_S),
        check=False,
    )
    assert "unrecognized arguments" not in listed.stderr, listed.stderr[-2000:]
    assert listed.returncode == 5 and "deselected" in listed.stdout, (
        listed.stdout[-2000:] + listed.stderr[-2000:]
    )


def test_its_step_ahead_makes_hypothesis_caches_of_the_whole_checkout_without_a_warning(
    tmp_path: Path,
) -> None:
    """``python -m tests.support.run.rewrite_ahead``, which scripts/test runs while a fresh clone's installs
    finish: Hypothesis's caches of every module of the checkout, made before pytest loads Hypothesis's
    plugin (made from the plugin's start they were "slow code in a plugin", and it warned)."""
    storage = tmp_path / "hypothesis"
    run = python_with_storage(
        ["-m", "tests.support.run.rewrite_ahead", "-p", "no:cacheprovider", str(tmp_path)],
        storage,
        patient(300),
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "HypothesisSideeffectWarning" not in run.stdout + run.stderr
    entries = [path.read_text() for path in (storage / "constants").iterdir()]
    for module in (
        "src/mail_imap_mcp/envelope/model.py",
        "tests/conftest.py",
        "scripts/bench_attachments.py",
    ):
        assert any(f"# file: {ROOT / module}\n" in entry for entry in entries), module
    assert list((storage / "unicode_data").rglob("charmap.json.gz"))

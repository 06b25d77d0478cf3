"""The benchmark scripts run: each one's smoke mode (``--quick``, one run per row) against the throwaway
servers it starts, writing its section of benchmarks.md, so a script the code has moved away from fails
here rather than at the next documented run. The figures themselves are the scripts' to report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.patience import patient

ROOT = Path(__file__).parents[3]

pytestmark = pytest.mark.slow


def run_script(script: str, *args: str, seconds: float) -> subprocess.CompletedProcess[str]:
    """``scripts/<script> args`` run to its end (within ``seconds``, scaled by the tests' patience),
    which must be a success."""
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / script), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=patient(seconds),
        check=False,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    return run


@pytest.mark.parametrize(
    ("script", "section"),
    [
        ("bench_attachments.py", "<!-- attachments:end -->"),
        ("bench_draft_attachments.py", "<!-- draft-attachments:end -->"),
        ("bench_send_draft.py", "<!-- send-draft:end -->"),
    ],
)
def test_a_bench_script_runs_in_its_smoke_mode(script: str, section: str, tmp_path: Path) -> None:
    run_script(script, "--quick", "--runs", "1", "--out", str(tmp_path), seconds=240)
    assert section in (tmp_path / "benchmarks.md").read_text(encoding="utf-8")


def test_the_meaning_recall_benchmark_measures_postgresql_among_distractors() -> None:
    # scripts/meaning_recall --engine postgresql starts its own PostgreSQL with pgvector, as the tests do.
    run = run_script("meaning_recall.py", "--distractors", "200", "--engine", "postgresql", seconds=600)
    rows = [line.split(" | ") for line in run.stdout.splitlines() if " | postgresql | " in line]
    sets = {row[0].lstrip("| ") for row in rows}
    assert sets == {
        "English",
        "English keywords",
        "German",
        "English over German",
        "French",
        "English over French",
        "three languages",
    }, run.stdout
    assert len(rows) == 3 * len(sets)  # all, tune and held-out
    for row in rows:
        words, *others = (float(cell.strip(" |")) for cell in row[3:])
        assert all(0.0 <= value <= 1.0 for value in (words, *others)), row

"""The README's command that measures the tool surface runs as written and shows both budgets met."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.patience import patient
from tests.support.run.readme import USAGE, readme_block

ROOT = Path(__file__).resolve().parents[3]


def test_the_readme_s_surface_report_runs_and_shows_both_budgets_met() -> None:
    command = readme_block("surface", USAGE).strip()
    out = subprocess.run(
        ["bash", "-c", command], cwd=ROOT, capture_output=True, text=True, timeout=patient(120)
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "| met | yes | yes |" in out.stdout
    assert "`imap_save_draft` | — |" in out.stdout  # a write tool is listed only with writes on

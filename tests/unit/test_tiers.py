"""The test tiers as the README runs them: ``scripts/test --pure`` runs the pure tier alone, and that
tier is large enough to catch most mistakes in seconds."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.support.patience import patient
from tests.support.run.collected_tiers import PREFIX

ROOT = Path(__file__).resolve().parents[2]
MIN_PURE_TESTS = 300
#: How README and docs/test-suite.md state the pure tier's size: a figure and the command that counts it.
STATED_SIZE = re.compile(r"about ([\d,]+) tests \(`scripts/test --pure -n 0 --collect-only \| tail -1`\)")
#: How far the stated figure may lag what the tier holds before the docs are wrong.
STATED_SIZE_TOLERANCE = 0.2


def stated_pure_tier_sizes() -> dict[str, int]:
    """The pure tier's size as README and docs/test-suite.md state it, by document."""
    sizes = {}
    for document in ("README.md", "docs/test-suite.md"):
        (figure,) = STATED_SIZE.findall((ROOT / document).read_text(encoding="utf-8"))
        sizes[document] = int(figure.replace(",", ""))
    return sizes


def run_pure(*arguments: str) -> subprocess.CompletedProcess[str]:
    """``scripts/test --pure`` in one process: each xdist worker would collect the whole pure tier again
    (with them, the runs of this module took 18 of the unit tier's 66 CPU seconds)."""
    return subprocess.run(
        [str(ROOT / "scripts" / "test"), "--pure", "-n", "0", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=patient(240),
        check=False,
    )


def test_scripts_test_pure_collects_only_the_pure_tier_and_enough_of_it_and_runs_it() -> None:
    # One collection (tests.support.run.collected_tiers reports it before -k deselects): what the tier holds,
    # and one of its tests run.
    done = run_pure("-k", "test_the_keys_mean_what_the_tree_means", "-p", "tests.support.run.collected_tiers")
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    (collected,) = [line for line in done.stdout.splitlines() if line.startswith(PREFIX)]
    found = re.fullmatch(rf"{PREFIX} tests/pure (\d+)", collected)
    assert found is not None, collected
    assert int(found[1]) >= MIN_PURE_TESTS
    # The docs state the tier's size from the command they name, and agree (issue 79 item 8).
    off = {
        document: stated
        for document, stated in stated_pure_tier_sizes().items()
        if abs(stated - int(found[1])) > STATED_SIZE_TOLERANCE * int(found[1])
    }
    assert off == {}, f"the pure tier holds {found[1]} tests; update the figure in {sorted(off)}"


def test_scripts_test_pure_reports_a_failure() -> None:
    # pytest's failure status comes back through the script (a usage error: refused before it collects).
    refused = run_pure("--no-such-option")
    assert refused.returncode == 4 and "--no-such-option" in refused.stderr, refused.stderr[-2000:]

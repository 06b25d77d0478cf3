"""A command's imports run without the cyclic collector, and what they made is frozen (``cli/startup.py``).

In a child process: freezing objects in the test process would keep them for the rest of the run."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tests.support.patience import patient

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "startup_cost.py"


def _in_a_child(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=patient(30)
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_collector_is_paused_for_the_imports_then_on_again_and_what_they_made_is_frozen() -> None:
    out = _in_a_child(
        """
        import gc
        from mail_imap_mcp.cli.startup import collector_paused
        with collector_paused():
            during = gc.isenabled()
            made = [[] for _ in range(5000)]
        print(during, gc.isenabled(), gc.get_freeze_count() >= 5000)
        """
    )
    assert out == "False True True"


def test_a_collector_that_was_off_stays_off_and_an_error_in_the_imports_still_ends_the_pause() -> None:
    out = _in_a_child(
        """
        import gc
        from mail_imap_mcp.cli.startup import collector_paused
        with collector_paused():
            pass
        gc.disable()
        with collector_paused():
            pass
        off = gc.isenabled()
        gc.enable()
        try:
            with collector_paused():
                raise ImportError("no such module")
        except ImportError:
            pass
        print(off, gc.isenabled())
        """
    )
    assert out == "False True"


def test_startup_cost_script_measures_both_commands_both_ways() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--rounds", "1"], capture_output=True, text=True, timeout=patient(60)
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout.strip()
    rows = out.splitlines()[1:]
    assert [row.split()[:3] for row in rows] == [
        ["serve", "collector", "paused"],
        ["serve", "collector", "on"],
        ["index", "collector", "paused"],
        ["index", "collector", "on"],
    ]
    assert all(float(row.split()[3]) > 0 for row in rows)


def test_startup_cost_script_measures_whole_starts_as_a_client_makes_them() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--whole", "--rounds", "1"],
        capture_output=True,
        text=True,
        timeout=patient(120),
    )
    assert done.returncode == 0, done.stderr
    rows = done.stdout.strip().splitlines()[1:]
    assert [row.rsplit(None, 3)[0] for row in rows] == [
        "serve+initialize+tools/list",
        "index --status",
        "sandbox child (a PDF)",
    ]
    assert all(float(row.rsplit(None, 3)[1]) > 0 for row in rows)

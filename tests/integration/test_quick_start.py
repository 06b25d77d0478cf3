"""The README's Quick start, run as a newcomer runs it: `scripts/demo` from the checkout, fresh HOME.

Issue 20: the demo died with ``KeyError: 'next_action'`` after its third call once compact search pages
stopped carrying ``next_action``, and nothing noticed because no test ran it.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.patience import patient

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

DEMO_STEPS = (
    "1: imap_list_accounts",
    "2: imap_list_mailboxes",
    "3: imap_search_messages",
    "4 (next page via cursor): imap_search_messages",
    "5: imap_search_messages",
    "6: imap_get_message",
    "7: imap_get_message_raw",
    "8 (a mistake the model can fix): imap_search_messages",
)


def quick_start_commands() -> list[str]:
    """The commands of the README's Quick start block, without their comments."""
    match = re.search(r"## Quick start\n.*?```sh\n(.*?)```", README.read_text(), re.DOTALL)
    assert match, "README.md has no Quick start block"
    return [line.split("#")[0].strip() for line in match.group(1).splitlines() if line.strip()]


def test_quick_start_names_the_demo_then_the_test_command() -> None:
    assert quick_start_commands() == ["scripts/demo", "scripts/test"]


@pytest.mark.slow
def test_regression_readme_demo_runs_every_step_and_exits_zero(tmp_path: Path) -> None:
    # Issue 20: `scripts/demo` exited 1 with KeyError: 'next_action' after step 3.
    demo = quick_start_commands()[0]
    env = {"HOME": str(tmp_path), "PATH": os.environ["PATH"], "LANG": "C.UTF-8"}
    done = subprocess.run(
        ["bash", "-c", demo], cwd=ROOT, env=env, capture_output=True, text=True, timeout=patient(240)
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    shown = re.findall(r"^» (.+?)  \{", done.stdout, re.MULTILINE)
    assert shown == list(DEMO_STEPS)
    marks = re.findall(r"^  summary: .*  \[(.+)\]$", done.stdout, re.MULTILINE)
    assert marks == ["ok"] * 7 + ["error: invalid_input"]
    assert "Traceback" not in done.stderr
    assert done.stdout.rstrip().endswith("Done: the server, the client and Dovecot have all stopped.")

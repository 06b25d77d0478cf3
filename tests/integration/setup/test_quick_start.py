"""The README's Quick start, run as a newcomer runs it: `scripts/demo` from the checkout, fresh HOME.

Issue 20: the demo died with ``KeyError: 'next_action'`` after its third call once compact search pages
stopped carrying ``next_action``, and nothing noticed because no test ran it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import pytest
from mcp import StdioServerParameters

from tests.support.accounts import account_settings, config_toml
from tests.support.patience import patient
from tests.support.servers.dovecot import Dovecot

ROOT = Path(__file__).resolve().parents[3]
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


@pytest.mark.slow
def test_regression_the_demo_runs_with_a_private_tmpdir(tmp_path: Path) -> None:
    """Issue 78: run as root with a private ``TMPDIR`` (mode 0700), the demo put Dovecot's files where its
    mail user (nobody) could not enter, and its steps failed; it makes a folder of its own, as scripts/test
    does. (Run as another user, the mail user is that user, who enters it anyway: the demo must pass.)"""
    # A short path, as /root/tmp is: the servers' directories go to /tmp where TMPDIR's path is too long
    # for their sockets (tests/support/servers/imapserver.py), which tmp_path is.
    private = Path(tempfile.mkdtemp(prefix="mim-private-", dir="/tmp"))  # mode 0700
    env = {"HOME": str(tmp_path), "PATH": os.environ["PATH"], "LANG": "C.UTF-8", "TMPDIR": str(private)}
    try:
        done = subprocess.run(
            ["bash", "scripts/demo"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=patient(240)
        )
        left = list(private.iterdir())
    finally:
        shutil.rmtree(private, ignore_errors=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    marks = re.findall(r"^  summary: .*  \[(.+)\]$", done.stdout, re.MULTILINE)
    assert marks == ["ok"] * 7 + ["error: invalid_input"], done.stdout[-3000:]
    assert not left  # nothing of the demo's was put there


def test_the_demo_installs_dovecot_but_not_the_submission_chain_scripts_test_uses() -> None:
    """Issue 78: the read-only demo installed the sending tests' Exim and Dovecot services too."""
    script = (
        f"source {ROOT / 'scripts' / '_bootstrap.sh'}\n"
        'apt_install() { echo "would install: $*"; }\n'
        'ensure_submission_chain() { echo "would install the submission chain"; }\n'
        "ensure_dovecot\n"
    )
    done = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=patient(30), check=True
    )
    assert "submission chain" not in done.stdout
    demo, test = ((ROOT / "scripts" / name).read_text() for name in ("demo", "test"))
    assert "ensure_submission_chain" not in demo and "\nensure_submission_chain\n" in test


def load_demo_module() -> ModuleType:
    """Import ``scripts/demo.py`` (``scripts`` is not a package)."""
    spec = importlib.util.spec_from_file_location("mail_imap_mcp_demo", ROOT / "scripts" / "demo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.anyio
async def test_regression_a_demo_step_that_fails_skips_the_steps_that_need_its_answer(
    dovecot: Dovecot, user: str, tmp_path: Path
) -> None:
    """Issue 78: a failed search ended the demo in ``KeyError: 'next_cursor'`` (its traceback, not the
    steps that went wrong). Here every call that logs in is refused (a wrong password): the demo names the
    steps that failed and those it skipped."""
    demo = load_demo_module()
    config = tmp_path / "config.toml"
    config.write_text(config_toml({"default": account_settings(dovecot, user, password_env="DEMO_WRONG")}))
    params = StdioServerParameters(
        command=demo.SERVER,
        args=["serve", "--config", str(config)],
        env={"DEMO_WRONG": dovecot.password + "-not", "PATH": os.environ["PATH"], "HOME": str(tmp_path)},
    )
    unexpected = await demo.drive(params)
    assert "steps 4 skipped: step 3 gave no next_cursor" in unexpected, unexpected
    assert "steps 6-7 skipped: step 5 found no message to read" in unexpected, unexpected
    assert any(line.startswith("step 3 answered auth_failed") for line in unexpected), unexpected

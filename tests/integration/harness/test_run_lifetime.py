"""Test servers never outlive the test run (issue 20, item 5).

Each test starts a small pytest run as a subprocess, whose one test starts a real Dovecot through the
harness and waits; the run is then ended from outside as CI's time limit or a user would end it, and no
process of that Dovecot may be left (its main process leads a session: every process of the session is
looked for). SIGTERM must also let the run clean up (the instance directory is gone); SIGKILL runs no
cleanup at all, so only the processes are checked (the server's lifeline ends them).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.patience import NotYet, eventually, patient
from tests.support.run.processes import session_members
from tests.support.servers.imapserver import REPO_ROOT

INNER_CONFTEST = """\
from tests.support.run.run_lifetime import end_run_on_sigterm


def pytest_configure(config):
    end_run_on_sigterm(config)
"""

INNER_TEST = """\
import os
import time

from tests.support.servers.dovecot import Dovecot


def test_holds_a_dovecot():
    with Dovecot() as server:
        server.connect().select_folder("INBOX")  # a session process besides the master
        ready = os.environ["MIM_READY_FILE"]
        with open(ready + ".tmp", "w") as out:
            out.write(f"{server._proc.pid} {server.root}\\n")
        os.rename(ready + ".tmp", ready)
        time.sleep(120)
"""


def wait_for(path: Path, proc: subprocess.Popen[str], within: float) -> str:
    def came_up() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"the inner run ended early:\n{proc.communicate()[0]}")
        return path.exists()

    try:
        eventually(came_up, within=within)
    except NotYet:
        proc.kill()
        raise AssertionError(f"the inner run's Dovecot never came up:\n{proc.communicate()[0]}") from None
    return path.read_text()


def leftovers(leader: int, within: float) -> list[str]:
    """The processes still in the server's session once they had ``within`` s (with patience) to end."""
    with contextlib.suppress(NotYet):
        eventually(lambda: not session_members(leader), within=within)
    return session_members(leader)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("how", "options"),
    [
        pytest.param(signal.SIGTERM, [], id="sigterm"),
        pytest.param(signal.SIGTERM, ["-n", "1"], id="sigterm-xdist"),
        pytest.param(signal.SIGKILL, [], id="sigkill"),
    ],
)
def test_a_run_ended_from_outside_leaves_no_server_running(
    tmp_path: Path, how: signal.Signals, options: list[str]
) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(INNER_CONFTEST)
    (tmp_path / "test_inner.py").write_text(INNER_TEST)
    ready = tmp_path / "ready"
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), MIM_READY_FILE=str(ready))
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options, "test_inner.py"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    leader_text, root_text = wait_for(ready, proc, within=60).split()
    leader, root = int(leader_text), Path(root_text)
    assert session_members(leader), "the Dovecot of the inner run is not running"
    try:
        proc.send_signal(how)
        output = proc.communicate(timeout=patient(60))[0]
        assert leftovers(leader, within=10) == [], output
        if how == signal.SIGTERM:
            assert proc.returncode != 0, output
            assert not root.exists(), f"the instance directory was left behind:\n{output}"
    finally:
        if session_members(leader):
            os.killpg(leader, signal.SIGKILL)
        shutil.rmtree(root, ignore_errors=True)

"""scripts/_bootstrap.sh: every apt-get waits for apt's locks and says what it waits for (issue 57).

On a fresh machine unattended upgrades hold the dpkg lock for minutes, and the README's test command
failed at once. Here a lock file of the test's own stands for apt's (``APT_LOCKS``), the test process
holds it as apt does (an fcntl lock), and an ``apt-get`` of the test's own on PATH records how it was run.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.patience import patient
from tests.support.run.bootstrap import ROOT, bootstrap_command


@pytest.fixture
def lock(tmp_path: Path) -> Path:
    path = tmp_path / "lock-frontend"
    path.touch()
    return path


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    """Where the stand-in apt-get writes its arguments, once it runs."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "apt-get"
    stub.write_text(f'#!/bin/sh\necho "$@" > {tmp_path / "ran"}\n')
    stub.chmod(0o755)
    return tmp_path / "ran"


def apt_get(lock: Path, recorded: Path, *args: str, wait_s: int | str = 900) -> subprocess.Popen[str]:
    command, env = bootstrap_command(
        f'APT_LOCKS=("{lock}") && apt_get "$@"',
        recorded.parent / "bin",
        {"MIM_APT_LOCK_WAIT_S": str(wait_s)},
        *args,
    )
    return subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)


def held(lock: Path) -> int:
    descriptor = os.open(lock, os.O_RDWR)
    fcntl.lockf(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return descriptor


def test_apt_get_waits_for_the_lock_says_who_holds_it_then_runs_with_dpkgs_own_wait(
    lock: Path, recorded: Path
) -> None:
    descriptor = held(lock)
    try:
        run = apt_get(lock, recorded, "update", "-qq")
        # It says so as it starts waiting, and does not run apt-get meanwhile.
        assert run.stderr is not None
        said = run.stderr.readline()
        assert f"apt-get update waits for apt's lock, held by process {os.getpid()}" in said, said
        assert "MIM_APT_LOCK_WAIT_S" in said
        assert run.poll() is None and not recorded.exists()
    finally:
        os.close(descriptor)  # the other apt-get is done
    assert run.wait(timeout=patient(30)) == 0, run.stderr.read()
    assert recorded.read_text().split() == ["-o", "DPkg::Lock::Timeout=900", "update", "-qq"]


def test_a_lock_held_past_the_wait_is_a_failure_that_says_so_and_runs_nothing(
    lock: Path, recorded: Path
) -> None:
    descriptor = held(lock)
    try:
        run = apt_get(lock, recorded, "install", "-y", "dovecot-imapd", wait_s=1)
        _, said = run.communicate(timeout=patient(30))
    finally:
        os.close(descriptor)
    assert run.returncode == 1
    assert f"still held by process {os.getpid()} after 1 s: giving up on apt-get install" in said
    assert not recorded.exists()


def test_a_free_lock_runs_apt_get_at_once_with_dpkgs_own_wait(lock: Path, recorded: Path) -> None:
    run = apt_get(lock, recorded, "download", "-qq", "cyrus-imapd")
    _, said = run.communicate(timeout=patient(30))
    assert run.returncode == 0 and said == ""
    assert recorded.read_text().split() == ["-o", "DPkg::Lock::Timeout=900", "download", "-qq", "cyrus-imapd"]


def test_regression_an_apt_get_that_lost_the_race_for_the_lock_waits_and_runs_again(
    lock: Path, recorded: Path
) -> None:
    """Two fresh clones' `bash .ci/run` found the locks free at the same moment; the apt-get update that
    lost failed at once ("Could not get lock /var/lib/apt/lists/lock"), and so did its whole run."""
    stub = recorded.parent / "bin" / "apt-get"
    lost = recorded.parent / "lost"
    stub.write_text(
        "#!/bin/sh\n"
        f'if [ ! -e {lost} ]; then touch {lost}; echo "E: Could not get lock /var/lib/apt/lists/lock." >&2; exit 100; fi\n'
        f'echo "$@" > {recorded}\n'
    )
    run = apt_get(lock, recorded, "update", "-qq")
    _, said = run.communicate(timeout=patient(30))
    assert run.returncode == 0, said
    assert "found apt's lock taken as it started: waits and runs again" in said
    assert recorded.read_text().split() == ["-o", "DPkg::Lock::Timeout=900", "update", "-qq"]


def test_an_apt_get_that_fails_for_another_reason_fails_once_and_shows_why(
    lock: Path, recorded: Path
) -> None:
    stub = recorded.parent / "bin" / "apt-get"
    stub.write_text('#!/bin/sh\necho "E: Unable to locate package nosuch" >&2\nexit 100\n')
    run = apt_get(lock, recorded, "install", "-y", "nosuch")
    _, said = run.communicate(timeout=patient(30))
    assert run.returncode == 100
    assert "Unable to locate package nosuch" in said and "runs again" not in said


def test_a_wait_that_is_no_whole_number_of_seconds_ends_the_setup_naming_the_setting(
    lock: Path, recorded: Path
) -> None:
    # Before, the shell's test of the time waited said "integer expression expected" once a lock was held.
    run = apt_get(lock, recorded, "update", "-qq", wait_s="15 min")
    _, said = run.communicate(timeout=patient(30))
    assert run.returncode == 2
    assert "MIM_APT_LOCK_WAIT_S must be a whole number of seconds, not '15 min'" in said
    assert not recorded.exists()

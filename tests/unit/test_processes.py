"""processes.py: each way of reading a child's resident memory agrees with the kernel's own figure."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mail_imap_mcp import processes
from tests.support.patience import eventually, patient
from tests.support.run import processes as support_processes
from tests.support.run.processes import live_children


def kernel_rss(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    kib = next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))
    return int(kib) * 1024


def test_resident_bytes_reads_proc_on_linux() -> None:
    used = processes.resident_bytes(os.getpid())
    assert used is not None and abs(used - kernel_rss(os.getpid())) < 16 << 20


@pytest.mark.skipif(shutil.which("ps") is None, reason="no ps on this machine")
def test_the_ps_reading_macos_uses_agrees_with_proc() -> None:
    used = processes._ps_resident_bytes(os.getpid())
    assert used is not None and abs(used - kernel_rss(os.getpid())) < 16 << 20


def test_an_ended_process_has_no_resident_memory() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert processes.resident_bytes(child.pid) is None
    assert processes._ps_resident_bytes(child.pid) is None


def test_kill_tree_stops_a_child_and_what_it_started() -> None:
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); print(flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        start_new_session=processes.HAS_PROCESS_GROUPS,
    )
    assert child.stdout is not None
    child.stdout.readline()  # the grandchild has started
    processes.kill_tree(child)
    assert child.wait(timeout=patient(5)) != 0
    # The whole group is gone: nothing of it runs (a zombie waits for whoever reaps orphans here).
    eventually(lambda: living_members(child.pid) == [], within=5, what="the whole group gone")


def living_members(group: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def test_live_children_reads_the_kernels_children_lists_as_the_scan_of_proc_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # tests/support/run/processes.py: no_leftover_children's reading, a zombie included, both ways.
    child = subprocess.Popen([sys.executable, "-c", "pass"])

    def listed() -> list[str]:
        return [entry for entry in live_children() if entry.startswith(f"{child.pid} ")]

    eventually(
        lambda: [entry.endswith("state=Z") for entry in listed()] == [True], within=10, what="a zombie"
    )
    assert support_processes._children_of_self() is not None  # Linux: the children lists are what is tested
    zombie = listed()
    assert zombie[0].startswith(f"{child.pid} (python")
    monkeypatch.setattr(support_processes, "_children_of_self", lambda: None)
    assert listed() == zombie  # the scan of /proc finds it alike
    child.wait()
    assert listed() == []
    monkeypatch.undo()
    assert listed() == []

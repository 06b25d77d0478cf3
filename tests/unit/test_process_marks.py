"""Marks that name their process (state/process_marks.py), against real processes of this machine: a mark
of a living process is kept, one of a process that ended (exited, or killed and not yet reaped) or whose id
a new process took is cleared by the next that wants it; another host's, or one of another form, is kept."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mail_imap_mcp.state import MemoryStore
from mail_imap_mcp.state.process_marks import hold, owner_gone

KEY, TTL_S = "send-page-open:default", 360.0


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
def ended() -> int:
    """The id of a process that ran and was reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def start_of(pid: int) -> str:
    """When ``pid`` started, as the kernel says (ticks since boot); "" for a process gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except OSError:
        return ""


def mark_of(pid: int, host: str | None = None, started: str | None = None) -> bytes:
    """A mark as process ``pid`` (of ``host``; started at ``started``, else when it did) takes it."""
    value = json.loads(hold(MemoryStore(), KEY, TTL_S) or b"{}")
    value["pid"] = pid
    value["started"] = start_of(pid) if started is None else started
    if host is not None:
        value["host"] = host
    return json.dumps(value).encode()


def test_a_living_owners_mark_is_kept_and_given_back_by_its_owner_alone(store: MemoryStore) -> None:
    mine = hold(store, KEY, TTL_S)
    assert mine is not None and json.loads(mine)["pid"] == os.getpid()
    assert hold(store, KEY, TTL_S) is None  # this very process still waits: kept
    store.release(KEY, b"someone else's")
    assert store.get(KEY) == mine
    store.release(KEY, mine)
    assert hold(store, KEY, TTL_S) is not None


def test_a_mark_of_a_process_that_ended_is_cleared(store: MemoryStore, ended: int) -> None:
    store.set(KEY, mark_of(ended), TTL_S)
    assert owner_gone(mark_of(ended))
    taken = hold(store, KEY, TTL_S)
    assert taken is not None and json.loads(taken)["pid"] == os.getpid() and store.get(KEY) == taken


def test_a_mark_of_a_process_killed_and_not_yet_reaped_is_cleared(store: MemoryStore) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        store.set(KEY, mark_of(child.pid), TTL_S)
        assert hold(store, KEY, TTL_S) is None  # it lives
        os.kill(child.pid, signal.SIGKILL)
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # ended, left unreaped: a zombie
        assert hold(store, KEY, TTL_S) is not None
    finally:
        child.kill()
        child.wait()


def test_a_mark_whose_process_id_a_new_process_took_is_cleared(store: MemoryStore) -> None:
    store.set(KEY, mark_of(os.getpid(), started="1"), TTL_S)  # this id, but a process started at boot
    assert hold(store, KEY, TTL_S) is not None


@pytest.mark.parametrize(
    "value",
    [b"open", b"{}", b'{"host": 1}'],
    ids=["an older server's", "no owner", "a malformed owner"],
)
def test_a_mark_of_another_form_is_kept(store: MemoryStore, value: bytes) -> None:
    store.set(KEY, value, TTL_S)
    assert hold(store, KEY, TTL_S) is None and store.get(KEY) == value


def test_another_hosts_mark_is_kept_whatever_its_process_id(store: MemoryStore, ended: int) -> None:
    """A process id says nothing of another machine's processes (a Redis shared by several)."""
    value = mark_of(ended, host="another-host.example")
    store.set(KEY, value, TTL_S)
    assert not owner_gone(value) and hold(store, KEY, TTL_S) is None and store.get(KEY) == value

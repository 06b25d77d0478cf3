"""The state directory's file (state/file_store.py): what every process of the machine shares and a restart
keeps (a send's record, its hourly count, the mark of a draft being approved), on a clock the test moves;
processes of their own racing on one file."""

from __future__ import annotations

import multiprocessing
import stat
import sys
import threading
from pathlib import Path

import pytest

from mail_imap_mcp.presentation.state_failures import STATE_FAILURES
from mail_imap_mcp.state import FileStore, MemoryStore, StateUnavailable, lasting_store
from mail_imap_mcp.state.file_store import FILE_NAME
from tests.support.patience import patient
from tests.support.store_contract import holds_get_many


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_record_outlives_the_store_that_wrote_it_and_is_seen_by_another(tmp_path: Path) -> None:
    path = tmp_path / "state" / "records.sqlite3"
    first = FileStore(path)
    assert first.add("mim:send:x", b"unknown", 3600)
    first.close()  # the process ends
    second, beside = FileStore(path), FileStore(path)
    assert second.get("mim:send:x") == b"unknown"
    assert not beside.add("mim:send:x", b"sending", 3600)
    second.delete("mim:send:x")
    assert beside.get("mim:send:x") is None


def test_times_to_live_count_on_the_wall_clock_and_a_counter_keeps_its_first_expiry(tmp_path: Path) -> None:
    clock = Clock()
    store = FileStore(tmp_path / "records.sqlite3", clock=clock)
    store.set("k", b"v", 10)
    assert [store.incr("rate", 60) for _ in range(3)] == [1, 2, 3]
    clock.now += 10.5
    assert store.get("k") is None and store.add("k", b"again", 10)
    assert store.incr("rate", 60) == 4
    clock.now += 50
    assert store.incr("rate", 60) == 1  # the window ended: a new count
    assert store.incr("rate", 60, by=20) == 21


def test_take_renew_and_release_as_the_memory_store_does(tmp_path: Path) -> None:
    clock = Clock()
    for store in (FileStore(tmp_path / "records.sqlite3", clock=clock), MemoryStore(clock=clock)):
        store.set("lease", b"mine", 5)
        assert not store.renew("lease", b"theirs", 5) and store.renew("lease", b"mine", 5)
        store.release("lease", b"theirs")
        assert store.get("lease") == b"mine"
        store.release("lease", b"mine")
        store.set("once", b"v", 5)
        assert (store.take("once"), store.take("once")) == (b"v", None)
        assert store.mark_used("token", 5) and not store.mark_used("token", 5)


@pytest.mark.parametrize("kind", ["file", "memory"])
def test_many_values_are_read_at_once_as_one_by_one(tmp_path: Path, kind: str) -> None:
    clock = Clock()
    store = (
        FileStore(tmp_path / "records.sqlite3", clock=clock) if kind == "file" else MemoryStore(clock=clock)
    )

    def let_pass() -> None:
        clock.now += 10 + 1

    holds_get_many(store, 10, let_pass)


def test_the_file_and_its_directory_are_this_users_alone(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "state" / "records.sqlite3")
    store.set("k", b"v", 10)
    if sys.platform != "win32":
        assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == 0o700
        assert stat.S_IMODE((tmp_path / "state" / "records.sqlite3").stat().st_mode) == 0o600


def test_a_state_directory_that_cannot_be_written_fails_its_calls_naming_state_dir(tmp_path: Path) -> None:
    """Not at start (the server reads and searches without it): each call that needs the record."""
    (tmp_path / "taken").write_text("a file where the directory should be")
    store = FileStore(tmp_path / "taken" / "records.sqlite3")
    with pytest.raises(StateUnavailable) as failed:
        store.add("mim:send:x", b"sending", 10)
    failure = STATE_FAILURES[StateUnavailable](failed.value, None)
    assert (failure.code.value, failure.details) == ("unavailable", {"setting": "state_dir"})
    assert "[server] state_dir" in failure.message


def test_redis_stays_the_authority_in_a_team(tmp_path: Path) -> None:
    shared = MemoryStore()
    shared.shared = True  # type: ignore[misc]  # stands for the Redis store here
    assert lasting_store(shared, tmp_path) is shared
    alone = lasting_store(MemoryStore(), tmp_path)
    assert isinstance(alone, FileStore) and alone.path == tmp_path / "records.sqlite3"


def _race(path: str, start: object, results: object) -> None:
    store = FileStore(Path(path))
    start.wait()  # type: ignore[attr-defined]
    won = store.add("mim:send:draft", b"sending", 3600)
    counts = [store.incr("mim:send-rate:hour", 3600) for _ in range(20)]
    results.put((won, counts))  # type: ignore[attr-defined]


def test_processes_racing_on_one_file_record_one_send_and_count_every_increment(tmp_path: Path) -> None:
    """Four processes add one draft's record and count 20 sends each at once: one of them takes the
    record, and the count ends at 80 with no number given twice."""
    context = multiprocessing.get_context("spawn")
    start, results = context.Event(), context.Queue()
    path = str(tmp_path / "records.sqlite3")
    processes = [context.Process(target=_race, args=(path, start, results)) for _ in range(4)]
    for process in processes:
        process.start()
    start.set()
    outcomes = [results.get(timeout=patient(60)) for _ in processes]
    for process in processes:
        process.join(patient(30))
    assert sorted(won for won, _ in outcomes) == [False, False, False, True]
    counts = sorted(count for _, taken in outcomes for count in taken)
    assert counts == list(range(1, 81))


def test_regression_two_processes_opening_a_new_state_file_at_once_both_use_it(tmp_path: Path) -> None:
    # A loaded full run: two stdio servers sharing one state directory (Claude Desktop and Claude Code)
    # started together, and one send was refused as unavailable naming state_dir: switching the new file
    # to WAL does not wait for SQLite's busy timeout. Threads stand in for the processes (one connection
    # each); the race failed in 7 of 200 rounds before the fix.
    failures: list[str] = []
    for round_ in range(200):
        path = tmp_path / str(round_) / FILE_NAME
        together = threading.Barrier(2)

        def record(path: Path = path, together: threading.Barrier = together, name: str = "a") -> None:
            together.wait()
            try:
                FileStore(path).set(name, b"x", 60)
            except Exception as failure:  # the assert quotes it
                failures.append(f"{type(failure).__name__}: {failure}")

        threads = [threading.Thread(target=record, kwargs={"name": name}) for name in ("a", "b")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert failures == []

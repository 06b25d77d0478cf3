"""The extraction child: its limits, isolation and bounded answers (real child processes)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from mail_imap_mcp.content import sandbox
from mail_imap_mcp.content.documents import ExtractionError
from mail_imap_mcp.content.sandbox import SandboxLimits, run_in_sandbox
from tests.support.limits import default_extract_limits
from tests.support.mail.documents import CORPUS
from tests.support.patience import NotYet, eventually
from tests.support.run.processes import live_children

pytestmark = pytest.mark.usefixtures("no_leftover_children")


def pdf_params(path: Path, **extra: object) -> dict[str, object]:
    return {
        "format": "pdf",
        "path": str(path),
        "offset": 0,
        "max_chars": 1000,
        "hard_cap": 1000,
        "memory_bytes": 512 << 20,
        **extra,
    }


def _is_extraction_child(child: str) -> bool:
    try:
        return "mail_imap_mcp.content._child" in Path(f"/proc/{child.split()[0]}/cmdline").read_text()
    except OSError:
        return False


def _row(limits: str, name: str) -> str:
    return next((line for line in limits.splitlines() if line.startswith(name)), "")


def test_the_child_runs_with_its_limits_in_its_own_session_and_a_bare_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MIM_SANDBOX_CANARY", "secret-value")
    # A named pipe nobody writes to yet: the child waits for its bytes, using no CPU, while it is looked
    # at; then the test opens and closes it, and the child ends at once (an empty PDF) rather than by a
    # limit (a CPU-bound document burnt 3 CPU-seconds here).
    path = tmp_path / "waiting.pdf"
    os.mkfifo(path)
    seen: dict[str, str] = {}

    def caught() -> bool:
        for child in filter(_is_extraction_child, live_children()):
            pid = int(child.split()[0])
            try:
                seen["limits"] = Path(f"/proc/{pid}/limits").read_text()
                seen["environ"] = Path(f"/proc/{pid}/environ").read_bytes().decode()
                seen["session"] = str(os.getsid(pid) == pid)
                seen["cmdline"] = Path(f"/proc/{pid}/cmdline").read_bytes().decode()
            except OSError:
                seen.clear()
                continue
            # The child limits itself first thing; wait until it has.
            if "_child" not in seen["cmdline"] or "unlimited" in _row(seen["limits"], "Max address space"):
                seen.clear()
                continue
            return True
        return False

    def opened_and_closed() -> bool:
        try:  # fails (ENXIO) until the child opens the pipe to read it
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            return False
        return True

    def watch() -> None:
        with contextlib.suppress(NotYet):  # the test says what it saw
            eventually(caught, within=10, interval=0.02)
            eventually(opened_and_closed, within=10, interval=0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    limits = SandboxLimits(timeout_s=4, cpu_s=3, memory_bytes=300 << 20, max_response_bytes=1 << 20)
    with pytest.raises(ExtractionError):
        run_in_sandbox("document", pdf_params(path, memory_bytes=limits.memory_bytes), limits)
    watcher.join()
    assert seen, "the child was not observed"
    rows = {line[:26].strip(): line[26:].split() for line in seen["limits"].splitlines()[1:]}
    assert rows["Max address space"][:2] == [str(300 << 20)] * 2
    assert rows["Max cpu time"][:2] == ["3", "4"]
    assert rows["Max file size"][:2] == ["0", "0"]
    assert rows["Max core file size"][:2] == ["0", "0"]
    assert rows["Max open files"][:2] == ["32", "32"]
    assert seen["session"] == "True"
    assert "MIM_SANDBOX_CANARY" not in seen["environ"]
    assert sorted(item.split("=")[0] for item in seen["environ"].split("\0") if item) == [
        "LC_ALL",
        "MALLOC_ARENA_MAX",
        "PATH",
    ]
    assert seen["cmdline"].split("\0")[1:3] == ["-I", "-B"]


def test_an_oversized_answer_is_discarded(tmp_path: Path) -> None:
    path = tmp_path / "a.pdf"
    path.write_bytes(CORPUS["pdf_multipage"].data)
    with pytest.raises(ExtractionError) as caught:
        run_in_sandbox("document", pdf_params(path), SandboxLimits(10, 10, 512 << 20, max_response_bytes=64))
    assert caught.value.code == "extract_failed"
    assert "more than 64 bytes" in caught.value.message


def test_an_unknown_task_is_an_error_not_a_crash(tmp_path: Path) -> None:
    with pytest.raises(ExtractionError) as caught:
        run_in_sandbox("format_disk", {}, SandboxLimits(10, 10, 512 << 20, 1 << 20))
    assert caught.value.code == "extract_failed"


def test_a_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ExtractionError) as caught:
        run_in_sandbox(
            "document", pdf_params(tmp_path / "gone.pdf"), SandboxLimits(10, 10, 512 << 20, 1 << 20)
        )
    assert caught.value.code == "extract_failed"


def test_concurrent_extractions_share_a_bounded_number_of_children(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each extraction reads a named pipe of its own, which the test fills only once the bound's number
    # of children have started: those children are alive together by construction, and the live ones
    # are counted at each start (sampling every few ms missed short-lived children under load).
    item = CORPUS["pdf_text"]
    bound = sandbox.MAX_CONCURRENT_CHILDREN
    # Two more at once than there are slots: enough to need the bound (each child costs a start).
    pipes = [tmp_path / f"{number}.pdf" for number in range(bound + 2)]
    for pipe in pipes:
        os.mkfifo(pipe)
    live_at_start: list[int] = []
    real_start_child = sandbox.start_child

    def start_child(command: list[str]) -> subprocess.Popen[bytes]:
        child = real_start_child(command)
        live_at_start.append(len(list(filter(_is_extraction_child, live_children()))))
        return child

    monkeypatch.setattr(sandbox, "start_child", start_child)
    unfed = list(pipes)

    def all_fed() -> bool:
        for pipe in list(unfed):
            if _fill_pipe_once_read(pipe, item.data):
                unfed.remove(pipe)
        return not unfed

    limits = SandboxLimits.of(default_extract_limits(), 1 << 20)
    with ThreadPoolExecutor(max_workers=len(pipes)) as pool:
        runs = [pool.submit(run_in_sandbox, "document", pdf_params(pipe), limits) for pipe in pipes]
        try:
            eventually(lambda: len(live_at_start) >= bound, within=30, what=f"{bound} children started")
        finally:  # fed even when the wait failed: no child is left blocked on its pipe
            eventually(all_fed, within=60, what="every extraction reading its pipe")
        results = [run.result() for run in runs]
    assert all(fragment in result["text"] for result in results for fragment in item.expect_text)
    assert len(live_at_start) == len(pipes)
    assert max(live_at_start) == bound, live_at_start


def _fill_pipe_once_read(pipe: Path, data: bytes) -> bool:
    """Write ``data`` into the named pipe and close it, if a reader has it open; False while none has."""
    try:  # fails (ENXIO) until the child opens the pipe to read it
        descriptor = os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        os.set_blocking(descriptor, True)
        with os.fdopen(descriptor, "wb", closefd=False) as stream:
            stream.write(data)
    finally:
        os.close(descriptor)
    return True


@pytest.mark.parametrize("megabytes", [8, 16, 32])
def test_a_child_that_cannot_even_start_reports_the_memory_limit(tmp_path: Path, megabytes: int) -> None:
    path = tmp_path / "a.pdf"
    path.write_bytes(CORPUS["pdf_text"].data)
    limits = SandboxLimits(10, 10, megabytes << 20, 1 << 20)
    with pytest.raises(ExtractionError) as caught:
        run_in_sandbox("document", pdf_params(path, memory_bytes=megabytes << 20), limits)
    assert (caught.value.code, caught.value.limit) == ("limit_exceeded", "memory")
    assert f"({megabytes} MB)" in caught.value.message

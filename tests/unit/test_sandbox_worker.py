"""The sandbox worker: one child extracts many documents, and a hostile one costs only itself (real child
processes, real files, the real parsers)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mail_imap_mcp.content.documents import ExtractionError, ExtractLimits, extract_text
from mail_imap_mcp.content.sandbox import SandboxLimits
from mail_imap_mcp.content.sandbox_worker import SandboxWorker
from tests.support.limits import default_extract_limits
from tests.support.mail.documents import CORPUS, deep_nesting_docx, operator_flood_pdf

pytestmark = pytest.mark.usefixtures("no_leftover_children")

DOCX = CORPUS["docx_tables"].content_type
#: CPU time of each document and the child's address space: the operator flood uses its CPU time up long
#: before the memory. The wall clock is far beyond both, so that on a busy machine (a CPU second may take
#: many seconds of wall clock) nothing ends by the clock instead (issue 47 item 20).
LIMITS = default_extract_limits(timeout_s=120.0, cpu_s=2.0, memory_bytes=192 << 20)
#: The memory bomb's: ten times the CPU time, so that only the memory ends it. With 2 s it reached the
#: memory limit within about a CPU-second on an idle machine, but two full runs side by side on a machine
#: shared with others (load 10-20, where the same work costs 2.5 times the CPU-seconds) ended it by CPU time.
BOMB_LIMITS = default_extract_limits(timeout_s=120.0, cpu_s=20.0, memory_bytes=192 << 20)
#: A document that waits for ever uses no CPU: only the wall clock ends it.
HANG_LIMITS = default_extract_limits(timeout_s=4.0, cpu_s=2.0, memory_bytes=192 << 20)


def good(tmp_path: Path, number: int) -> tuple[Path, str, str]:
    """A good document (a PDF or a DOCX in turn) and the text it starts with."""
    item = CORPUS["pdf_text" if number % 2 else "docx_tables"]
    path = tmp_path / f"good-{number}"
    path.write_bytes(item.data)
    return path, item.content_type, "Service Agreement" if number % 2 else "Quarterly report"


def test_a_hanging_a_memory_bomb_and_a_crashing_document_cost_only_themselves(tmp_path: Path) -> None:
    # Hanging: a named pipe nobody writes to, so the parser waits for its bytes for ever, using no CPU:
    # only the parent's clock can stop it. (extract_text reads a file's first bytes in the server before
    # it sends the file to the child, so it goes to the worker as extract_text would send it.)
    hanging = tmp_path / "hanging.pdf"
    os.mkfifo(hanging)
    bomb = tmp_path / "bomb.docx"
    bomb.write_bytes(deep_nesting_docx(1_000_000))
    # Crashing: the child dies by a signal in the middle of the batch (SIGXCPU, at its CPU limit).
    crashing = tmp_path / "flood.pdf"
    crashing.write_bytes(operator_flood_pdf())
    goods = [good(tmp_path, number) for number in range(8)]
    texts: list[str] = []
    with SandboxWorker() as worker:

        def read(path: Path, content_type: str, limits: ExtractLimits = LIMITS) -> str:
            return extract_text(path, content_type, None, limits, max_chars=200, worker=worker).text

        def failed(path: Path, content_type: str, limits: ExtractLimits = LIMITS) -> ExtractionError:
            with pytest.raises(ExtractionError) as caught:
                read(path, content_type, limits)
            return caught.value

        texts += [read(*goods[0][:2]), read(*goods[1][:2])]
        params = {"format": "pdf", "path": str(hanging), "offset": 0, "max_chars": 200, "hard_cap": 200}
        params["memory_bytes"] = HANG_LIMITS.memory_bytes
        with pytest.raises(ExtractionError) as hang:
            worker.run("document", params, SandboxLimits.of(HANG_LIMITS, 1 << 20))
        texts += [read(*goods[2][:2]), read(*goods[3][:2])]
        memory = failed(bomb, DOCX, BOMB_LIMITS)  # a child of its own: other limits
        texts += [read(*goods[4][:2]), read(*goods[5][:2])]
        crash = failed(crashing, "application/pdf")
        texts += [read(*goods[6][:2]), read(*goods[7][:2])]
        children = worker.children_started

    assert [text.startswith(start) for text, (_, _, start) in zip(texts, goods, strict=True)] == [True] * 8
    assert (hang.value.limit, "extract_timeout_s (4 s)" in hang.value.message) == ("extract_timeout_s", True)
    assert (memory.code, memory.limit) == ("limit_exceeded", "memory"), memory.message
    assert (crash.limit, "CPU time" in crash.message) == ("extract_timeout_s", True)
    # Each bad document ended by its own limit (the hang by the clock, the bomb by memory, the flood by
    # CPU time), never by another's, and the good ones around them were read.
    # One child for the first documents, then a fresh one for the bomb's own limits and after each document
    # that ended its child.
    assert children == 5


def test_one_child_reads_many_documents_and_a_fresh_one_takes_over_after_max_tasks(tmp_path: Path) -> None:
    goods = [good(tmp_path, number) for number in range(7)]
    with SandboxWorker() as worker:
        for path, content_type, start in goods:
            assert extract_text(
                path, content_type, None, LIMITS, max_chars=100, worker=worker
            ).text.startswith(start)
        assert worker.children_started == 1
    with SandboxWorker(max_tasks=3) as worker:
        for path, content_type, start in goods:
            assert extract_text(
                path, content_type, None, LIMITS, max_chars=100, worker=worker
            ).text.startswith(start)
        assert worker.children_started == 3


def test_an_ordinary_error_keeps_the_child(tmp_path: Path) -> None:
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(CORPUS["pdf_page_tree_cycle"].data)
    path, content_type, start = good(tmp_path, 1)
    with SandboxWorker() as worker:
        assert extract_text(path, content_type, None, LIMITS, max_chars=100, worker=worker).text.startswith(
            start
        )
        with pytest.raises(ExtractionError) as caught:
            extract_text(broken, "application/pdf", None, LIMITS, max_chars=100, worker=worker)
        assert caught.value.code == "extract_failed"
        assert extract_text(path, content_type, None, LIMITS, max_chars=100, worker=worker).text.startswith(
            start
        )
        assert worker.children_started == 1

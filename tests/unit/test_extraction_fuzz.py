"""Property tests: any bytes give a text window, an image or an ExtractionError, never anything else.

Mutated corpus files go through the real sandboxed child (few examples: each starts a process);
the in-process text reader and the window collector are driven with many examples.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mail_imap_mcp.content._window import TextCollector
from mail_imap_mcp.content.documents import ExtractedText, ExtractionError, extract_text
from mail_imap_mcp.content.images import PreparedImage, prepare_image
from mail_imap_mcp.content.sandbox_worker import SandboxWorker
from mail_imap_mcp.content.text import remove_unsafe_characters
from tests.support.limits import default_extract_limits, default_image_limits
from tests.support.mail.documents import CORPUS

pytestmark = pytest.mark.usefixtures("no_leftover_children")

LIMITS = default_extract_limits(timeout_s=10, cpu_s=10)
CHILD_SETTINGS = settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with a few bytes overwritten, a slice deleted or duplicated, or cut short."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "delete", "repeat", "truncate"]))
        position = draw(st.integers(0, max(len(out) - 1, 0)))
        if kind == "flip" and out:
            out[position] = draw(st.integers(0, 255))
        elif kind == "delete":
            del out[position : position + draw(st.integers(1, 64))]
        elif kind == "repeat":
            out[position:position] = out[position : position + draw(st.integers(1, 256))] * draw(
                st.integers(1, 50)
            )
        else:
            del out[position:]
    return bytes(out)


T = TypeVar("T")


def attempt(call: Callable[[], T]) -> T | ExtractionError:
    """The result of ``call``, or the ExtractionError it raised (any other exception propagates)."""
    try:
        return call()
    except ExtractionError as exc:
        return exc


def check_document(name: str, data: bytes, worker: SandboxWorker) -> None:
    item = CORPUS[name]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / item.filename
        path.write_bytes(data)
        outcome = attempt(
            lambda: extract_text(
                path, item.content_type, item.filename, LIMITS, max_chars=5000, worker=worker
            )
        )
        if isinstance(outcome, ExtractionError):
            assert outcome.code in ("limit_exceeded", "unsupported_format", "extract_failed", "encrypted")
            assert outcome.message
        else:
            assert isinstance(outcome, ExtractedText)
            assert remove_unsafe_characters(outcome.text) == outcome.text


@pytest.mark.parametrize(
    "name", ["pdf_multipage", "docx_tables", "xlsx_tables", "pptx_slides", "ods_budget", "ics_invite"]
)
def test_mutated_documents_never_escape_the_error_contract(name: str) -> None:
    # One serving child for the examples (a fresh one after any that ended it, as the index reads
    # attachments): a child of their own each cost a start apiece (the one-shot child reads the
    # corpus in test_documents.py).
    with SandboxWorker() as worker:

        @CHILD_SETTINGS
        @given(mutated(CORPUS[name].data))
        def run(data: bytes) -> None:
            check_document(name, data, worker)

        run()


@pytest.mark.parametrize("name", ["png_rgba", "gif_animated", "jpeg_photo"])
def test_mutated_images_never_escape_the_error_contract(name: str) -> None:
    item = CORPUS[name]

    @CHILD_SETTINGS
    @given(mutated(item.data))
    def run(data: bytes) -> None:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "image"
            path.write_bytes(data)
            outcome = attempt(
                lambda: prepare_image(path, item.content_type, default_image_limits(timeout_s=10, cpu_s=10))
            )
            if isinstance(outcome, ExtractionError):
                assert outcome.code in ("limit_exceeded", "unsupported_format", "extract_failed")
            else:
                assert isinstance(outcome, PreparedImage)
                assert len(outcome.data) <= default_image_limits().max_output_bytes

    run()


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet=st.characters(codec="utf-8"), max_size=400),
    chunk=st.integers(1, 50),
    size=st.integers(1, 60),
)
def test_windows_of_any_text_concatenate_to_the_whole(text: str, chunk: int, size: int) -> None:
    def collect(offset: int, max_chars: int) -> dict[str, object]:
        collector = TextCollector(offset=offset, max_chars=max_chars, hard_cap=10_000)
        complete = True
        for start in range(0, len(text), chunk):
            if not collector.add(text[start : start + chunk]):
                complete = False
                break
        return collector.finish(complete=complete)

    whole = collect(0, 10_000)
    assert whole["truncated"] is False
    pieces = []
    offset = 0
    for _ in range(1000):
        window = collect(offset, size)
        assert isinstance(window["text"], str)
        pieces.append(window["text"])
        if window["next_offset"] is None:
            assert window["truncated"] is False
            break
        assert window["next_offset"] > offset
        offset = window["next_offset"]  # type: ignore[assignment]
    assert "".join(pieces) == whole["text"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.binary(max_size=3000),
    charset=st.sampled_from(["", "utf-8", "latin-1", "utf-16", "shift_jis", "x-bogus", "base64"]),
)
def test_any_bytes_read_as_text_give_clean_text(tmp_path: Path, data: bytes, charset: str) -> None:
    path = tmp_path / "any.txt"
    path.write_bytes(data)
    content_type = f"text/plain; charset={charset}" if charset else "text/plain"
    outcome = attempt(lambda: extract_text(path, content_type, None, LIMITS, max_chars=100_000))
    if isinstance(outcome, ExtractionError):  # bytes that happen to start like a PDF or a calendar
        assert outcome.code in ("extract_failed", "limit_exceeded", "unsupported_format", "encrypted")
        return
    result = outcome
    if result.format == "text":
        assert not any(ord(ch) < 32 and ch not in "\t\n" for ch in result.text)
        assert "\u202e" not in result.text

"""Attachment text extraction on the built corpus (pure: no IMAP server, real child processes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mail_imap_mcp.content.documents import (
    ExtractedText,
    ExtractionError,
    ExtractLimits,
    detect_format,
    extract_text,
)
from mail_imap_mcp.content.sandbox_worker import SandboxWorker
from tests.support.limits import default_extract_limits
from tests.support.mail.documents import (
    CORPUS,
    Document,
    documents,
    docx_bytes,
    large_payload,
    operator_flood_pdf,
    zip_bytes,
)

LIMITS = default_extract_limits()
pytestmark = pytest.mark.usefixtures("no_leftover_children")


def write(tmp_path: Path, item: Document) -> Path:
    path = tmp_path / item.name
    path.write_bytes(item.data)
    return path


def read(path: Path, item: Document, *, limits: ExtractLimits = LIMITS, **window: int) -> ExtractedText:
    window.setdefault("max_chars", 100_000)
    return extract_text(path, item.content_type, item.filename, limits, **window)


@pytest.mark.parametrize("item", documents(), ids=lambda item: item.name)
def test_corpus_item_gives_its_text_or_its_error(tmp_path: Path, item: Document) -> None:
    path = write(tmp_path, item)
    if item.expect_error:
        with pytest.raises(ExtractionError) as caught:
            read(path, item)
        assert caught.value.code == item.expect_error, caught.value.message
        if item.expect_limit:
            assert caught.value.limit == item.expect_limit
        assert caught.value.message
    else:
        result = read(path, item)
        position = 0
        for fragment in item.expect_text:
            found = result.text.find(fragment, position)
            assert found >= 0, f"{fragment!r} not found in order in {result.text!r}"
            position = found + len(fragment)
        if item.expect_format:
            assert result.format == item.expect_format
        if item.expect_pages is not None:
            assert result.pages == item.expect_pages
        if item.expect_note:
            assert any(item.expect_note in note for note in result.notes), result.notes
        assert result.truncated is False
        assert result.total_chars == len(result.text)
    for fragment in item.expect_absent:
        assert fragment not in (getattr(caught.value, "message", "") if item.expect_error else result.text)


# Windows of a parsed format cost one child each: fewer, larger ones there.
WINDOWS = [(name, size) for name in ("text_hostile", "csv_expenses") for size in (1, 7, 50)] + [
    ("pdf_multipage", 29),
    ("pdf_multipage", 80),
    ("pdf_text", 60),
    ("docx_tables", 25),
    ("xlsx_tables", 30),
]


@pytest.mark.parametrize(("name", "size"), WINDOWS)
def test_windows_concatenate_to_the_whole_text(tmp_path: Path, name: str, size: int) -> None:
    item = CORPUS[name]
    path = write(tmp_path, item)
    whole = read(path, item)
    pieces: list[str] = []
    offset = 0
    # The windows from one serving child (as the index reads), the whole from a child of its own: both
    # ways give the same text (a child apiece cost a start per window).
    with SandboxWorker() as worker:
        while True:
            window = extract_text(
                path, item.content_type, item.filename, LIMITS, offset=offset, max_chars=size, worker=worker
            )
            assert window.offset == offset
            assert len(window.text) <= size
            pieces.append(window.text)
            if not window.truncated:
                assert window.next_offset is None
                break
            assert window.next_offset == offset + len(window.text)
            offset = window.next_offset
    assert "".join(pieces) == whole.text


def test_offset_past_the_end_gives_an_empty_window(tmp_path: Path) -> None:
    item = CORPUS["pdf_text"]
    result = read(write(tmp_path, item), item, offset=10_000, max_chars=10)
    assert (result.text, result.truncated, result.next_offset) == ("", False, None)
    assert result.total_chars == 158


def test_a_window_never_splits_a_combining_sequence(tmp_path: Path) -> None:
    path = tmp_path / "accents.txt"
    path.write_text("e\u0301" * 10)
    first = extract_text(path, "text/plain", None, LIMITS, max_chars=3)
    assert first.text == "e\u0301"
    assert first.next_offset == 2


def test_the_hard_character_cap_cuts_and_says_so(tmp_path: Path) -> None:
    item = CORPUS["pdf_multipage"]
    limits = default_extract_limits(max_chars=60)
    result = read(write(tmp_path, item), item, limits=limits, max_chars=1000)
    assert len(result.text) == 60
    assert result.truncated is True
    assert result.total_chars is None
    assert any("60 characters" in note for note in result.notes)


def test_an_attachment_over_max_attachment_bytes_is_refused_before_parsing(tmp_path: Path) -> None:
    item = CORPUS["pdf_flate_bomb"]
    limits = default_extract_limits(max_input_bytes=512 * 1024)
    with pytest.raises(ExtractionError) as caught:
        read(write(tmp_path, item), item, limits=limits)
    assert caught.value.code == "limit_exceeded"
    assert caught.value.limit == "max_attachment_bytes"
    assert "max_attachment_bytes (512 KB)" in caught.value.message


def test_a_slow_document_is_stopped_at_the_wall_limit(tmp_path: Path) -> None:
    path = tmp_path / "flood.pdf"
    path.write_bytes(operator_flood_pdf())
    with pytest.raises(ExtractionError) as caught:
        extract_text(path, "application/pdf", None, default_extract_limits(timeout_s=1.0), max_chars=100)
    # Which limit ended it, from the error itself (how fast is scripts/bench's): the wall limit, not
    # the memory limit nor the child's CPU time.
    assert (caught.value.code, caught.value.limit) == ("limit_exceeded", "extract_timeout_s")
    assert "extract_timeout_s (1 s)" in caught.value.message and "CPU time" not in caught.value.message
    # The server process goes on: the next extraction works.
    item = CORPUS["pdf_text"]
    assert "Contract total" in read(write(tmp_path, item), item).text


def test_the_cpu_limit_stops_a_busy_child(tmp_path: Path) -> None:
    path = tmp_path / "flood.pdf"
    path.write_bytes(operator_flood_pdf())
    with pytest.raises(ExtractionError) as caught:
        extract_text(
            path, "application/pdf", None, default_extract_limits(cpu_s=1.0, timeout_s=30), max_chars=100
        )
    assert caught.value.limit == "extract_timeout_s"
    assert "CPU time" in caught.value.message


def test_a_30_mb_text_attachment_is_read_in_bounded_windows(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(large_payload())
    first = extract_text(
        path, "text/plain", "big.txt", default_extract_limits(max_input_bytes=40 << 20), max_chars=1000
    )
    assert first.truncated is True
    assert first.total_chars is None
    assert first.text.startswith("00000000 the quick brown fox")
    with pytest.raises(ExtractionError) as caught:
        extract_text(
            path, "text/plain", "big.txt", default_extract_limits(max_input_bytes=25 << 20), max_chars=1000
        )
    assert caught.value.limit == "max_attachment_bytes"


@pytest.mark.parametrize(
    ("content_type", "filename", "head", "expected"),
    [
        ("application/octet-stream", "x.bin", b"%PDF-1.7\n", "pdf"),
        ("text/plain", "notes.txt", b"%PDF-1.4\n", "pdf"),
        ("application/pdf", "x.pdf", b"\x89PNG\r\n\x1a\n", None),
        ("text/plain", "photo.txt", b"\xff\xd8\xff\xe0", None),
        ("text/html", "page.html", b"<html>", None),
        ("message/rfc822", None, b"From: a@b\r\n", None),
        ("application/octet-stream", "invite.ics", b"BEGIN:VCALENDAR\r\n", "calendar"),
        ("text/plain", None, b"\xef\xbb\xbfBEGIN:VCALENDAR\r\n", "calendar"),
        ("application/octet-stream", "data.csv", b"a,b\n", "csv"),
        ("application/octet-stream", "data.bin", b"a,b\n", None),
        ("text/csv; charset=utf-8", None, b"a,b\n", "csv"),
        ("TEXT/PLAIN", None, b"hello", "text"),
        ("application/json", None, b"{}", "text"),
        ("application/octet-stream", "report.docx", b"PK\x03\x04rest", "docx"),
        ("application/vnd.ms-excel.sheet.macroEnabled.12", None, b"PK\x03\x04", "xlsx"),
        ("application/octet-stream", "a.zip", b"PK\x03\x04", None),
        ("application/octet-stream", "report.docx", b"not a zip", None),
        ("application/msword", "old.doc", b"\xd0\xcf\x11\xe0", None),
    ],
)
def test_detect_format(content_type: str, filename: str | None, head: bytes, expected: str | None) -> None:
    assert detect_format(content_type, filename, head) == expected


def test_odf_is_recognised_by_its_mimetype_member() -> None:
    data = CORPUS["ods_budget"].data
    assert detect_format("application/octet-stream", None, data[:4096]) == "ods"


def test_an_image_is_not_a_text_document(tmp_path: Path) -> None:
    item = CORPUS["png_rgba"]
    with pytest.raises(ExtractionError) as caught:
        read(write(tmp_path, item), item)
    assert caught.value.code == "unsupported_format"
    assert "Fetch its bytes" in caught.value.message


def test_bad_window_arguments_are_rejected(tmp_path: Path) -> None:
    item = CORPUS["text_latin1"]
    path = write(tmp_path, item)
    with pytest.raises(ValueError, match="offset"):
        read(path, item, offset=-1)
    with pytest.raises(ValueError, match="max_chars"):
        read(path, item, max_chars=0)


def extract_bytes(
    tmp_path: Path, data: bytes, filename: str, limits: ExtractLimits = LIMITS
) -> ExtractedText:
    path = tmp_path / filename
    path.write_bytes(data)
    return extract_text(path, "application/octet-stream", filename, limits, max_chars=10_000)


def test_an_archive_with_too_many_members_is_refused(tmp_path: Path) -> None:
    members: dict[str, str | bytes] = {f"word/media/{i}.txt": "x" for i in range(30)}
    members["word/document.xml"] = "<w:document/>"
    with pytest.raises(ExtractionError) as caught:
        extract_bytes(
            tmp_path, zip_bytes(members), "many.docx", default_extract_limits(max_archive_members=20)
        )
    assert (caught.value.code, caught.value.limit) == ("limit_exceeded", "archive_members")


def test_an_extreme_compression_ratio_is_refused_before_inflating(tmp_path: Path) -> None:
    data = docx_bytes("<w:p><w:r><w:t>" + " " * (8 << 20) + "x</w:t></w:r></w:p>")
    with pytest.raises(ExtractionError) as caught:
        extract_bytes(tmp_path, data, "spaces.docx")
    assert (caught.value.code, caught.value.limit) == ("limit_exceeded", "compression_ratio")
    # The same part is read when the ratio cap allows it.
    result = extract_bytes(
        tmp_path, data, "spaces.docx", default_extract_limits(max_compression_ratio=100_000)
    )
    assert (result.format, result.truncated, result.next_offset) == ("docx", True, 10_000)


def test_the_unpacked_total_is_capped_across_members(tmp_path: Path) -> None:
    data = docx_bytes("<w:p><w:r><w:t>" + "word " * 60_000 + "</w:t></w:r></w:p>")
    with pytest.raises(ExtractionError) as caught:
        extract_bytes(tmp_path, data, "big.docx", default_extract_limits(max_unpacked_bytes=100_000))
    assert (caught.value.code, caught.value.limit) == ("limit_exceeded", "archive_unpacked_bytes")


def test_a_zip_that_is_no_office_document_is_unsupported(tmp_path: Path) -> None:
    with pytest.raises(ExtractionError) as caught:
        extract_bytes(tmp_path, zip_bytes({"readme.txt": "hello"}), "fake.docx")
    assert caught.value.code == "unsupported_format"


def test_a_truncated_office_file_fails_cleanly(tmp_path: Path) -> None:
    data = CORPUS["docx_tables"].data
    with pytest.raises(ExtractionError) as caught:
        extract_bytes(tmp_path, data[: len(data) // 2], "cut.docx")
    assert caught.value.code == "extract_failed"


def test_calendar_events_keep_time_zones_recurrence_and_people(tmp_path: Path) -> None:
    item = CORPUS["ics_invite"]
    result = read(write(tmp_path, item), item)
    assert result.events is not None
    weekly, closed, call = result.events
    assert (weekly.start, weekly.end, weekly.timezone) == (
        "2026-12-07T10:00:00+01:00",
        "2026-12-07T11:00:00+01:00",
        "Europe/Berlin",
    )
    assert weekly.recurrence == "FREQ=WEEKLY;COUNT=10;BYDAY=MO"
    assert weekly.location == "Room 4.12, Berlin office"
    assert weekly.organizer is not None
    assert (weekly.organizer.name, weekly.organizer.address) == ("Ana Example", "ana@example.com")
    assert [(a.address, a.role, a.partstat) for a in weekly.attendees] == [
        ("bo@example.com", "REQ-PARTICIPANT", "NEEDS-ACTION"),
        ("cy@example.org", "OPT-PARTICIPANT", "ACCEPTED"),
    ]
    assert weekly.description == "Agenda: status, risks\nBring the Q4 numbers."
    assert (closed.all_day, closed.start, closed.end) == (True, "2026-12-24", "2026-12-26")
    assert "When: 2026-12-24 to 2026-12-25 (all day)" in result.text
    assert (call.end, call.timezone) == ("2026-12-08T16:30:00+00:00", "UTC")  # from DURATION
    assert result.text.startswith("Calendar request: an invitation")


def ics(tmp_path: Path, body: str) -> ExtractedText:
    path = tmp_path / "x.ics"
    path.write_text("BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:1\r\n" + body + "END:VEVENT\r\nEND:VCALENDAR\r\n")
    return extract_text(path, "text/calendar", "x.ics", LIMITS, max_chars=5000)


def test_calendar_time_zone_edge_cases_are_said(tmp_path: Path) -> None:
    unknown = ics(tmp_path, "DTSTART;TZID=Custom/Nowhere:20261207T100000\r\nSUMMARY:odd\r\n")
    assert unknown.events is not None
    assert (unknown.events[0].start, unknown.events[0].timezone) == ("2026-12-07T10:00:00", "Custom/Nowhere")
    assert any("'Custom/Nowhere' is unknown" in note for note in unknown.notes)
    iana = ics(tmp_path, "DTSTART;TZID=America/New_York:20260707T100000\r\nSUMMARY:ny\r\n")
    assert iana.events is not None
    assert iana.events[0].start == "2026-07-07T10:00:00-04:00"
    floating = ics(tmp_path, "DTSTART:20260707T100000\r\nSUMMARY:float\r\n")
    assert any("floating time" in note for note in floating.notes)
    broken = ics(tmp_path, "DTSTART:2026-99-99\r\nSUMMARY:bad date\r\n")
    assert broken.events is not None
    assert broken.events[0].summary == "bad date"
    assert broken.events[0].start is None


def test_calendar_text_is_cleaned_and_bounded(tmp_path: Path) -> None:
    result = ics(tmp_path, "SUMMARY:Pay\u202eevil\u202c now\x1b[31m\r\nDESCRIPTION:" + "x" * 5000 + "\r\n")
    assert result.events is not None
    event = result.events[0]
    assert event.summary == "Payevil now[31m"
    assert event.description is not None
    assert len(event.description) < 2100
    assert event.description.endswith("[...]")


def test_a_malformed_calendar_fails_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "bad.ics"
    path.write_bytes(b"BEGIN:VCALENDAR\r\n\x00\x01garbage;;;:::\r\nEND:VCALENDAR\r\n")
    with pytest.raises(ExtractionError) as caught:
        extract_text(path, "text/calendar", None, LIMITS, max_chars=100)
    assert caught.value.code == "extract_failed"


def test_a_word_text_box_is_read_once(tmp_path: Path) -> None:
    item = CORPUS["docx_tables"]
    assert read(write(tmp_path, item), item).text.count("Boxed note") == 1


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32", "utf-8-sig"])
def test_a_byte_order_mark_decides_the_encoding(tmp_path: Path, encoding: str) -> None:
    text = "Grüße, 東京 ✓"
    data = text.encode(encoding)
    if encoding == "utf-16-be":
        data = b"\xfe\xff" + data
    path = tmp_path / "bom.txt"
    path.write_bytes(data)
    result = extract_text(path, "text/plain; charset=us-ascii", None, LIMITS, max_chars=100)
    assert (result.text, result.notes) == (text, [])


def test_error_messages_quoting_the_document_are_cleaned(tmp_path: Path) -> None:
    path = tmp_path / "bad.ics"
    path.write_bytes(b"BEGIN:VCALENDAR\r\n\x01garbage\x1b[2J\xe2\x80\xaeevil;;;:::\r\nEND:VCALENDAR\r\n")
    with pytest.raises(ExtractionError) as caught:
        extract_text(path, "text/calendar", None, LIMITS, max_chars=100)
    assert "garbage[2J" in caught.value.message  # quoted, without its ESC
    assert "\x1b" not in caught.value.message
    assert "\u202e" not in caught.value.message

"""Reading, saving and extracting attachments (services/attachment_fetch.py, attachment_save.py,
attachment_text.py) on mail kept in memory (tests/support/mail/memory_mail.py): the windows and their bounds,
the limits named as the settings that set them (refused before the bytes are read where the size says
so), the saved file's name and folder, and which attachments get their text in one call."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import cast

import pytest

from mail_imap_mcp import mime
from mail_imap_mcp.call import Call
from mail_imap_mcp.local_files import FileTooLarge
from mail_imap_mcp.mail.attachment_errors import AttachmentTooLarge, InvalidPartId, WindowBeyondLimit
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.part_errors import PartGone
from mail_imap_mcp.mail.roles import INBOX
from mail_imap_mcp.mail.step_failure import StepFailed
from mail_imap_mcp.mime.parts import make_part
from mail_imap_mcp.services.attachment_fetch import (
    attachment_blob,
    byte_window,
    estimated_size,
    spooled_part,
    too_large,
    within,
)
from mail_imap_mcp.services.attachment_save import save_attachment, wanted_name
from mail_imap_mcp.services.attachment_text import MAX_EXTRACTED_ATTACHMENTS, extract_attachment_texts
from tests.support.mail.memory_mail import MemoryCall, MemoryMail

KIB = 1024
#: The smallest a ``[server]`` byte limit may be.
LIMIT = 64 * KIB


def attached(*parts: tuple[str, str | None, bytes]) -> bytes:
    """A message with a body text and ``parts`` (content type, file name, bytes), each base64."""
    lines = [
        b"From: <ann@example.org>\r\nTo: <bob@example.org>\r\nSubject: Files\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: multipart/mixed; boundary=cut\r\n\r\n--cut\r\nContent-Type: text/plain\r\n\r\nSee.\r\n"
    ]
    for content_type, filename, data in parts:
        named = f"; filename={filename}" if filename else ""
        lines.append(
            f"--cut\r\nContent-Type: {content_type}\r\nContent-Disposition: attachment{named}\r\n"
            "Content-Transfer-Encoding: base64\r\n\r\n".encode()
            + base64.encodebytes(data).replace(b"\n", b"\r\n")
        )
    return b"".join(lines) + b"--cut--\r\n"


SHEET = bytes(range(256)) * 400  # 100 KiB: beyond the smallest limit
SMALL = b"%PDF-1.4 a small document\n"


def account(*parts: tuple[str, str | None, bytes], **server: object) -> tuple[MemoryCall, MessageRef]:
    mail = MemoryMail()
    made = mail.append(INBOX, attached(*parts))
    return MemoryCall({"default": mail}, server=server), MessageRef(
        "default", INBOX, made.uidvalidity, made.uid
    )


def as_call(call: MemoryCall) -> Call:
    return cast(Call, call)


def test_a_window_is_the_decoded_bytes_at_its_offset() -> None:
    call, ref = account(("application/octet-stream", "sheet.bin", SHEET))
    data, read = byte_window(as_call(call), ref, "2", offset_bytes=1000, max_bytes=2000)
    assert data == SHEET[1000:3000]
    assert (read.written, read.complete) == (2000, False)


def test_the_last_window_says_the_attachment_ended_inside_it() -> None:
    call, ref = account(("application/octet-stream", "sheet.bin", SHEET))
    data, read = byte_window(as_call(call), ref, "2", offset_bytes=len(SHEET) - 10, max_bytes=100)
    assert (data, read.complete, read.decoded_end) == (SHEET[-10:], True, len(SHEET))


def test_a_window_is_never_wider_than_max_raw_bytes() -> None:
    call, ref = account(("application/octet-stream", "sheet.bin", SHEET), max_raw_bytes=2 * KIB)
    data, _ = byte_window(as_call(call), ref, "2", offset_bytes=0, max_bytes=50 * KIB)
    assert data == SHEET[: 2 * KIB]


def test_a_window_ending_past_max_attachment_bytes_is_refused_before_the_mail_is_reached() -> None:
    call, ref = account(("application/octet-stream", "sheet.bin", SHEET), max_attachment_bytes=LIMIT)
    with pytest.raises(WindowBeyondLimit) as refused:
        byte_window(as_call(call), ref, "2", offset_bytes=LIMIT - 10, max_bytes=20)
    assert (refused.value.end, refused.value.limit) == (LIMIT + 10, LIMIT)
    assert call.reached == 0


def test_a_window_ending_at_max_attachment_bytes_is_read() -> None:
    call, ref = account(("application/octet-stream", "sheet.bin", SHEET), max_attachment_bytes=LIMIT)
    data, _ = byte_window(as_call(call), ref, "2", offset_bytes=LIMIT - 10, max_bytes=10)
    assert data == SHEET[LIMIT - 10 : LIMIT]


def test_a_resource_is_the_whole_attachment_with_its_declared_type() -> None:
    call, ref = account(("application/pdf", "small.pdf", SMALL))
    assert attachment_blob(as_call(call), ref.message_id, "2") == (SMALL, "application/pdf")


def test_a_resource_beyond_max_resource_bytes_is_refused_naming_it() -> None:
    call, ref = account(("application/octet-stream", "sheet.bin", SHEET), max_resource_bytes=LIMIT)
    with pytest.raises(AttachmentTooLarge) as refused:
        attachment_blob(as_call(call), ref.message_id, "2")
    assert (refused.value.setting, refused.value.limit, refused.value.exact) == (
        "max_resource_bytes",
        LIMIT,
        False,
    )


@pytest.mark.parametrize("part_id", ["0", "2.", "HEADER", "1.MIME", ""])
def test_a_malformed_part_id_is_refused_as_such(part_id: str) -> None:
    call, ref = account(("application/pdf", "small.pdf", SMALL))
    with pytest.raises(InvalidPartId):
        attachment_blob(as_call(call), ref.message_id, part_id)


def test_the_size_estimate_of_a_base64_part_is_near_its_decoded_size() -> None:
    call, ref = account(("application/octet-stream", "sheet.bin", SHEET))
    with spooled_part(call.mail("default"), ref, "2", call.config.server) as spooled:
        estimate = estimated_size(spooled.part)
    assert abs(estimate - len(SHEET)) < len(SHEET) * 0.02


def test_an_accept_within_a_limit_refuses_by_the_size_before_writing() -> None:
    call, ref = account(("application/octet-stream", "sheet.bin", SHEET))
    spooling = spooled_part(call.mail("default"), ref, "2", call.config.server, accept=within(LIMIT, "max_x"))
    with pytest.raises(AttachmentTooLarge) as refused, spooling:
        pass
    assert (refused.value.setting, refused.value.size < len(SHEET) * 1.02) == ("max_x", True)


def test_too_large_with_the_decoded_size_says_it_is_exact() -> None:
    part = make_part("2", "application/pdf", {}, "base64", 4000, "attachment", {}, None)
    assert (too_large(part, 10, "s", size=3000).size, too_large(part, 10, "s", size=3000).exact) == (
        3000,
        True,
    )
    assert too_large(part, 10, "s").exact is False


def test_a_spooled_attachment_is_in_a_file_removed_afterwards() -> None:
    call, ref = account(("application/octet-stream", "sheet.bin", SHEET))
    with spooled_part(call.mail("default"), ref, "2", call.config.server) as spooled:
        path = spooled.path
        assert path.read_bytes() == SHEET
    assert not path.exists()


def test_an_attachment_is_saved_under_the_name_its_sender_gave(tmp_path: Path) -> None:
    call, ref = account(("application/pdf", "report.pdf", SMALL))
    saved = save_attachment(call.mail("default"), ref, "2", call.config.server, tmp_path)
    assert (saved.file.path, saved.file.path.read_bytes(), saved.file.size) == (
        tmp_path / "report.pdf",
        SMALL,
        len(SMALL),
    )


def test_a_name_taken_in_the_folder_is_never_written_over(tmp_path: Path) -> None:
    (tmp_path / "report.pdf").write_bytes(b"mine")
    call, ref = account(("application/pdf", "report.pdf", SMALL))
    saved = save_attachment(call.mail("default"), ref, "2", call.config.server, tmp_path)
    assert (tmp_path / "report.pdf").read_bytes() == b"mine"
    assert saved.file.path.parent == tmp_path and saved.file.path.read_bytes() == SMALL


def test_an_attachment_without_a_name_is_named_by_its_type(tmp_path: Path) -> None:
    call, ref = account(("application/pdf", None, SMALL))
    saved = save_attachment(call.mail("default"), ref, "2", call.config.server, tmp_path)
    assert saved.file.path.name == "attachment.pdf"


@pytest.mark.parametrize(
    ("filename", "content_type", "name"),
    [
        ("a.txt", "application/pdf", "a.txt"),
        (None, "application/pdf", "attachment.pdf"),
        (None, "x/unknown", "attachment"),
    ],
)
def test_the_wanted_name_is_the_senders_else_the_types(
    filename: str | None, content_type: str, name: str
) -> None:
    assert (
        wanted_name(
            make_part(
                "2",
                content_type,
                {},
                "7bit",
                10,
                "attachment",
                {"filename": filename} if filename else {},
                None,
            )
        )
        == name
    )


def test_an_attachment_beyond_max_attachment_bytes_is_not_saved(tmp_path: Path) -> None:
    call, ref = account(("application/octet-stream", "sheet.bin", SHEET), max_attachment_bytes=LIMIT)
    with pytest.raises((AttachmentTooLarge, FileTooLarge)):
        save_attachment(call.mail("default"), ref, "2", call.config.server, tmp_path)
    assert list(tmp_path.iterdir()) == []


def html(text: str) -> bytes:
    return f"<html><body><p>{text}</p></body></html>".encode()


def attachments_of(call: MemoryCall, ref: MessageRef) -> list[mime.Part]:
    raw = call.mail("default").raw(ref.mailbox, ref.uid)
    assert raw is not None
    return mime.attachment_parts([leaf for leaf, _ in mime.message_leaves(raw)])


def test_each_document_attachment_gets_its_text_by_part_id() -> None:
    call, ref = account(("text/html", "a.html", html("First")), ("text/html", "b.html", html("Second")))
    warnings: list[str] = []
    texts, issues = extract_attachment_texts(
        as_call(call), call.mail("default"), ref, attachments_of(call, ref), 1000, warnings
    )
    assert ({k: v.text.strip() for k, v in texts.items()}, issues, warnings) == (
        {"2": "First", "3": "Second"},
        [],
        [],
    )


def test_an_images_text_is_not_extracted() -> None:
    call, ref = account(("image/png", "a.png", b"\x89PNG\r\n\x1a\n"), ("text/html", "b.html", html("Words")))
    texts, issues = extract_attachment_texts(
        as_call(call), call.mail("default"), ref, attachments_of(call, ref), 1000, []
    )
    assert (sorted(texts), issues) == (["3"], [])


def test_a_text_is_cut_at_the_characters_asked_for_and_says_so() -> None:
    call, ref = account(("text/html", "a.html", html("x" * 500)))
    texts, _ = extract_attachment_texts(
        as_call(call), call.mail("default"), ref, attachments_of(call, ref), 100, []
    )
    assert (len(texts["2"].text), texts["2"].truncated) == (100, True)


def test_past_the_most_attachments_of_one_call_the_rest_are_named_in_a_warning() -> None:
    count = MAX_EXTRACTED_ATTACHMENTS + 2
    call, ref = account(*[("text/html", f"{i}.html", html(f"Page {i}")) for i in range(count)])
    warnings: list[str] = []
    texts, _ = extract_attachment_texts(
        as_call(call), call.mail("default"), ref, attachments_of(call, ref), 1000, warnings
    )
    rest = [str(i + 2) for i in range(MAX_EXTRACTED_ATTACHMENTS, count)]
    assert len(texts) == MAX_EXTRACTED_ATTACHMENTS
    assert warnings == [
        f"Text of 2 more attachment(s) not extracted in this call (part_id {', '.join(rest)}); read them "
        "with imap_get_attachment."
    ]


def test_a_message_gone_meanwhile_is_an_issue_per_attachment_and_no_failure() -> None:
    call, ref = account(("text/html", "a.html", html("First")), ("text/html", "b.html", html("Second")))
    parts = attachments_of(call, ref)
    call.mail("default").expunge(INBOX, [ref.uid])
    texts, issues = extract_attachment_texts(as_call(call), call.mail("default"), ref, parts, 1000, [])
    assert texts == {}
    assert [(i.stage, type(i.error), i.uid) for i in issues if isinstance(i, StepFailed)] == [
        ("extract_text", PartGone, ref.uid)
    ] * 2

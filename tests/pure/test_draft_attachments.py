"""Attachments by reference as a draft takes them (services/draft_attachments.py) from mail kept in memory
(tests/support/mail/memory_mail.py): a part of a message decoded into a file with its name, type and source in
words; refused, naming the item, where the part is no attachment, not there, or over max_attachment_bytes;
the draft refused before a part is read where it could not take it. The same on real servers through the
MCP client: tests/integration/drafts_and_sending/test_draft_attachments.py and test_hostile_drafts.py."""

from __future__ import annotations

import base64
from contextlib import ExitStack
from typing import cast

import pytest

from mail_imap_mcp.call import Call
from mail_imap_mcp.mail.attachment_errors import AttachmentTooLarge, InvalidPartId
from mail_imap_mcp.mail.draft_errors import AttachmentRefused, DraftTooLarge, ForeignMessage
from mail_imap_mcp.mail.ids import InvalidMessageId, MessageRef
from mail_imap_mcp.mail.part_errors import NotAnAttachment, PartGone, PartNotFound
from mail_imap_mcp.mail.roles import INBOX
from mail_imap_mcp.services.draft_attachments import KEPT, SizeLimit, take_attachments
from tests.support.mail.memory_mail import MemoryCall, MemoryMail

SHEET = bytes(range(256)) * 40


def _message(sheet: bytes = SHEET) -> bytes:
    encoded = base64.encodebytes(sheet).replace(b"\n", b"\r\n")
    return (
        b'From: "Kim Lee" <kim@example.org>\r\nTo: <me@example.org>\r\nSubject: Figures\r\n'
        b'MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n'
        b"--b\r\nContent-Type: text/plain\r\n\r\nThe figures.\r\n"
        b'--b\r\nContent-Type: application/vnd.ms-excel; name="q3.xls"\r\n'
        b'Content-Disposition: attachment; filename="q3.xls"\r\nContent-ID: <sheet@example.org>\r\n'
        b"Content-Transfer-Encoding: base64\r\n\r\n" + encoded + b"--b--\r\n"
    )


def _stored(raw: bytes | None = None) -> tuple[MemoryCall, MessageRef]:
    mail = MemoryMail()
    made = mail.append(INBOX, raw or _message())
    call = MemoryCall({"default": mail}, server={"max_attachment_bytes": 65_536})
    return call, MessageRef("default", INBOX, made.uidvalidity, made.uid)


def _refused(call: MemoryCall, item: str) -> AttachmentRefused:
    with ExitStack() as stack, pytest.raises(AttachmentRefused) as refused:
        take_attachments(cast(Call, call), "default", [item], stack)
    assert refused.value.parameter == "attachments[0]"
    return refused.value


def test_a_part_is_attached_decoded_with_its_name_type_and_source() -> None:
    call, ref = _stored()
    with ExitStack() as stack:
        (sheet,) = take_attachments(cast(Call, call), "default", [f"{ref.message_id}#2"], stack)
        with sheet.read() as data:
            assert data.read() == SHEET
    assert (sheet.name, sheet.content_type, sheet.size) == ("q3.xls", "application/vnd.ms-excel", len(SHEET))
    assert (sheet.disposition, sheet.encoding, sheet.content_id) == (
        "attachment",
        "base64",
        "<sheet@example.org>",
    )
    assert sheet.source == "from the message 'Figures' of Kim Lee"


def test_the_body_text_or_a_part_the_message_lacks_is_refused_naming_the_item() -> None:
    call, ref = _stored()
    assert isinstance(_refused(call, f"{ref.message_id}#1").cause, NotAnAttachment)
    assert isinstance(_refused(call, f"{ref.message_id}#7").cause, PartNotFound)
    assert isinstance(_refused(call, f"{ref.message_id}#2.x").cause, InvalidPartId)


def test_a_part_of_a_message_gone_is_refused_before_it_is_read() -> None:
    call, ref = _stored()
    call.accounts["default"].expunge(INBOX, [ref.uid])
    assert isinstance(_refused(call, f"{ref.message_id}#2").cause, PartGone)


def test_a_part_over_max_attachment_bytes_is_refused_naming_the_setting() -> None:
    call, ref = _stored(_message(bytes(range(256)) * 400))
    cause = _refused(call, f"{ref.message_id}#2").cause
    assert isinstance(cause, AttachmentTooLarge) and cause.limit == 65_536


def test_a_draft_that_could_not_take_the_part_is_refused_before_it_is_read() -> None:
    call, ref = _stored()
    with ExitStack() as stack, pytest.raises(DraftTooLarge) as refused:
        take_attachments(
            cast(Call, call), "default", [f"{ref.message_id}#2"], stack, within=SizeLimit(5_000, "the limit")
        )
    assert (refused.value.limit, refused.value.limited_by) == (5_000, "the limit")


def test_a_part_of_another_accounts_message_is_refused_naming_both() -> None:
    other = MemoryMail()
    made = other.append(INBOX, _message())
    call = MemoryCall({"default": MemoryMail(), "work": other})
    item = f"{MessageRef('work', INBOX, made.uidvalidity, made.uid).message_id}#2"
    with ExitStack() as stack, pytest.raises(ForeignMessage) as refused:
        take_attachments(cast(Call, call), "default", [item], stack)
    assert (refused.value.parameter, refused.value.owner) == ("attachments[0]", "work")


def test_an_item_naming_no_part_is_refused_naming_the_parameter_given() -> None:
    call, ref = _stored()
    with ExitStack() as stack, pytest.raises(InvalidMessageId) as refused:
        take_attachments(cast(Call, call), "default", [ref.message_id], stack, parameter="forward_of")
    assert refused.value.parameter == "forward_of"


def test_the_parts_of_one_message_are_taken_in_the_order_asked() -> None:
    call, ref = _stored()
    with ExitStack() as stack:
        items = [f"{ref.message_id}#2", f"{ref.message_id}#2"]
        taken = take_attachments(cast(Call, call), "default", items, stack, kept=True)
    assert [(a.name, a.source) for a in taken] == [("q3.xls", KEPT)] * 2

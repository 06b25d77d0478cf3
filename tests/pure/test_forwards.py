"""A forward as imap_save_draft composes it (services/forwards.py) of mail kept in memory
(tests/support/mail/memory_mail.py): attached whole, byte for byte and within max_attachment_bytes, or inline
with the original's attachments read part by part; its headers and warnings. The same on real servers
through the MCP client: tests/integration/drafts_and_sending/test_forward_and_invitation.py and test_forward_invite_matrix.py."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any, cast

import pytest

from mail_imap_mcp.call import Call
from mail_imap_mcp.content.forwards import FORWARDED_HEADER
from mail_imap_mcp.mail.attachment_errors import AttachmentTooLarge
from mail_imap_mcp.mail.draft_errors import AttachmentRefused
from mail_imap_mcp.mail.errors import MessageGone
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.roles import INBOX
from mail_imap_mcp.mime.building import Attachment
from mail_imap_mcp.services.forwards import Forward, carried, forward_draft
from mail_imap_mcp.tools.save_draft.models import SaveDraftInput
from tests.support.mail.memory_mail import MemoryCall, MemoryMail

ORIGINAL = (
    b"From: Acme <billing@acme.example>\r\nTo: <me@example.org>\r\nSubject: Invoice 11\r\n"
    b"Message-ID: <inv-11@acme.example>\r\nMIME-Version: 1.0\r\n"
    b'Content-Type: multipart/mixed; boundary="b"\r\n\r\n'
    b"--b\r\nContent-Type: text/plain\r\n\r\nPlease pay.\r\n"
    b'--b\r\nContent-Type: application/pdf; name="invoice.pdf"\r\n'
    b'Content-Disposition: attachment; filename="invoice.pdf"\r\n'
    b"Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--b--\r\n"
)


def _stored(raw: bytes = ORIGINAL, server: dict[str, object] | None = None) -> tuple[MemoryCall, MessageRef]:
    mail = MemoryMail()
    made = mail.append(INBOX, raw)
    call = MemoryCall({"default": mail}, {"default": {"addresses": ["me@example.org"]}}, server)
    return call, MessageRef("default", INBOX, made.uidvalidity, made.uid)


def _forward(call: MemoryCall, ref: MessageRef, stack: ExitStack, **args: Any) -> Forward:
    given = SaveDraftInput.model_validate({"forward_of": ref.message_id, "body_text": "FYI.", **args})
    account = call.config.accounts["default"]
    return forward_draft(cast(Call, call), account, ref, given, stack, None)


def _read(call: MemoryCall, ref: MessageRef, forward_as: str) -> tuple[Forward, Attachment, bytes]:
    """The forward of ``ref`` to Bob, its one attachment and that attachment's bytes."""
    with ExitStack() as stack:
        forward = _forward(call, ref, stack, forward_as=forward_as, to=["bob@example.org"])
        (attached,) = forward.attachments
        with attached.read() as kept:
            return forward, attached, kept.read()


def test_a_forward_as_attachment_carries_the_original_byte_for_byte() -> None:
    call, ref = _stored()
    forward, whole, kept = _read(call, ref, "attachment")
    assert kept == ORIGINAL
    assert (whole.name, whole.content_type, whole.size, whole.encoding) == (
        "Invoice 11.eml",
        "message/rfc822",
        len(ORIGINAL),
        "7bit",
    )
    assert whole.source == "from the message 'Invoice 11' of Acme <billing@acme.example>"
    assert forward.message["Subject"] == "Fwd: Invoice 11"
    assert forward.message[FORWARDED_HEADER] == "<inv-11@acme.example>"
    assert forward.shown == "'Invoice 11' of Acme <billing@acme.example>"


def test_an_original_with_eight_bit_bytes_is_attached_as_8bit() -> None:
    call, ref = _stored(ORIGINAL.replace(b"Please pay.", "Bitte zahlen Sie fällig.".encode()))
    assert _read(call, ref, "attachment")[1].encoding == "8bit"


def test_an_original_over_max_attachment_bytes_is_refused_naming_forward_of() -> None:
    large = ORIGINAL.replace(b"Please pay.", b"Please pay.\r\n" * 6_000)
    call, ref = _stored(large, {"max_attachment_bytes": 65_536})
    with ExitStack() as stack, pytest.raises(AttachmentRefused) as refused:
        _forward(call, ref, stack, forward_as="attachment", to=["bob@example.org"])
    assert refused.value.parameter == "forward_of"
    assert isinstance(refused.value.cause, AttachmentTooLarge)


def test_an_inline_forward_quotes_the_text_and_carries_the_attachments_decoded() -> None:
    call, ref = _stored()
    forward, pdf, kept = _read(call, ref, "inline")
    assert kept == b"%PDF-1.4\n"
    assert (pdf.name, pdf.content_type, pdf.disposition) == ("invoice.pdf", "application/pdf", "attachment")
    assert pdf.source == "from the message 'Invoice 11' of Acme"
    text = forward.message.get_content()
    assert text.startswith("FYI.") and "Please pay." in text and "Invoice 11" in text
    assert carried(forward.original) == {
        ("invoice.pdf", "application/pdf"),
        ("Invoice 11.eml", "message/rfc822"),
    }


def test_a_forward_without_recipients_or_message_id_says_so() -> None:
    call, ref = _stored(ORIGINAL.replace(b"Message-ID: <inv-11@acme.example>\r\n", b""))
    with ExitStack() as stack:
        forward = _forward(call, ref, stack, forward_as="attachment")
    assert FORWARDED_HEADER not in forward.message
    assert any("no Message-ID" in warning for warning in forward.warnings)
    assert any("no recipient" in warning for warning in forward.warnings)


def test_a_forward_of_a_message_gone_reads_nothing_more() -> None:
    call, ref = _stored()
    call.accounts["default"].expunge(INBOX, [ref.uid])
    with ExitStack() as stack, pytest.raises(MessageGone):
        _forward(call, ref, stack, forward_as="attachment", to=["bob@example.org"])

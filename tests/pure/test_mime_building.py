"""A draft with attachments built by mime/building.py: the text part as today's draft has it, byte for
byte; each attachment decoded back byte-exact with its type, RFC 2231 name and disposition; the size
known before anything is read; the recorded sources left out of what is transmitted. Pure: no server."""

from __future__ import annotations

import email.policy
import hashlib
import io
import os
from email.headerregistry import Address
from email.message import EmailMessage
from email.parser import BytesParser

import pytest

from mail_imap_mcp.content.drafts import compose_draft
from mail_imap_mcp.envelope.user_call import approval_digest
from mail_imap_mcp.mime.building import (
    SOURCE_HEADER,
    Attachment,
    ContentChanged,
    base64_size,
    build_message,
    recorded_sources,
)
from mail_imap_mcp.services.send_page import message_page
from mail_imap_mcp.services.send_review import review
from mail_imap_mcp.smtp.outgoing import outgoing, rewritten

BODY = "Grüße,\nthe invoice is attached.\n" + "a long line " * 100 + "\n"
LONG_NAME = "Rechnung März 2026 – a name long enough to be folded over several lines (final).pdf"


def _text() -> EmailMessage:
    message, _ = compose_draft(
        Address(addr_spec="me@example.org"),
        [Address("Bob", addr_spec="bob@example.com")],
        [],
        "Invoice",
        BODY,
        "example.org",
        None,
    )
    return message


def _parsed(raw: bytes) -> EmailMessage:
    message = BytesParser(policy=email.policy.default).parsebytes(raw)
    assert isinstance(message, EmailMessage)
    return message


def _split(raw: bytes) -> tuple[bytes, bytes]:
    header, _, body = raw.partition(b"\r\n\r\n")
    return header, body


class _Trickle(io.BytesIO):
    """A stream that returns fewer bytes than asked (as a pipe or socket may)."""

    def read(self, size: int | None = -1) -> bytes:
        return super().read(min(size, 1000) if size is not None and size > 0 else size)


def test_without_attachments_the_draft_is_todays_text_message_byte_for_byte() -> None:
    today = _text()
    built = build_message(today, [])
    assert built.to_bytes() == today.as_bytes() and built.size == len(today.as_bytes())


def test_the_text_part_is_unchanged_and_each_attachment_decodes_byte_exact() -> None:
    pdf, image = b"%PDF-1.7\n" + os.urandom(200_001), os.urandom(57 * 2048)
    today = _text().as_bytes()
    built = build_message(
        _text(),
        [
            Attachment.of_bytes(
                pdf, LONG_NAME, "application/pdf", source="from the message 'Invoice' of Acme"
            ),
            Attachment(
                "photo.jpg",
                "image/jpeg",
                len(image),
                lambda: _Trickle(image),
                disposition="inline",
                content_id="<p1@example.org>",
            ),
        ],
    )
    raw = built.to_bytes()
    assert built.size == len(raw) and b"".join(built.chunks()) == raw
    message = _parsed(raw)
    assert message.get_content_type() == "multipart/mixed"
    text, first, second = message.iter_parts()
    # The text part's content headers and body, as today's single-part draft writes them.
    today_header, today_body = _split(today)
    for line in (
        b'Content-Type: text/plain; charset="utf-8"',
        b"Content-Transfer-Encoding: quoted-printable",
    ):
        assert line in today_header.split(b"\r\n") and line in text.as_bytes(policy=email.policy.SMTP)
    assert today_body and (b"\r\n\r\n" + today_body + b"\r\n--") in raw
    assert (first.get_content_type(), first.get_filename(), first.get_content_disposition()) == (
        "application/pdf", LONG_NAME, "attachment",
    )  # fmt: skip
    assert b"filename*0*=utf-8''Rechnung%20M%C3%A4rz" in raw  # RFC 2231
    assert (second.get_content_type(), second.get_filename(), second.get_content_disposition()) == (
        "image/jpeg", "photo.jpg", "inline",
    )  # fmt: skip
    assert second["Content-ID"] == "<p1@example.org>"
    for part, content in ((first, pdf), (second, image)):
        assert part["Content-Transfer-Encoding"] == "base64"
        decoded = part.get_payload(decode=True)
        assert isinstance(decoded, bytes)
        assert hashlib.sha256(decoded).hexdigest() == hashlib.sha256(content).hexdigest()
    body_lines = [line for line in raw.split(b"\r\n") if line and not line.startswith((b"--", b" "))]
    assert max(map(len, body_lines)) <= 998 and b"\n" not in raw.replace(b"\r\n", b"")


@pytest.mark.parametrize("size", [0, 1, 2, 3, 56, 57, 58, 114, 57 * 1024, 57 * 1024 + 1, 100_000])
def test_the_size_is_known_before_reading_and_lines_are_76_characters(size: int) -> None:
    content = os.urandom(size)
    attachment = Attachment("a.bin", "application/octet-stream", size, lambda: _Trickle(content))
    built = build_message(_text(), [attachment])
    body = b"".join(list(built.chunks())[1:-1])
    assert len(body) == base64_size(size) == attachment.encoded_size
    lines = body.split(b"\r\n") if body else []
    assert all(len(line) == 76 for line in lines[:-1]) and all(0 < len(line) <= 76 for line in lines[-1:])
    assert built.size == len(built.to_bytes())


def test_a_content_that_is_not_the_size_it_declared_is_refused() -> None:
    short = Attachment("a.bin", "application/octet-stream", 10, lambda: io.BytesIO(b"123"))
    with pytest.raises(ContentChanged):
        build_message(_text(), [short]).to_bytes()


def test_a_message_rfc822_part_is_carried_as_it_is() -> None:
    inner = b"From: a@example.com\r\nSubject: Original\r\n\r\nHello\r\n"
    built = build_message(_text(), [Attachment.of_bytes(inner, "", "message/rfc822", encoding="8bit")])
    assert b"Content-Transfer-Encoding: 8bit\r\n\r\n" + inner + b"\r\n--" in built.to_bytes()
    _, forwarded = _parsed(built.to_bytes()).iter_parts()
    assert forwarded.get_content_type() == "message/rfc822" and built.size == len(built.to_bytes())


def test_the_recorded_sources_are_kept_in_the_draft_and_never_transmitted() -> None:
    built = build_message(
        _text(),
        [
            Attachment.of_bytes(
                b"x", "a.pdf", "application/pdf", source="from the message 'Ünïcode' of Acme"
            ),
            Attachment.of_bytes(b"y", "b.txt", "text/plain"),
            Attachment.of_bytes(b"z", "c.pdf", "application/pdf", source="the file Documents/c.pdf"),
        ],
    )
    raw = built.to_bytes()
    assert recorded_sources(_parsed(raw).get_all(SOURCE_HEADER) or []) == {
        "2": "from the message 'Ünïcode' of Acme",
        "4": "the file Documents/c.pdf",
    }
    transmitted = rewritten(raw, date="D", header_id=None, keep_bcc=False)
    assert SOURCE_HEADER.encode() not in transmitted and b"Documents" not in transmitted
    assert _split(transmitted)[1] == _split(raw)[1]  # the body as it was
    assert rewritten(raw, date="D", header_id=None, keep_bcc=True).count(SOURCE_HEADER.encode()) == 2


def test_the_approval_lists_each_attachment_with_its_name_type_size_and_source() -> None:
    built = build_message(
        _text(),
        [
            Attachment.of_bytes(b"%PDF" * 10, "Invoice.pdf", "application/pdf", source="from the message 'Invoice 2026-11' of Acme"),
            Attachment.of_bytes(b"GIF89a", "logo.gif", "image/gif"),
        ],
    )  # fmt: skip
    raw = built.to_bytes()
    message = outgoing(raw, frozenset({"me@example.org"}), "example.org")
    question = review(message, raw, "default").question()
    assert (
        "Attachments: Invoice.pdf (application/pdf, 40 bytes), from the message 'Invoice 2026-11' of Acme"
        in question
    )
    assert "Attachments: logo.gif (image/gif, 6 bytes)" in question.splitlines()
    shown = message_page(approval_digest("imap_send_draft", {}, question), raw).attachments
    assert [(a.name, a.size, a.content_type, a.source) for a in shown] == [
        ("Invoice.pdf", 40, "application/pdf", "from the message 'Invoice 2026-11' of Acme"),
        ("logo.gif", 6, "image/gif", ""),
    ]

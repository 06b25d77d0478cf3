"""What tests/integration/drafts_and_sending/test_forward_and_invitation.py shares with other test modules."""

from __future__ import annotations

import base64
import email
import email.policy
import hashlib
import os
import time
from email.message import EmailMessage
from typing import Any

from icalendar import Calendar


def _calendar_of(raw: bytes) -> tuple[str, Calendar]:
    """The text part and the ``text/calendar; method=REPLY`` part of a delivered message, parsed."""
    message = email.message_from_bytes(raw, policy=email.policy.default)
    texts = [p for p in message.walk() if p.get_content_type() == "text/plain"]
    (calendar,) = [p for p in message.walk() if p.get_content_type() == "text/calendar"]
    assert calendar.get_param("method") == "REPLY"
    return texts[0].get_content(), Calendar.from_ical(calendar.get_content())


PDF = b"%PDF-1.4\n" + os.urandom(40_000) + b"\n%%EOF\n"


PNG = b"\x89PNG\r\n\x1a\n" + os.urandom(12_000)


def _invoice(sender: str, to: str, subject: str = "Invoice 2026-11") -> bytes:
    """A message from Acme with a PDF and an image, as a mail client sends it."""
    boundary = f"b-{time.monotonic_ns()}"

    def part(kind: str, name: str, data: bytes) -> str:
        encoded = base64.encodebytes(data).decode().replace("\n", "\r\n")
        return (
            f'--{boundary}\r\nContent-Type: {kind}; name="{name}"\r\nContent-Disposition: attachment; '
            f'filename="{name}"\r\nContent-Transfer-Encoding: base64\r\n\r\n{encoded}'
        )

    return (
        f"From: Acme Billing <{sender}>\r\nTo: {to}\r\nSubject: {subject}\r\n"
        f"Date: Mon, 03 Nov 2025 09:00:00 +0100\r\nMessage-ID: <invoice-{time.monotonic_ns()}@acme.example>\r\n"
        f'MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="{boundary}"\r\n\r\n'
        f"--{boundary}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nPlease find the invoice attached.\r\n"
        f"{part('application/pdf', 'invoice.pdf', PDF)}{part('image/png', 'logo.png', PNG)}--{boundary}--\r\n"
    ).encode()


def _digests(message: EmailMessage) -> dict[str, str]:
    return {
        str(part.get_filename()): hashlib.sha256(part.get_payload(decode=True)).hexdigest()
        for part in message.walk()
        if part.get_filename() and not part.is_multipart()
    }


def _reply_of(raw: bytes) -> Any:
    """The account's attendee line of the iMIP REPLY in a delivered message."""
    _, calendar = _calendar_of(raw)
    (event,) = calendar.walk("VEVENT")
    return event["ATTENDEE"]

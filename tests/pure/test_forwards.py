"""A forward's subject and the draft's record of what it forwards (content/forwards.py), as the send reads
it and leaves it out of what is transmitted (smtp/outgoing.py)."""

from __future__ import annotations

import pytest

from mail_imap_mcp.content.forwards import FORWARDED_HEADER, forward_subject
from mail_imap_mcp.smtp.outgoing import outgoing, rewritten


@pytest.mark.parametrize(
    ("theirs", "ours"),
    [
        ("Invoice", "Fwd: Invoice"),
        ("Fwd: Invoice", "Fwd: Invoice"),
        ("FW: Invoice", "Fwd: Invoice"),
        ("WG: Rechnung", "Fwd: Rechnung"),
        ("TR : Facture", "Fwd: Facture"),
        ("Re: Invoice", "Fwd: Re: Invoice"),
        ("", "Fwd:"),
        (None, "Fwd:"),
    ],
)
def test_a_forward_has_one_fwd(theirs: str | None, ours: str) -> None:
    assert forward_subject(theirs) == ours


def test_the_record_of_the_forwarded_message_is_read_and_never_transmitted() -> None:
    raw = (
        "From: a@example.com\r\nTo: b@example.com\r\nSubject: Fwd: x\r\nMessage-ID: <d@example.com>\r\n"
        f"{FORWARDED_HEADER}: <orig@example.com>\r\nDate: Mon, 02 Jan 2023 10:00:00 +0000\r\n\r\nBody\r\n"
    ).encode()
    message = outgoing(raw, frozenset({"a@example.com"}), "example.com")
    assert message.forwarded == "<orig@example.com>" and message.in_reply_to is None
    date = "Tue, 03 Jan 2023 10:00:00 +0000"
    assert FORWARDED_HEADER.encode() not in rewritten(raw, date=date, header_id=None, keep_bcc=False)
    assert FORWARDED_HEADER.encode() in rewritten(
        raw, date=date, header_id=None, keep_bcc=True
    )  # the Sent copy

"""What tests/integration/index/test_index_attachments.py shares with other test modules."""

from __future__ import annotations

from email.message import EmailMessage
from typing import Any

from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.mail.documents import _w_par, docx_bytes, text_pdf
from tests.support.mail.mailgen import crlf

SEARCH = "imap_search_messages"


DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


#: The per-message fetch bound of the test (the smallest allowed value times 16).
FETCH_BYTES = 65_536


def with_attachments(subject: str, body: str, *attachments: tuple[bytes, str, str]) -> bytes:
    """A message with ``body`` and each (data, media type, file name) attached."""
    msg = EmailMessage()
    msg["From"] = "Reports <reports@example.com>"
    msg["To"] = "user@example.org"
    msg["Subject"] = subject
    msg["Date"] = "Mon, 03 Feb 2025 10:00:00 +0100"
    msg["Message-ID"] = f"<{subject.replace(' ', '.')}@attachments.test>"
    msg.set_content(body)
    for data, media_type, filename in attachments:
        maintype, subtype = media_type.split("/", 1)
        msg.add_attachment(data, maintype=maintype, subtype=subtype, filename=filename)
    return crlf(msg)


MESSAGES = [
    with_attachments(
        "quarterly report",
        "See the attached figures.\n",
        (text_pdf([["revenue quokkaword up"]]), "application/pdf", "q.pdf"),
    ),
    with_attachments(
        "meeting notes", "Notes attached.\n", (docx_bytes(_w_par("agreed on wombatword")), DOCX, "notes.docx")
    ),
    with_attachments(
        "damaged files",
        "Two files, one broken.\n",
        (b"%PDF-1.7\nthis is no pdf at all", "application/pdf", "broken.pdf"),
        (b"the good one says numbatword\n", "text/plain", "good.txt"),
    ),
    with_attachments(
        "huge log",
        "The platypusword log is attached.\n",
        # The first word is read; the last lies past index_attachment_bytes (base64 makes it larger yet).
        (
            b"dingoword\n" + (b"x" * 99 + b"\n") * (2 * FETCH_BYTES // 100) + b"echidnaword\n",
            "text/plain",
            "log.txt",
        ),
        (text_pdf([["bilbyword"] * 2]) + b"%" + b"p" * FETCH_BYTES, "application/pdf", "too-big.pdf"),
    ),
    with_attachments("after them", "The last message says dugongword.\n"),
]


async def found(mcp: EnvelopeClient, word: str) -> list[str]:
    data: dict[str, Any] = await mcp.ok(SEARCH, {"query": word, "mailbox": "INBOX", "fields": "full"})
    return [m["subject"] for m in data["messages"]]

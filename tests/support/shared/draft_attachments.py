"""What tests/integration/drafts_and_sending/test_draft_attachments.py shares with other test modules."""

from __future__ import annotations

import email.policy
import os
from email.message import EmailMessage

from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.servers.submission import DOMAIN, SubmissionDovecot
from tests.support.shared.send import (
    _setup,
)

SAVE = "imap_save_draft"


PDF = b"%PDF-1.7\n" + os.urandom(150_000) + b"\n%%EOF\n"


PNG = b"\x89PNG\r\n\x1a\n" + os.urandom(40_000)


def _invoice(to: str) -> bytes:
    """A message from Acme with a PDF and an image, as a mail client sends it."""
    message = EmailMessage(policy=email.policy.SMTP)
    message["From"] = f"Acme Billing <billing@{DOMAIN}>"
    message["To"] = to
    message["Subject"] = "Invoice 2026-11"
    message["Message-ID"] = f"<invoice-{os.getpid()}-{os.urandom(4).hex()}@{DOMAIN}>"
    message.set_content("Please find the invoice attached.\n")
    message.add_attachment(PDF, maintype="application", subtype="pdf", filename="Rechnung März.pdf")
    message.add_attachment(PNG, maintype="image", subtype="png", filename="logo.png")
    return message.as_bytes()


async def _invoice_parts(mcp: EnvelopeClient) -> tuple[str, list[str]]:
    """The invoice's message id and its attachments as items of ``attachments`` (``<message_id>#<part_id>``,
    as imap_get_message lists them)."""
    found = await mcp.ok("imap_search_messages", {"mailbox": "INBOX", "subject": "Invoice 2026-11"})
    (message,) = found["messages"]
    detail = await mcp.ok("imap_get_message", {"message_id": message["message_id"]})
    return message["message_id"], [
        f"{message['message_id']}#{a['part_id']}" for a in detail["message"]["attachments"]
    ]


def _seeded(chain: SubmissionDovecot) -> tuple[str, str, str]:
    sender, bob, carol = _setup(chain)
    chain.seed(sender, "INBOX", [_invoice(chain.address(sender))])
    return sender, bob, carol

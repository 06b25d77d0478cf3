"""Message summary records for pure unit tests, built the way the IMAP layer builds them."""

from __future__ import annotations

from typing import Any

from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.records import SummaryRecord


def make_summary(
    uid: int = 1, uidvalidity: int = 7, *, short_recipients: str | None = None, **fields: Any
) -> SummaryRecord:
    """A summary of INBOX message ``uid``; ``fields`` override the plain defaults."""
    ref = MessageRef("default", "INBOX", uidvalidity, uid)
    values: dict[str, Any] = {
        "message_id": ref.message_id,
        "message_uri": ref.message_uri,
        "message_raw_uri": ref.message_raw_uri,
        "mailbox": "INBOX",
        "uidvalidity": uidvalidity,
        "uid": uid,
        "date": None,
        "from_": "Ana <ana@example.org>",
        "to": None,
        "cc": None,
        "subject": f"message {uid}",
        "flags": [],
        "size_bytes": 100 + uid,
        "has_attachments": False,
        "snippet": None,
    }
    return SummaryRecord(**{**values, **fields}, short_recipients=short_recipients)

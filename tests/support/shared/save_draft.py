"""What tests/pure/test_save_draft.py shares with other test modules."""

from __future__ import annotations

from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.presentation.shapes import MessageDetail
from mail_imap_mcp.services.drafts import Original


def original(
    subject: str | None, headers: dict[str, str], body: str = "Hi\n", truncated: bool = False
) -> Original:
    ref = MessageRef("default", "INBOX", 7, 3)
    detail = MessageDetail(
        message_id=ref.message_id,
        message_uri=ref.message_uri,
        message_raw_uri=ref.message_raw_uri,
        mailbox="INBOX",
        uidvalidity=7,
        uid=3,
        date="2024-03-14T08:26:53Z",
        from_="Alice <alice@example.com>",
        to=None,
        cc=None,
        subject=subject,
        flags=[],
        size_bytes=100,
        has_attachments=False,
        snippet=None,
        headers=headers,
        body_format="text",
        body_text=body,
        body_truncated=truncated,
        body_source="text/plain",
        attachments=[],
    )
    return Original(ref, detail, [])

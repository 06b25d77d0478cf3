"""The marks a send leaves on the message it answers or forwards: ``\\Answered`` on the message replied to
(found by In-Reply-To), ``$Forwarded`` on the message forwarded (RFC 5788's registry; found by the draft's
record, ``content/forwards.py``), wherever it is kept: the first mailbox of the list searched that holds
its Message-ID (the backend's ``mark_original``, ``mail/drafts.py``). A mailbox whose PERMANENTFLAGS keeps
neither the flag nor new keywords (``\\*``) is left alone and said. The message forwarded is also found
before the user is asked, to show its subject and sender."""

from __future__ import annotations

from collections.abc import Sequence

from mail_imap_mcp import mime
from mail_imap_mcp.mail.drafts import MailDrafts


def original_words(mail: MailDrafts, mailboxes: Sequence[str], header_id: str) -> str | None:
    """The message of Message-ID ``header_id`` found as the backend's ``mark_original`` would find it,
    said as the user is shown it: "'Invoice 2026-11' of Acme <billing@acme.example>"; None when it is in
    none of ``mailboxes``."""
    headers = mail.original_fields(mailboxes, header_id, ("From", "Subject"))
    if headers is None:
        return None
    subject = mime.decode_header_value((headers.get("subject") or [""])[0]) or "(no subject)"
    senders = mime.parse_address_list((headers.get("from") or [""])[0])
    sender = mime.format_address(senders[0]) if senders else "an unknown sender"
    return f"{' '.join(subject.split())[:200]!r} of {sender}"

"""A forward's text and headers, as mail clients write them; pure.

Its subject is the original's with one ``Fwd: `` (an original already forwarded keeps its one prefix, in
any of the common spellings), its References end with the original's Message-ID, and an inline forward's
text is the caller's, then the original's From/Date/Subject/To/Cc block and its text (Gmail's and
Thunderbird's layout). Which message it forwards is recorded in :data:`FORWARDED_HEADER`, which
``smtp/outgoing.py`` leaves out of what is transmitted: sending marks that message ``$Forwarded``.
"""

from __future__ import annotations

import re

from mail_imap_mcp.content.drafts import MESSAGE_ID, RepliedMessage, one_line, thread_headers

#: The draft's record of the message it forwards (its Message-ID): for the send, never for recipients.
FORWARDED_HEADER = "X-Mail-Imap-Mcp-Forwarded"
#: The keyword a forwarded message gets (RFC 5788's registry).
FORWARDED_KEYWORD = "$Forwarded"
#: Forward prefixes of the common clients (English Fwd/Fw, German WG, French TR, Spanish RV, Portuguese
#: Enc, Dutch Doorst), with the fullwidth colon; an original with one keeps it as the draft's one.
_FORWARD_PREFIX = re.compile(r"^\s*(?:fwd|fw|wg|tr|rv|enc|doorst)\s*[:：]\s*", re.IGNORECASE)
_DIVIDER = "---------- Forwarded message ----------"


def forward_subject(theirs: str | None) -> str:
    """``Fwd: `` and the original's subject, once: "Fwd: Fwd: x" never comes of forwarding "Fwd: x"."""
    text = one_line(theirs)
    return f"Fwd: {_FORWARD_PREFIX.sub('', text, count=1)}".rstrip()


def forwarded_id(original: RepliedMessage) -> str | None:
    """The original's Message-ID, as the draft records and references it (None when it has none)."""
    found = MESSAGE_ID.findall(original.headers.get("Message-ID", ""))
    return found[0] if found else None


def references(original: RepliedMessage) -> str | None:
    """References of the forward: the original's thread and its Message-ID (RFC 5322 3.6.4)."""
    return thread_headers(original)[1]


def forward_block(original: RepliedMessage) -> str:
    """The original's headers and text as an inline forward shows them."""
    headers = original.headers
    lines = [_DIVIDER, f"From: {one_line(original.from_ or headers.get('From'))}"]
    lines.append(f"Date: {one_line(headers.get('Date')) or original.date or ''}")
    lines.append(f"Subject: {one_line(original.subject)}")
    for name in ("To", "Cc"):
        if headers.get(name):
            lines.append(f"{name}: {one_line(headers.get(name))}")
    text = (original.body_text or "").rstrip()
    return "\n".join(lines) + "\n\n" + text + ("\n[...]" if original.body_truncated else "") + "\n"


def forward_text(body_text: str, original: RepliedMessage | None) -> str:
    """The forward's text: the caller's, then (inline) the original's block."""
    body = body_text.replace("\r\n", "\n").replace("\r", "\n")
    if original is None:
        return body
    return (body.rstrip("\n") + "\n\n" if body.strip() else "") + forward_block(original)

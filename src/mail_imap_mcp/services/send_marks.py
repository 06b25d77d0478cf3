"""The marks a send leaves on the message it answers or forwards: ``\\Answered`` on the message replied to
(found by In-Reply-To), ``$Forwarded`` on the message forwarded (RFC 5788's registry; found by the draft's
record, ``content/forwards.py``), wherever it is kept: the first mailbox of the list searched that holds
its Message-ID, selected only then. A mailbox whose PERMANENTFLAGS keeps neither the flag nor new
keywords (``\\*``) is left alone and said. The message forwarded is also found before the user is asked, to
show its subject and sender."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from mail_imap_mcp import mime
from mail_imap_mcp.imap.fetch import find_item
from mail_imap_mcp.imap.flags import not_permitted
from mail_imap_mcp.imap.session import ImapSession

Marked = Literal["marked", "not_found", "not_kept"]
_HEADERS = "BODY.PEEK[HEADER.FIELDS (FROM SUBJECT)]"


def mark_original(mailboxes: Sequence[str], header_id: str, flag: str) -> Callable[[ImapSession], Marked]:
    """The write that sets ``flag`` on the message of Message-ID ``header_id`` (see the module)."""

    def mark(session: ImapSession) -> Marked:
        for mailbox in mailboxes:
            session.examine(mailbox)
            if not session.uid_search([b"HEADER", b"MESSAGE-ID", header_id]):
                continue
            state = session.select(mailbox)  # a write: searched again on the selected mailbox
            if not_permitted(state, [], [flag]):
                return "not_kept"
            uids = session.uid_search([b"HEADER", b"MESSAGE-ID", header_id])
            if uids:
                with session.write_command(uids):
                    session.store_flags(uids, "+", [flag])
                return "marked"
        return "not_found"

    return mark


def original_words(mailboxes: Sequence[str], header_id: str) -> Callable[[ImapSession], str | None]:
    """The read that finds the message of Message-ID ``header_id`` as :func:`mark_original` would, and
    says it as the user is shown it: "'Invoice 2026-11' of Acme <billing@acme.example>"; None when it is
    in none of ``mailboxes``."""

    def read(session: ImapSession) -> str | None:
        for mailbox in mailboxes:
            session.examine(mailbox)
            uids = session.uid_search([b"HEADER", b"MESSAGE-ID", header_id])
            if not uids:
                continue
            response = session.fetch(uids[:1], [_HEADERS]).get(uids[0]) or {}
            headers = mime.parse_header_block(find_item(response, b"BODY[") or b"")
            subject = mime.decode_header_value((headers.get("subject") or [""])[0]) or "(no subject)"
            senders = mime.parse_address_list((headers.get("from") or [""])[0])
            sender = mime.format_address(senders[0]) if senders else "an unknown sender"
            return f"{' '.join(subject.split())[:200]!r} of {sender}"
        return None

    return read

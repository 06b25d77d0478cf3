"""Mailbox listing: LIST with decoded names and special-use roles, optional STATUS counts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mail_imap_mcp.imap import parsing
from mail_imap_mcp.mail.mailboxes import MailboxCounts, MailboxInfo

if TYPE_CHECKING:
    from mail_imap_mcp.imap.session import ImapSession

# RFC 6154 roles (plus \\Important, RFC 8457), keyed case-insensitively as servers vary.
SPECIAL_USE = {
    role.lower(): role
    for role in ("\\All", "\\Archive", "\\Drafts", "\\Flagged", "\\Important", "\\Junk", "\\Sent", "\\Trash")
}


def _text(value: bytes | str | None) -> str | None:
    if value is None:
        return None
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _sort_key(box: MailboxInfo) -> tuple[int, str, str]:
    """INBOX first, then by name case-folded, then as spelled: no server's LIST order changes it (a
    search of several mailboxes breaks ties of its order by this place, docs/search.md)."""
    return (0 if box.name.upper() == "INBOX" else 1, box.name.casefold(), box.name)


def list_mailboxes(session: ImapSession) -> list[MailboxInfo]:
    """All mailboxes, INBOX first then by name, names decoded from modified UTF-7."""
    return _infos(session.client.list_folders())


def list_matching(session: ImapSession, pattern: str) -> list[MailboxInfo]:
    """``LIST "" pattern``: the mailboxes matching ``pattern`` (a name without wildcards: that mailbox,
    when it exists), decoded as :func:`list_mailboxes` does."""
    return _infos(session.client.list_folders("", pattern))


def list_with_message_counts(session: ImapSession, items: bytes = b"(MESSAGES UIDNEXT)") -> list[MailboxInfo]:
    """:func:`list_mailboxes`, each with its STATUS ``items`` (``counts``; by default MESSAGES and UIDNEXT)
    from the same round trip where the server advertises LIST-STATUS (RFC 5819) and LIST-EXTENDED;
    without counts elsewhere."""
    if not session.profile.lists_with_status:
        return list_mailboxes(session)
    folders, statuses = session.client.list_with_status(items)
    boxes = _infos(folders)
    counts = status_answers(statuses)
    for box in boxes:
        box.counts = counts.get(box.name)
    return boxes


def status_answers(statuses: list[Any]) -> dict[str, MailboxCounts]:
    """The counts of untagged ``STATUS name (items)`` answers, by decoded mailbox name (a mailbox whose
    answer has no MESSAGES count is left out)."""
    answers: Sequence[tuple[Any, dict[Any, Any]]] | None = parsing.status_lines(statuses)
    if answers is None:  # not the usual shape (read above without imapclient's parser): imapclient reads it
        parsed = parsing.response_values(statuses)
        answers = [
            (name, dict(zip(items[::2], items[1::2], strict=False)) if isinstance(items, tuple) else {})
            for name, items in zip(parsed[::2], parsed[1::2], strict=False)
        ]
    found: dict[str, MailboxCounts] = {}
    for name, pairs in answers:
        counts = [pairs.get(item) for item in _COUNTED]
        if isinstance(counts[0], int):
            found[parsing.mailbox_name(name)] = MailboxCounts(
                *(value if isinstance(value, int) else None for value in counts)
            )
    return found


#: The STATUS items of :class:`MailboxCounts`, in its order.
_COUNTED = (b"MESSAGES", b"UNSEEN", b"UIDVALIDITY", b"UIDNEXT", b"HIGHESTMODSEQ")


def _infos(folders: list[tuple[Any, Any, Any]]) -> list[MailboxInfo]:
    boxes = []
    for flags, delimiter, name in folders:
        attributes = [_text(f) or "" for f in flags]
        special = next((SPECIAL_USE[a.lower()] for a in attributes if a.lower() in SPECIAL_USE), None)
        boxes.append(
            MailboxInfo(
                name=_text(name) or "",
                delimiter=_text(delimiter),
                attributes=attributes,
                special_use=special,
                selectable=not any(a.lower() in {"\\noselect", "\\nonexistent"} for a in attributes),
            )
        )
    boxes.sort(key=_sort_key)
    return boxes

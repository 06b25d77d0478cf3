"""A page of several mailboxes, in arrival or date order, continued by one position.

The order, the reads and the merge are the backend's (:meth:`~mail_imap_mcp.mail.pages.PageReads.position_read`;
IMAP's in :mod:`mail_imap_mcp.imap.search.position`); this module chooses the mailboxes (the list a first
page made, kept per process by its digest, else listed again), checks that they are still those the
cursor was made for, and hands out the next :class:`PositionCursor`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from mail_imap_mcp.mail.cursors import DIGEST_CHARS, MailboxesChanged, PositionCursor
from mail_imap_mcp.mail.pages import PageOrder, PagePosition, PageReads, PositionAsk
from mail_imap_mcp.query import Dialect, Query


def reads_by_position(*, merged: bool) -> bool:
    """Whether a first page is read by one position: several mailboxes, on any server (one with SORT
    sorts their matches, one without searches them in bands of days: imap/search/position.py)."""
    return merged


def mailboxes_digest(names: Sequence[str], uidvalidities: Sequence[int]) -> str:
    """Names and UIDVALIDITYs of a search's mailboxes, in order (0: a mailbox not read)."""
    payload = json.dumps([list(names), list(uidvalidities)], ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:DIGEST_CHARS]


@dataclass
class PositionPage:
    """One page: ``(mailbox, uidvalidity, uid)`` in page order, and what continues it."""

    picks: list[tuple[str, int, int]]
    total: int
    mailboxes: list[str]
    failed: list[tuple[str, Exception]] = field(default_factory=list)
    next_cursor: PositionCursor | None = None
    #: Messages filed since the last page beside the cursor's message, where the order had passed
    #: (:attr:`~mail_imap_mcp.mail.pages.PositionRead.tied`): not listed, perhaps never.
    filed_behind: int = 0


def position_page(
    reads: PageReads,
    *,
    account_id: str,
    names: Sequence[str],
    skipped: int,
    search: Query,
    sort: PageOrder,
    limit: int,
    filter_digest: str,
    cursor: PositionCursor | None,
    dialect: Dialect,
) -> PositionPage:
    """A page over ``names`` (those whose bit is set in ``skipped`` are left out), after ``cursor``'s
    position (None: a first page), the search in ``dialect``. A mailbox's failure leaves the search
    (:meth:`~mail_imap_mcp.mail.pages.PageReads.mailbox_failure`) unless it ends the call.
    :class:`MailboxesChanged` when the mailboxes are no longer those of the cursor."""
    if cursor is not None and len(names) != cursor.count:
        raise MailboxesChanged()
    position = PagePosition(cursor.key, cursor.index, cursor.uid) if cursor is not None else None
    reading = tuple((index, name) for index, name in enumerate(names) if not skipped >> index & 1)
    found = reads.position_read(
        PositionAsk(search, dialect, sort, limit, mailboxes=reading, position=position)
    )
    parts = found.parts
    read = dict.fromkeys(range(len(names)), 0)
    read.update({part.index: part.uidvalidity for part in parts})
    if cursor is not None and mailboxes_digest(names, list(read.values())) != cursor.mailboxes_digest:
        raise MailboxesChanged()
    failed: list[tuple[str, Exception]] = []
    for part in parts:
        if part.failure is None:
            continue
        if reads.mailbox_failure(part.failure) is None:
            raise part.failure
        failed.append((part.mailbox, part.failure))
        skipped |= 1 << part.index
        read[part.index] = 0
    by_index = {part.index: part for part in parts}
    picks = [(names[i], by_index[i].uidvalidity, uid) for i, uid, _ in found.picks]
    total = cursor.total if cursor is not None else sum(p.matches for p in parts if p.failure is None)
    page = PositionPage(picks, total, [p.mailbox for p in parts if p.failure is None], failed)
    tied = found.tied
    if cursor is not None:
        page.filed_behind = max(tied - cursor.tied, 0)
    if found.next_position is not None:
        digest = mailboxes_digest(names, list(read.values()))
        mark = found.next_position
        returned = (cursor.returned if cursor is not None else 0) + len(picks)
        page.next_cursor = PositionCursor(
            account_id,
            filter_digest,
            digest,
            len(names),
            skipped,
            total,
            returned,
            mark.key,
            mark.index,
            mark.uid,
            (tied if position is not None and position.key == mark.key else 0)
            + sum(1 for _, _, key in found.picks if key == mark.key),
        )
    return page

"""A page of several mailboxes, in arrival or date order, continued by one position.

The order, the reads and the merge are :mod:`mail_imap_mcp.imap.search.position`'s; this module chooses
the mailboxes (the list a first page made, kept per process by its digest, else listed again), checks
that they are still those the cursor was made for, and hands out the next :class:`PositionCursor`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from mail_imap_mcp.imap.search.plan import reads_at_once
from mail_imap_mcp.imap.search.position import PagePosition, Trusted, merge, tied_before
from mail_imap_mcp.imap.search.position_read import read_parts
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.mail.cursors import DIGEST_CHARS, MailboxesChanged, PositionCursor
from mail_imap_mcp.query import Key, Query, needs_utf8, search_keys


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
    #: (:func:`~mail_imap_mcp.imap.search.position.tied_before`): not listed, perhaps never.
    filed_behind: int = 0


def position_page(
    session: ImapSession,
    *,
    account_id: str,
    names: Sequence[str],
    skipped: int,
    search: Query,
    sort: str,
    limit: int,
    filter_digest: str,
    cursor: PositionCursor | None,
    failure_of: Callable[[Exception], Exception | None],
    compile_keys: Callable[[Query], list[Key]] = search_keys,
) -> PositionPage:
    """A page over ``names`` (those whose bit is set in ``skipped`` are left out), after ``cursor``'s
    position (None: a first page). ``failure_of``: whether a mailbox's failure leaves the search (a
    mailbox failure) rather than failing the call. :class:`MailboxesChanged` when the mailboxes are
    no longer those of the cursor."""
    if cursor is not None and len(names) != cursor.count:
        raise MailboxesChanged()
    position = PagePosition(cursor.key, cursor.index, cursor.uid) if cursor is not None else None
    wanted = limit + 1
    reading = [(index, name) for index, name in enumerate(names) if not skipped >> index & 1]
    at_once = reads_at_once(search)
    charset = "UTF-8" if needs_utf8(search) else None
    criteria = compile_keys(search)
    found = read_parts(
        session, account_id, reading, criteria, wanted, position, sort, charset, at_once=at_once
    )
    parts = [part for part, _ in found]
    read = dict.fromkeys(range(len(names)), 0)
    read.update({part.index: part.uidvalidity for part in parts})
    if cursor is not None and mailboxes_digest(names, list(read.values())) != cursor.mailboxes_digest:
        raise MailboxesChanged()
    failed: list[tuple[str, Exception]] = []
    known: list[Trusted] = []
    for part, complete in found:
        if part.failure is None and complete is not None:
            known.append(complete)
            continue
        assert part.failure is not None
        if failure_of(part.failure) is None:
            raise part.failure
        failed.append((part.mailbox, part.failure))
        skipped |= 1 << part.index
        read[part.index] = 0
    merged = merge(known, limit)
    by_index = {part.index: part for part in parts}
    picks = [(names[i], by_index[i].uidvalidity, uid) for i, uid, _ in merged.picks]
    # On a first page ``near`` holds only the matches read whole besides the sorted or banded ones.
    total = (
        cursor.total if cursor is not None else sum(p.count + len(p.near) for p in parts if p.failure is None)
    )
    page = PositionPage(picks, total, [p.mailbox for p in parts if p.failure is None], failed)
    tied = 0
    if position is not None:
        tied = tied_before(parts, position)
        page.filed_behind = max(tied - cursor.tied, 0) if cursor is not None else 0
    if merged.next_position is not None:
        digest = mailboxes_digest(names, list(read.values()))
        mark = merged.next_position
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
            + sum(1 for _, _, key in merged.picks if key == mark.key),
        )
    return page

"""Search with stateless cursors over UID windows: bounded work per page, no cap on matches.

Results are newest first (UID descending, i.e. arrival order). A page searches downward from
its anchor in UID windows that grow until it has ``limit + 1`` matches, so a page of a
100,000-message mailbox costs about what a page of a small one does. The cursor is an opaque,
checksummed token carrying everything the next page needs (mailbox, UIDVALIDITY, a digest of
the filters, the snapshot's upper UID and the anchor), so it survives a server restart.
"""

from __future__ import annotations

from dataclasses import dataclass

from mail_imap_mcp.imap.errors import UidValidityChanged
from mail_imap_mcp.imap.search.cursors import CursorState
from mail_imap_mcp.imap.search.plan import UidWindows, first_window
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.imap.view import MailboxState
from mail_imap_mcp.query import Query, needs_utf8, search_keys


@dataclass
class SearchPage:
    """One page of UIDs, newest first, plus what is needed to describe and continue it."""

    mailbox: MailboxState
    uids: list[int]
    total: int
    has_more: bool
    next_cursor: CursorState | None


def search_page(
    session: ImapSession,
    *,
    account_id: str,
    mailbox: str,
    search: Query,
    limit: int,
    cursor: CursorState | None,
    filter_digest: str,
) -> SearchPage:
    """Return the next ``limit`` matching UIDs, newest first, continuing from ``cursor``."""
    state = session.examine(mailbox)
    if cursor is not None and cursor.uidvalidity != state.uidvalidity:
        raise UidValidityChanged(cursor.uidvalidity, state.uidvalidity)
    charset = "UTF-8" if needs_utf8(search) else None
    criteria = search_keys(search)

    total = cursor.total if cursor else None
    counted: list[tuple[int, int]] | None = None
    # A first window that reaches UID 1 finds every match: their number is the total, no COUNT needed.
    whole_mailbox = total is None and first_window(state, limit + 1, filtered=True) >= state.uidnext - 1
    if total is None and criteria and not whole_mailbox:
        # One scan gives the total and every match (ESEARCH's COUNT ALL, else the plain SEARCH's list).
        total, counted = session.uid_search_counted(criteria, charset=charset)
        if total == 0:
            return SearchPage(state, [], 0, False, None)

    matches, upper = newest_matches(
        session,
        state,
        criteria,
        charset=charset,
        wanted=limit + 1,
        below=None if cursor is None else cursor.anchor_uid,
        upper=cursor.upper_uid if cursor else None,
        counted=counted,
    )

    if whole_mailbox and criteria:
        total = len(matches)
    if total is None and criteria:
        total = session.uid_search_count(criteria, charset=charset)
    if total is None:
        total = session.refresh_counts(state).exists
    page = matches[:limit]
    returned = (cursor.returned if cursor else 0) + len(page)
    has_more = len(matches) > limit
    next_cursor = None
    if has_more and page:
        next_cursor = CursorState(
            account_id=account_id,
            mailbox=mailbox,
            uidvalidity=state.uidvalidity,
            filter_digest=filter_digest,
            upper_uid=upper,
            anchor_uid=page[-1],
            total=total,
            returned=returned,
        )
    return SearchPage(state, page, total, bool(next_cursor), next_cursor)


def newest_matches(
    session: ImapSession,
    state: MailboxState,
    criteria: list[bytes | str | int],
    *,
    charset: str | None,
    wanted: int,
    below: int | None,
    upper: int | None,
    counted: list[tuple[int, int]] | None = None,
) -> tuple[list[int], int]:
    """Up to about ``wanted`` matching UIDs below ``below`` (None: up to '*') and at most ``upper``,
    newest first, searched in UID windows that grow until enough are found; and the snapshot's upper UID
    (``upper``, or on a first search the highest UID seen, so later arrivals stay out of later pages).
    ``counted``: every match of the mailbox as runs (a first page's one scan): the newest are taken from
    it, as the windows would find them, and no search is sent."""
    if counted is not None:
        newest = newest_of(counted, wanted)
        return newest, max([max(state.uidnext - 1, 1), *newest[:1]])
    windows = UidWindows.start(state, wanted, filtered=bool(criteria), below=below, upper=upper)
    while not windows.done:
        found = session.uid_search([b"UID", windows.uid_set().encode(), *criteria], charset=charset)
        windows.take(found, state.uidnext)
        if not windows.done:
            windows.widen()
    return windows.matches, windows.upper or 0


def newest_of(runs: list[tuple[int, int]], wanted: int) -> list[int]:
    """The ``wanted`` highest UIDs of ascending ``(first, last)`` runs, newest first."""
    newest: list[int] = []
    for first, last in reversed(runs):
        newest.extend(range(last, max(first, last - (wanted - len(newest)) + 1) - 1, -1))
        if len(newest) >= wanted:
            break
    return newest

"""A page whose query tests attachments, answered by the server: the candidates the server's SEARCH finds
for the rest of the query, judged here by their attachments (``has:attachment``, ``filename:``) from the
summaries' structure, page after page until the page is full or the bound is reached."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mail_imap_mcp.envelope import Issue
from mail_imap_mcp.mail.cursors import PositionCursor, StreamCursor
from mail_imap_mcp.mail.ids import place_of as id_place
from mail_imap_mcp.mail.records import OrderedPage, SummaryRecord
from mail_imap_mcp.query import Query
from mail_imap_mcp.query.structure import structure_holds
from mail_imap_mcp.services.search_position import PositionPage

#: A page whose query tests attachments (without an index) judges at most this many of the server's
#: matches by their structure; a page cut by it says so and continues from there.
MAX_STRUCTURE_CANDIDATES = 200
#: ... reading at most this many of them a page (a page's summaries are fetched with them).
MAX_STRUCTURE_PAGE = 64


@dataclass
class PageRead:
    """What one run of a page read: the page, its summaries, the issues before and after its search, and
    the cursor continuing it."""

    page: OrderedPage | PositionPage
    messages: list[SummaryRecord]
    listed_issues: list[Issue]
    fetch_issues: list[Issue]
    next_cursor: StreamCursor | PositionCursor | None = None
    #: Messages the page tried to read, where not its picks (candidates judged by their structure).
    attempted: int | None = None
    #: Candidates judged by their structure when :data:`MAX_STRUCTURE_CANDIDATES` cut the page short.
    structure_cut: int | None = None


def place_of(summary: SummaryRecord) -> tuple[str, int]:
    """(mailbox, uid) of a summary, from its message id (the field every summary shape keeps)."""
    return id_place(summary.message_id)


def judged(
    read: PageRead,
    structure: Query,
    limit: int,
    read_next: Callable[[StreamCursor | PositionCursor, int], PageRead],
) -> PageRead:
    """The candidates of ``read`` and of as many next pages as it takes whose attachments pass
    ``structure``: up to ``limit``, at most :data:`MAX_STRUCTURE_CANDIDATES` judged. A next page asks
    twice as many candidates as the one before while they are sparse; one that holds more matches than
    the page has room for is read again up to the last match it takes (the same candidates: a next page
    reads the snapshot its cursor holds), so every candidate up to the cursor was judged and none is
    skipped."""
    judged = len(read.page.picks)
    kept = _passing(read, structure)
    unreadable = len(read.page.picks) - len(read.messages)
    fetch_issues = list(read.fetch_issues)
    last, size = read, limit
    while len(kept) < limit and last.next_cursor is not None:
        if judged >= MAX_STRUCTURE_CANDIDATES:
            read.structure_cut = judged
            break
        cursor, wanted = last.next_cursor, limit - len(kept)
        size = min(max(wanted, 2 * size), MAX_STRUCTURE_PAGE, MAX_STRUCTURE_CANDIDATES - judged)
        last = read_next(cursor, size)
        passing = _passing(last, structure)
        if len(passing) > wanted:
            last = read_next(cursor, _picks_up_to(last, passing[wanted - 1]))
            passing = _passing(last, structure)[:wanted]
        judged += len(last.page.picks)
        kept += passing
        unreadable += len(last.page.picks) - len(last.messages)
        fetch_issues += last.fetch_issues
        read.page.mailboxes = list(dict.fromkeys([*read.page.mailboxes, *last.page.mailboxes]))
        read.page.failed += [f for f in last.page.failed if f not in read.page.failed]
    read.messages, read.fetch_issues = kept, fetch_issues
    read.attempted = len(kept) + unreadable
    read.next_cursor = last.next_cursor
    return read


def _passing(read: PageRead, structure: Query) -> list[SummaryRecord]:
    """The messages of ``read`` whose attachments pass ``structure``, in page order."""
    return [m for m in read.messages if structure_holds(structure, m.attachment_names)]


def _picks_up_to(read: PageRead, message: SummaryRecord) -> int:
    """How many of ``read``'s picks come up to ``message``, it included."""
    place = place_of(message)
    return next(i for i, (mailbox, _, uid) in enumerate(read.page.picks, 1) if (mailbox, uid) == place)

"""A page of one mailbox's stream, as data: the mailbox offers candidates in the page's order, the page
takes the first ones and the stream moves past what it gave. Pure: no session;
:func:`~mail_imap_mcp.imap.sort.ordered_page` reads the candidates. (A page of several mailboxes is read
by one position: :mod:`.position`.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mail_imap_mcp.imap.mailbox_state import MailboxState
from mail_imap_mcp.mail.cursors import ANCHORS, SortOrder, StreamState


@dataclass
class Candidate:
    """A message a stream offers for the page, with its merge key (epoch seconds)."""

    uid: int
    key: int | None
    #: Without SORT, date order: the window the message was read in.
    window: tuple[int, int] = (0, 0)
    #: Place in the merged page.
    order: int = -1


@dataclass
class StreamPage:
    """What one mailbox offers for a page: candidates in its order, and whether more follow them."""

    state: StreamState
    mailbox_state: MailboxState | None = None
    candidates: list[Candidate] = field(default_factory=list)
    more_beyond: bool = False
    total: int = 0
    #: Without SORT: the date order of this mailbox spans several windows.
    windowed: bool = False
    taken: list[Candidate] = field(default_factory=list)

    @property
    def has_more(self) -> bool:
        return self.more_beyond or len(self.taken) < len(self.candidates)


def advance(state: StreamState, taken: list[Candidate], sort: SortOrder) -> None:
    """Move the stream past what this page took from it."""
    if not taken:
        return
    if sort == "arrival":  # continues below the last UID taken; nothing else is needed
        state.after = [taken[-1].uid]
        return
    # Date order keeps a few UIDs and the date key (None when not read: the summary supplies it).
    state.after = (state.after + [c.uid for c in taken])[-ANCHORS:]
    last = taken[-1]
    state.key = last.key
    if last.window != (0, 0):
        state.window_lo, state.window_hi = last.window


def take(
    page: StreamPage, limit: int, sort: SortOrder
) -> tuple[list[tuple[str, int, int]], StreamState | None]:
    """Take up to ``limit`` of the stream's candidates, in its order: the page's ``(mailbox, uidvalidity,
    uid)`` picks, and the stream moved past them when it continues on a next page (else None)."""
    page.taken = page.candidates[:limit]
    for order, candidate in enumerate(page.taken):
        candidate.order = order
    picks = [(page.state.mailbox, page.state.uidvalidity, candidate.uid) for candidate in page.taken]
    advance(page.state, page.taken, sort)
    return picks, page.state if page.has_more else None

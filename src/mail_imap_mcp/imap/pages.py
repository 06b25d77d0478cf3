"""A search page's reads (``mail/pages.py``) on one IMAP session: the listing with counts
(LIST-STATUS), a page of one mailbox by its stream (:mod:`.sort`), the pages of several from one position
(:mod:`.search.position`), and the summaries of every mailbox at once (:mod:`.across`), each in the
round trips those modules make. The local index syncs over IMAP alone: it runs on the session itself
(:func:`imap_session`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mail_imap_mcp.imap.across import summaries_each
from mail_imap_mcp.imap.errors import mailbox_failure
from mail_imap_mcp.imap.fetch import SummaryBatch
from mail_imap_mcp.imap.kept_open import listing_inbox_open
from mail_imap_mcp.imap.mailboxes import list_mailboxes
from mail_imap_mcp.imap.search.plan import reads_at_once
from mail_imap_mcp.imap.search.position import merge, tied_before
from mail_imap_mcp.imap.search.position_read import read_parts
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.imap.sort import ordered_page
from mail_imap_mcp.mail.directory import MailboxDirectory
from mail_imap_mcp.mail.mailboxes import MailboxInfo
from mail_imap_mcp.mail.pages import (
    IndexView,
    MailboxMatches,
    PageReads,
    PositionAsk,
    PositionRead,
    StreamAsk,
)
from mail_imap_mcp.mail.records import OrderedPage
from mail_imap_mcp.query import DIALECTS, Dialect, needs_utf8


class ImapPageReads:
    """One page's reads on ``session``, for ``account_id``."""

    def __init__(self, session: ImapSession, account_id: str) -> None:
        self.session = session
        self.account_id = account_id
        #: The mailbox the listing has just opened (INBOX), until a read of several mailboxes reads it.
        self.opened: str | None = None

    @property
    def name(self) -> str:
        return self.session.personality.name

    @property
    def search_dialects(self) -> Sequence[Dialect]:
        return self.session.personality.search_dialects

    @property
    def every_mailbox_is_one(self) -> bool:
        return self.session.personality.every_mailbox_is_one

    @property
    def selected_mailbox(self) -> str | None:
        # The one the listing has just opened (INBOX) has counts of now, not of an older view.
        selected = self.session.selected_mailbox
        return None if selected == self.opened else selected

    @property
    def has_labels(self) -> bool:
        return self.session.personality.has_labels

    @property
    def keeps_modseqs(self) -> bool:
        return self.session.profile.condstore

    @property
    def own_addresses(self) -> frozenset[str]:
        return self.session.own_addresses

    def mailboxes(self) -> list[MailboxInfo]:
        return list_mailboxes(self.session)

    def listing(self) -> list[MailboxInfo]:
        boxes = listing_inbox_open(self.session)
        self.opened = self.session.examined_now
        return boxes

    def index_view(self, name: str, listing: Callable[[], MailboxDirectory]) -> IndexView:
        return self.session.personality.index_view(name, listing)

    def shown_labels(self, stored: tuple[str, ...]) -> list[str] | None:
        return self.session.personality.labels_of({b"X-GM-LABELS": stored})

    def every_mailbox(self, directory: MailboxDirectory) -> list[str]:
        return self.session.personality.every_mailbox(directory)

    def ordered_page(self, ask: StreamAsk) -> OrderedPage:
        return ordered_page(self.session, ask, self.account_id)

    def position_read(self, ask: PositionAsk) -> PositionRead:
        search, position = ask.search, ask.position
        # One more than the page wants of each mailbox: a mailbox that holds more then offers more than
        # the page takes, so the merge knows whether a next page exists.
        found = read_parts(
            self.session,
            self.account_id,
            ask.mailboxes,
            DIALECTS[ask.dialect](search),
            ask.limit + 1,
            position,
            ask.sort,
            "UTF-8" if needs_utf8(search) else None,
            at_once=reads_at_once(search),
            opened=self.opened,
        )
        self.opened = None
        parts = [part for part, _ in found]
        # On a first page ``near`` holds only the matches read whole besides the sorted or banded ones.
        matches = [
            MailboxMatches(p.mailbox, p.index, p.uidvalidity, p.count + len(p.near), p.failure) for p in parts
        ]
        known = [trusted for part, trusted in found if part.failure is None and trusted is not None]
        merged = merge(known, ask.limit)
        tied = tied_before(parts, position) if position is not None else 0
        return PositionRead(matches, merged.picks, merged.next_position, tied)

    def summaries_each(
        self, wanted: Sequence[tuple[str, int, list[int]]], *, tag: str, snippet_chars: int, window: int
    ) -> list[SummaryBatch | Exception]:
        return summaries_each(
            self.session,
            self.account_id,
            wanted,
            tag=tag,
            snippet_chars=snippet_chars,
            raw_window_bytes=window,
        )

    def mailbox_failure(self, exc: Exception) -> Exception | None:
        return mailbox_failure(exc)


def imap_session(reads: PageReads) -> ImapSession:
    """The IMAP session ``reads`` run on, for the local index, which syncs over IMAP alone."""
    if not isinstance(reads, ImapPageReads):
        raise TypeError(f"the local index syncs over IMAP, not over {reads.name}")
    return reads.session

"""Search pages, whatever the protocol: the reads one page of imap_search_messages makes, run together
on one account (:class:`MailPages`). ``imap/pages.py`` implements them on one IMAP session, in the round
trips of the server's LIST, SEARCH, SORT and FETCH; the tests' in-memory backend
(``tests/support/mail/memory_pages.py``) implements them too, held to the same cases by
``tests/support/shared/mail_contract.py``.

The service (``services/search.py``) plans the page: which mailboxes, by one stream or one position,
its cursors and bounds; the backend answers each read in the mail domain's records.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, TypeVar

from mail_imap_mcp.envelope import Issue
from mail_imap_mcp.mail.cursors import StreamState
from mail_imap_mcp.mail.directory import MailboxDirectory
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.mailboxes import MailboxInfo
from mail_imap_mcp.mail.records import OrderedPage, SummaryRecord

if TYPE_CHECKING:
    from mail_imap_mcp.query import Dialect, Query

T = TypeVar("T")

#: The order a page of the server is in: arrival (INTERNALDATE), or the Date header (else arrival).
PageOrder = Literal["arrival", "date"]


def place(key: int, index: int, uid: int) -> tuple[int, int, int]:
    """A message's place in the order of a page of several mailboxes (ascending: newest first): its key
    newest first, then its mailbox's place in the search's list, then its UID."""
    return (-key, index, uid)


@dataclass(frozen=True)
class PagePosition:
    """The last message a page of several mailboxes took: its key (epoch seconds), its mailbox's place
    in the search's list, and its UID."""

    key: int
    index: int
    uid: int

    def passed(self, key: int, index: int, uid: int) -> bool:
        """Whether a message was listed by the page that ended here, or by one before it."""
        return place(key, index, uid) <= place(self.key, self.index, self.uid)


@dataclass(frozen=True)
class Matching:
    """What a page looks for: ``limit`` matches of ``search`` (in the server's ``dialect``), in
    ``sort`` order."""

    search: Query
    dialect: Dialect
    sort: PageOrder
    limit: int


@dataclass(frozen=True, kw_only=True)
class StreamAsk(Matching):
    """A page of one mailbox, after what ``stream`` took. ``strict`` (one mailbox named alone): the
    mailbox's failure raises, else it is the page's ``failed``; ``total``: the cursor's (None: a first
    page, which counts the matches); ``listed``: the mailboxes the run's listing showed."""

    stream: StreamState
    strict: bool
    total: int | None
    listed: frozenset[str] = frozenset()


@dataclass(frozen=True, kw_only=True)
class PositionAsk(Matching):
    """A page of several ``mailboxes`` ``(place in the search's list, name)`` after ``position``
    (None: a first page)."""

    mailboxes: tuple[tuple[int, str], ...]
    position: PagePosition | None


@dataclass
class MailboxMatches:
    """One mailbox's part of a page of several: its UIDVALIDITY (0: not read), how many of its messages
    match (on a first page: all of them), or the failure that ended its read."""

    mailbox: str
    index: int
    uidvalidity: int
    matches: int
    failure: Exception | None = None


@dataclass
class PositionRead:
    """The messages after a position in several mailboxes: each mailbox's part, the picks ``(mailbox
    index, uid, key)`` in page order, where a next page starts (None: this was the last), and how many
    messages share the position's key at or before it (:meth:`PageReads.position_read`)."""

    parts: list[MailboxMatches]
    picks: list[tuple[int, int, int]]
    next_position: PagePosition | None
    tied: int = 0


@dataclass(frozen=True)
class IndexView:
    """Where the local index finds a mailbox's messages: ``folder`` itself, or (``label`` set) the messages
    of ``folder`` that carry that label (Gmail: a label folder is All Mail's messages with the label)."""

    folder: str
    label: str | None = None


#: The code of the issue of a page's message gone before its summary was read.
GONE_MEANWHILE = "not_found"


def gone_meanwhile(ref: MessageRef) -> Issue:
    """The issue of ``ref``, a message of a page gone (expunged) before its summary was read."""
    message = f"UID {ref.uid} was expunged while the page was being read"
    return ref.issue(GONE_MEANWHILE, "fetch_headers", message, retryable=False)


class Summaries(Protocol):
    """The summaries read of one mailbox, and the issues of the messages that could not be read."""

    @property
    def messages(self) -> list[SummaryRecord]: ...
    @property
    def issues(self) -> list[Issue]: ...


class PageReads(Protocol):
    """The reads of one page, on one account, in one run (IMAP: one session)."""

    @property
    def name(self) -> str:
        """The name of the server's kind (its personality), for what cannot be answered."""
        ...

    @property
    def search_dialects(self) -> Sequence[Dialect]:
        """The query dialects the server's own search answers, best first."""
        ...

    @property
    def every_mailbox_is_one(self) -> bool:
        """Whether a search of every mailbox reads one mailbox (Gmail: All Mail)."""
        ...

    @property
    def selected_mailbox(self) -> str | None:
        """The mailbox the run has open, whose counts a listing may give from an older view."""
        ...

    @property
    def has_labels(self) -> bool:
        """Whether messages carry labels (Gmail)."""
        ...

    @property
    def keeps_modseqs(self) -> bool:
        """Whether the server keeps a MODSEQ of every change (CONDSTORE): a flag change shows in it."""
        ...

    @property
    def own_addresses(self) -> frozenset[str]:
        """The account's own addresses, lower-cased."""
        ...

    def mailboxes(self) -> list[MailboxInfo]:
        """Every mailbox of the account (no counts)."""
        ...

    def listing(self) -> list[MailboxInfo]:
        """Every mailbox of the account, with its message count where the listing gives it at once."""
        ...

    def index_view(self, name: str, listing: Callable[[], MailboxDirectory]) -> IndexView:
        """Where the local index finds the messages of mailbox ``name`` (``listing``: the account's
        mailboxes, asked only where the answer needs it)."""
        ...

    def shown_labels(self, stored: tuple[str, ...]) -> list[str] | None:
        """A message's labels as a summary shows them, from those the local index keeps (None: the
        server has no labels)."""
        ...

    def every_mailbox(self, directory: MailboxDirectory) -> list[str]:
        """The mailboxes of ``directory`` a search of every mailbox covers, in listing order."""
        ...

    def ordered_page(self, ask: StreamAsk) -> OrderedPage:
        """One page of the ask's mailbox after what its stream took, and the stream continuing it."""
        ...

    def position_read(self, ask: PositionAsk) -> PositionRead:
        """The first matches of the ask's mailboxes after its position, merged in :func:`place` order; a
        mailbox that fails is a failure in its own part, never the others'."""
        ...

    def summaries_each(
        self, wanted: Sequence[tuple[str, int, list[int]]], *, tag: str, snippet_chars: int, window: int
    ) -> Sequence[Summaries | Exception]:
        """The summaries of ``(mailbox, uidvalidity, uids)`` each, all asked at once (``tag``: the
        caller's in the ids; ``window``: how much of a text part a snippet reads): each mailbox's, or
        the failure that stopped its read."""
        ...

    def mailbox_failure(self, exc: Exception) -> Exception | None:
        """``exc`` as the failure of the one mailbox being read (a read of several goes on with the
        others); None when it ends the whole call."""
        ...


class MailPages(Protocol):
    """Pages of a search: one page's reads run together."""

    def pages(self, work: Callable[[PageReads], T]) -> T:
        """``work`` with one page's reads, in one run: run again as a whole where the backend's
        connection was lost (IMAP)."""
        ...

"""What the IMAP layer reads about messages, as plain records.

The tools turn them into the shapes the model sees (:mod:`mail_imap_mcp.presentation.shapes`): field
descriptions, compact forms and body rendering are presentation and live there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from mail_imap_mcp.envelope import Issue
from mail_imap_mcp.mail.cursors import StreamState

if TYPE_CHECKING:
    from mail_imap_mcp.mime import Part
    from mail_imap_mcp.mime.authentication import SenderWarning

#: The form a message body is asked for in; it also decides which text part is fetched.
BodyFormat = Literal["text", "markdown", "html"]


@dataclass(slots=True)
class SummaryRecord:
    """One message as its header fields, flags, size, structure and the start of its body describe it."""

    message_id: str
    message_uri: str
    message_raw_uri: str
    mailbox: str
    uidvalidity: int
    uid: int
    #: ISO 8601 UTC, from the Date header, else the server's INTERNALDATE.
    date: str | None
    from_: str | None
    to: str | None
    cc: str | None
    subject: str | None
    flags: list[str]
    size_bytes: int
    has_attachments: bool
    snippet: str | None
    #: The recipients (To and Cc) in a few words, "me" for the account's own addresses; "" when the
    #: message went to this account alone, None when not worked out.
    short_recipients: str | None = None
    #: Its Message-ID header (``<left@right>``), when it has one.
    header_message_id: str | None = None
    #: ISO 8601 UTC, the server's INTERNALDATE (when it arrived, by the server's clock), when known.
    arrived: str | None = None
    #: Its labels where the server has labels (Gmail: ``X-GM-LABELS``), else None.
    labels: list[str] | None = None
    #: The server's own id of the message, the same in every mailbox showing it (Gmail: X-GM-MSGID).
    identity: int | None = None
    #: The file names of its attachments (None: one without a name; bounded, see ``mime.summary``).
    attachment_names: tuple[str | None, ...] = ()
    #: What its From header tells worth a second look (``mime.summary``'s, bounded; empty: nothing).
    sender_warnings: tuple[SenderWarning, ...] = ()
    #: Why a search by meaning lists it: ``words``, ``meaning`` or ``both`` (None: another search).
    why: Literal["words", "meaning", "both"] | None = None


@dataclass(slots=True)
class MessageRecord:
    """One message as read: its summary (no snippet yet), the selected headers, the decoded text of the
    body parts it has (``html`` not sanitised) and its attachment parts (at most the listed number)."""

    summary: SummaryRecord
    headers: dict[str, str]
    text: str | None
    html: str | None
    #: The body part is larger than the fetch cap: only its beginning was read.
    fetch_truncated: bool
    attachments: list[Part]
    #: What says who sent it, whatever headers were asked for: From, Reply-To and
    #: Authentication-Results, decoded, top to bottom (lower-case names).
    sender_headers: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class SearchPage:
    """One page of a search as data: what it found, where it continues and what could not be read.
    Made by the search service (``services/search.py``); ``presentation/search_page.py`` turns it into the
    tool's answer."""

    account_id: str
    #: The mailbox searched, as given (``services.search.searched_label``).
    label: str
    #: One mailbox named alone: its errors were the call's, every issue is a message.
    strict: bool
    #: Mailboxes this page searched.
    mailboxes: list[str]
    total: int
    #: Messages the earlier pages of this search returned.
    returned_before: int
    #: Messages this page tried to read (those that could not be read are in the issues).
    attempted: int
    messages: list[SummaryRecord]
    next_cursor: str | None
    #: Before the search: mailboxes left out of a search of every mailbox (too many).
    listed_issues: list[Issue]
    #: Mailboxes that could not be searched, and why (the others' matches are in the page).
    failed: list[tuple[str, Exception]]
    #: Mailboxes or messages whose summaries could not be read.
    fetch_issues: list[Issue]
    #: Date order without SORT: exact within blocks of :data:`~mail_imap_mcp.imap.sort.DATE_WINDOW`.
    windowed: bool
    #: What the page must say besides its issues (the local index: building, behind, unavailable).
    warnings: list[str] = field(default_factory=list)
    #: Best match first (the local index's ranking), not newest first.
    ranked: bool = False
    #: ``total`` counts an index that is behind the server in some mailbox (said in ``warnings``): about.
    total_approximate: bool = False
    #: A query with attachment tests (``has:attachment``, ``filename:``) judged this many of the server's
    #: matches by their structure and stopped at its bound before the page was full (None: not cut).
    structure_cut: int | None = None


@dataclass
class OrderedPage:
    """A page of one mailbox: ``(mailbox, uidvalidity, uid)`` in the page's order, plus what continues it."""

    picks: list[tuple[str, int, int]]
    total: int
    #: The stream that continues on a next page (None: this was the last page).
    next_stream: StreamState | None
    #: The mailboxes that could not be searched, and why (see :func:`~mail_imap_mcp.imap.errors.mailbox_failure`).
    failed: list[tuple[str, Exception]] = field(default_factory=list)
    windowed: bool = False
    mailboxes: list[str] = field(default_factory=list)

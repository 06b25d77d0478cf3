"""A search page's reads (``mail/pages.py``) on mail kept in memory (:class:`~.memory_mail.MemoryMail`), for
tests only: the listing with every mailbox's counts (as LIST-STATUS gives them), a page of one mailbox by
its stream, the pages of several from one position, and the summaries, in the orders a server with SORT
gives (arrival: UID descending; date: the Date header, else the arrival, newest first, then UID
descending). tests/support/shared/mail_contract.py holds it to what the real servers answer.
"""

from __future__ import annotations

import email.utils
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from mail_imap_mcp.imap.fetch import SummaryBatch
from mail_imap_mcp.mail.cursors import StreamState
from mail_imap_mcp.mail.directory import MailboxDirectory
from mail_imap_mcp.mail.errors import MailboxMissing, MailError, UidValidityChanged
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.mailboxes import MailboxCounts, MailboxInfo
from mail_imap_mcp.mail.pages import (
    IndexView,
    MailboxMatches,
    PageOrder,
    PagePosition,
    PositionAsk,
    PositionRead,
    StreamAsk,
    gone_meanwhile,
    place,
)
from mail_imap_mcp.mail.records import OrderedPage
from mail_imap_mcp.query import Dialect

if TYPE_CHECKING:
    from tests.support.mail.memory_mail import MemoryMail, StoredMailbox, StoredMessage


def sort_key(message: StoredMessage, sort: PageOrder) -> int:
    """A message's key in ``sort`` order (epoch seconds): its arrival, or its Date header else its arrival
    (RFC 5256's sent date)."""
    arrived = int(message.arrived.timestamp())
    if sort == "arrival":
        return arrived
    written = message.parsed().get("Date")
    try:
        return int(email.utils.parsedate_to_datetime(str(written)).timestamp()) if written else arrived
    except (TypeError, ValueError):
        return arrived


class MemoryPageReads:
    """One page's reads on ``mail``."""

    name = "memory"
    search_dialects: Sequence[Dialect] = ("imap",)
    every_mailbox_is_one = False
    selected_mailbox: str | None = None

    def __init__(self, mail: MemoryMail) -> None:
        self.mail = mail

    has_labels = False
    keeps_modseqs = True

    @property
    def own_addresses(self) -> frozenset[str]:
        return frozenset()

    def mailboxes(self) -> list[MailboxInfo]:
        return self.mail.mailboxes()

    def index_view(self, name: str, listing: Callable[[], MailboxDirectory]) -> IndexView:
        return IndexView(name)

    def shown_labels(self, stored: tuple[str, ...]) -> list[str] | None:
        return None

    def listing(self) -> list[MailboxInfo]:
        boxes = self.mail.mailboxes()
        for box in boxes:
            status = self.mail.status(box.name)
            box.counts = MailboxCounts(status.messages, status.unseen, status.uidvalidity, status.uidnext)
        return boxes

    def every_mailbox(self, directory: MailboxDirectory) -> list[str]:
        return directory.searchable()

    def ordered_page(self, ask: StreamAsk) -> OrderedPage:
        stream, sort, limit, total = ask.stream, ask.sort, ask.limit, ask.total
        try:
            box = self._opened(stream.mailbox, stream.uidvalidity)
        except MailError as exc:
            if ask.strict:
                raise
            return OrderedPage(picks=[], total=total or 0, next_stream=None, failed=[(stream.mailbox, exc)])
        upper = stream.upper or box.uidnext - 1
        matches = [uid for uid in self.mail.search(box.name, ask.search) if uid <= upper]
        # One mailbox in arrival order is in UID order, newest first; in date order by its sent date.
        keys = {uid: sort_key(box.messages[uid], sort) if sort == "date" else uid for uid in matches}
        order = sorted(matches, key=lambda uid: (-keys[uid], -uid))
        start = 0
        if stream.after:  # right after the last message taken, where it is gone too
            last = stream.after[-1]
            mark = (-(stream.key if stream.key is not None and sort == "date" else last), -last)
            start = next((i for i, uid in enumerate(order) if (-keys[uid], -uid) > mark), len(order))
        taken = order[start : start + limit]
        ongoing = None
        if taken and start + limit < len(order):
            key = keys[taken[-1]] if sort == "date" else None
            ongoing = StreamState(box.name, box.uidvalidity, upper, [taken[-1]], key)
        return OrderedPage(
            picks=[(box.name, box.uidvalidity, uid) for uid in taken],
            total=total if total is not None else len(order),
            next_stream=ongoing,
            mailboxes=[box.name],
        )

    def position_read(self, ask: PositionAsk) -> PositionRead:
        position, limit = ask.position, ask.limit
        parts: list[MailboxMatches] = []
        every: list[tuple[int, int, int]] = []  # (key, index, uid)
        for index, name in ask.mailboxes:
            try:
                box = self._opened(name, 0)
                uids = self.mail.search(name, ask.search)
            except MailboxMissing as exc:
                parts.append(MailboxMatches(name, index, 0, 0, exc))
                continue
            parts.append(MailboxMatches(name, index, box.uidvalidity, len(uids)))
            every += [(sort_key(box.messages[uid], ask.sort), index, uid) for uid in uids]
        every.sort(key=lambda message: place(*message))
        after = [m for m in every if position is None or not position.passed(*m)]
        picks = [(index, uid, key) for key, index, uid in after[:limit]]
        following = None
        if len(after) > limit:
            index, uid, key = picks[-1]
            following = PagePosition(key, index, uid)
        tied = 0
        if position is not None:
            tied = sum(1 for m in every if m[0] == position.key and position.passed(*m))
        return PositionRead(parts, picks, following, tied)

    def summaries_each(
        self, wanted: Sequence[tuple[str, int, list[int]]], *, tag: str, snippet_chars: int, window: int
    ) -> list[SummaryBatch | Exception]:
        found: list[SummaryBatch | Exception] = []
        for mailbox, uidvalidity, uids in wanted:
            try:
                box = self._opened(mailbox, uidvalidity)
            except MailError as exc:
                found.append(exc)
                continue
            refs = [MessageRef(self.mail.account_id, mailbox, uidvalidity, uid, tag) for uid in uids]
            issues = [gone_meanwhile(ref) for ref in refs if ref.uid not in box.messages]
            found.append(SummaryBatch(self.mail.summaries(mailbox, uids, snippet_chars, tag), issues))
        return found

    def mailbox_failure(self, exc: Exception) -> Exception | None:
        return exc if isinstance(exc, MailError) and not exc.ends_call else None

    def _opened(self, mailbox: str, uidvalidity: int) -> StoredMailbox:
        """The mailbox as EXAMINE opens it: :class:`MailboxMissing` where there is none,
        :class:`UidValidityChanged` where it is no longer the one of ``uidvalidity`` (0: any)."""
        box = self.mail.kept(mailbox)
        if uidvalidity and box.uidvalidity != uidvalidity:
            raise UidValidityChanged(uidvalidity, box.uidvalidity, mailbox)
        return box

"""Reads the mailboxes of a position page (:mod:`.position`).

Every mailbox at once where the query needs no literal: the first round trip sends every mailbox's
EXAMINE and its reads (the newest matches by arrival or date, and on a next page the matches of the days
around the position), the second the sort keys of what the page needs of them, each behind a check that
the mailbox is still the one examined (UIDVALIDITY). A query with non-ASCII text (``CHARSET UTF-8``, whose
literals wait for the server's continuation) reads the same, one mailbox after the other. Where many
messages share one key at the end of what was read, further reads bring more keys (and, after an ESORT
slice, the whole sorted list first). A mailbox that fails is a failure in its own part, never the
others'.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Protocol

from mail_imap_mcp.imap import parsing, wire
from mail_imap_mcp.imap.errors import mailbox_failure
from mail_imap_mcp.imap.pipeline import Command, MailboxRead, read_each
from mail_imap_mcp.imap.search.execute import KEY_ITEMS, internal_keys, response_key
from mail_imap_mcp.imap.search.position import (
    MailboxPart,
    Read,
    Trusted,
    mailbox_reads,
    partial_answer,
    trusted,
)
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.imap.uidplus import format_uid_set
from mail_imap_mcp.mail.errors import UidValidityChanged
from mail_imap_mcp.mail.pages import PagePosition


class Transport(Protocol):
    """How the reads reach the server: all mailboxes at once, or one after the other. Each sets what it
    read on the parts, or the failure that ends a part."""

    def first(self, parts: list[MailboxPart], reads: list[Read]) -> None: ...
    def resort(self, parts: list[MailboxPart], read: Read) -> None: ...
    def keys(self, asks: list[tuple[MailboxPart, list[int]]]) -> None: ...


def read_parts(
    session: ImapSession,
    account_id: str,
    mailboxes: Sequence[tuple[int, str]],
    criteria: Sequence[bytes | str | int],
    wanted: int,
    position: PagePosition | None,
    sort: str,
    charset: str | None = None,
    *,
    at_once: bool = True,
    opened: str | None = None,
) -> list[tuple[MailboxPart, Trusted | None]]:
    """Each of ``mailboxes`` (place in the search's list, name): its part of the page in ``sort`` order
    and what of it is known to come next (None where it failed). ``opened``: the mailbox this call's
    listing has just EXAMINEd, still selected: read without another EXAMINE."""
    partial, sorts = session.profile.sorts_partially, session.profile.sorts
    today = datetime.now(UTC).date()
    reads = mailbox_reads(wanted, position, partial=partial, sort=sort, sorts=sorts, today=today)
    whole = mailbox_reads(wanted, position, partial=False, sort=sort, sorts=sorts, today=today)[-1]
    parts = [MailboxPart(name, index) for index, name in mailboxes]
    if at_once:
        tokens = wire.search_args(list(criteria), None)
        transport = _AllAtOnce(session, account_id, tokens, sort, partial, opened)
        return _read(transport, parts, reads, whole, wanted, position)
    # One mailbox after the other: each is read to its end while it is selected (its keys need no second
    # EXAMINE), then the next.
    one = _OneByOne(session, list(criteria), charset, sort, partial)
    return [found for part in parts for found in _read(one, [part], reads, whole, wanted, position)]


def _read(
    transport: Transport,
    parts: list[MailboxPart],
    reads: list[Read],
    whole: Read,
    wanted: int,
    position: PagePosition | None,
) -> list[tuple[MailboxPart, Trusted | None]]:
    """``parts`` read through ``transport`` until each knows what comes next (or failed)."""
    transport.first(parts, reads)
    found: dict[int, Trusted | None] = {}
    pending = [part for part in parts if part.failure is None]
    while pending:
        transport.resort([part for part in pending if part.needs_order(wanted)], whole)
        goals = {id(part): part.keys_to_read(wanted) for part in pending if part.failure is None}
        transport.keys([(p, goals[id(p)][1]) for p in pending if p.failure is None and goals[id(p)][1]])
        for part in pending:
            if part.failure is None:
                part.keyed = goals[id(part)][0]
                found[part.index] = trusted(part, position, wanted)
        # A part with nothing more to read is as complete as it gets (never read again in a loop).
        pending = [p for p in pending if p.failure is None and found[p.index] is None and goals[id(p)][1]]
    for part in parts:  # a server that keeps answering less than it counted: what it gave, as it is
        if part.failure is None and found.get(part.index) is None:
            found[part.index] = trusted(replace(part, count=part.keyed), position, wanted)
    return [(part, found.get(part.index)) for part in parts]


def _take(part: MailboxPart, read: Read, answer: list[object], partial: bool) -> None:
    if read.kind != "top":
        _take_searched(part, read, parsing.search_uids(list(answer)))
    elif partial:
        part.order, count = partial_answer(answer)
        part.count = count if count is not None else len(part.order)
    else:
        part.order = parsing.search_uids(list(answer))
        part.count = len(part.order)


def _take_searched(part: MailboxPart, read: Read, uids: list[int]) -> None:
    """What a ``UID SEARCH`` read found: matches whose keys are all read, or a band of days."""
    if read.kind == "band":
        part.take_band(uids, read.floor)
    else:
        part.near.extend(uid for uid in uids if uid not in part.near)


@dataclass
class _AllAtOnce:
    """Every mailbox's commands in one round trip (:mod:`mail_imap_mcp.imap.pipeline`), each further read
    checked to be on the mailbox examined first (UIDVALIDITY)."""

    session: ImapSession
    account_id: str
    tokens: list[bytes]
    sort: str
    partial: bool
    opened: str | None = None

    def first(self, parts: list[MailboxPart], reads: list[Read]) -> None:
        commands = [self._command(read, self.partial) for read in reads]
        # The mailbox the listing has just opened (INBOX: imap/kept_open.py) goes first, read without a
        # second EXAMINE; once only: a read again must see what came meanwhile.
        opened, self.opened = self.opened, None
        if opened != self.session.examined_now:
            opened = None
        parts = sorted(parts, key=lambda part: part.mailbox != opened)
        sent = [MailboxRead(part.mailbox, commands, examine=part.mailbox != opened) for part in parts]
        for part, reply in zip(parts, read_each(self.session, self.account_id, sent), strict=True):
            part.uidvalidity = reply.state.uidvalidity if reply.state is not None else 0
            part.failure = reply.failure
            if part.failure is None:
                for read, answer in zip(reads, reply.answers, strict=True):
                    _take(part, read, answer, self.partial)

    def resort(self, parts: list[MailboxPart], read: Read) -> None:
        for part, answer in self._again([(part, self._command(read, False)) for part in parts]):
            _take(part, read, answer, False)

    def keys(self, asks: list[tuple[MailboxPart, list[int]]]) -> None:
        items = KEY_ITEMS[self.sort]
        for part, answer in self._again([(p, Command.fetch(format_uid_set(u), items)) for p, u in asks]):
            if self.sort == "arrival":
                keys = internal_keys(self.session, answer)
            else:
                parsed = self.session.client.parse_fetch(answer)
                keys = {uid: response_key(response, self.sort) for uid, response in parsed.items()}
            part.keys.update({uid: key or 0 for uid, key in keys.items()})

    def _again(self, asks: list[tuple[MailboxPart, Command]]) -> list[tuple[MailboxPart, list[object]]]:
        if not asks:
            return []
        sent = [MailboxRead(part.mailbox, [command], part.uidvalidity) for part, command in asks]
        answered = []
        for (part, _), reply in zip(asks, read_each(self.session, self.account_id, sent), strict=True):
            if reply.failure is not None:
                part.failure = reply.failure
            else:
                answered.append((part, reply.answers[0]))
        return answered

    def _command(self, read: Read, partial: bool) -> Command:
        if read.kind != "top":
            return Command((b"SEARCH", *self.tokens, *read.tail), "SEARCH")
        args = (b"SORT", *read.head, b"US-ASCII", *(self.tokens or [b"ALL"]), *read.tail)
        return Command(args, "ESEARCH" if partial else "SORT")


@dataclass
class _OneByOne:
    """One mailbox after the other, each command waiting for its answer (a literal waits for the
    server's continuation), each further read on the mailbox examined again and checked to be the one
    read first (UIDVALIDITY)."""

    session: ImapSession
    criteria: list[bytes | str | int]
    charset: str | None
    sort: str
    partial: bool

    def first(self, parts: list[MailboxPart], reads: list[Read]) -> None:
        for part in parts:
            with _failing(part):
                part.uidvalidity = self.session.examine(part.mailbox).uidvalidity
                for read in reads:
                    criteria = [*self.criteria, *read.tail]
                    if read.kind != "top":
                        _take_searched(part, read, self.session.uid_search(criteria, charset=self.charset))
                    else:
                        self._sort(part, read, self.partial)

    def resort(self, parts: list[MailboxPart], read: Read) -> None:
        for part in parts:
            with _failing(part):
                self._examine(part)
                self._sort(part, read, False)

    def keys(self, asks: list[tuple[MailboxPart, list[int]]]) -> None:
        for part, uids in asks:
            with _failing(part):
                self._examine(part)
                fetched = self.session.fetch_range(uids, KEY_ITEMS[self.sort])
                keys = {uid: response_key(response, self.sort) for uid, response in fetched.items()}
                part.keys.update({uid: key or 0 for uid, key in keys.items()})

    def _examine(self, part: MailboxPart) -> None:
        state = self.session.examine(part.mailbox)
        if state.uidvalidity != part.uidvalidity:
            raise UidValidityChanged(part.uidvalidity, state.uidvalidity, part.mailbox)

    def _sort(self, part: MailboxPart, read: Read, partial: bool) -> None:
        criteria = [*self.criteria, *read.tail]
        answer = self.session.uid_sort(list(read.head), criteria, charset=self.charset, partial=partial)
        _take(part, read, answer, partial)


@contextmanager
def _failing(part: MailboxPart) -> Iterator[None]:
    """A failure of the mailbox alone ends its part (it leaves the page); anything else ends the call."""
    try:
        yield
    except Exception as exc:
        failure = mailbox_failure(exc)
        if failure is None:
            raise
        part.failure = failure

"""The newest matches of many mailboxes in a few round trips, whatever their number (arrival order).

:func:`newest_in_each` reads every mailbox of a merged page at once through :mod:`.pipeline`: one
round trip sends, for each mailbox, ``EXAMINE`` and its first UID window's search, and a second one
(only for a filter) the INTERNALDATE of each mailbox's candidates, the merge key. Without a filter the
window is read by ``UID FETCH lo:* (INTERNALDATE)``, which gives the UIDs and their keys at once. On a
first page the window is sized from what LIST-STATUS or STATUS said of the mailbox (UIDNEXT, MESSAGES);
a filtered first page reads every match in one scan, whose number is the total: one ``UID SEARCH`` of
a mailbox the first window spans, else ``UID SEARCH RETURN (COUNT ALL)`` where ESEARCH is offered (a
compact UID set) or one plain ``UID SEARCH`` (what the one-mailbox plan reads too). On a later page a
mailbox whose window held too few matches is read again in a wider window below it, every such mailbox
in the same round trip.

The answers are those of :meth:`mail_imap_mcp.imap.sort.StreamSearch.open` mailbox by mailbox: the same
windows' rules, the same snapshot (``upper``), the same totals; a mailbox that fails is one failure in
its own result, never the others'.
"""

from __future__ import annotations

import calendar
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mail_imap_mcp.imap import parsing, wire
from mail_imap_mcp.imap.errors import MailboxGone, MailboxMissing, UidValidityChanged
from mail_imap_mcp.imap.fetch import SummaryBatch, SummaryRequests, fetch_summaries, summary_requests
from mail_imap_mcp.imap.mailboxes import MailboxCounts
from mail_imap_mcp.imap.pipeline import Command, MailboxRead, MailboxReply, read_each
from mail_imap_mcp.imap.search import UidWindows, newest_of
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.imap.uidplus import format_uid_set
from mail_imap_mcp.imap.view import MailboxState

_KEY_ITEMS = ["INTERNALDATE"]


def epoch(moment: datetime | None) -> int | None:
    """A sort key: ``moment`` in epoch seconds (imapclient gives local naive time when the server's zone
    is unknown)."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return int(moment.astimezone(UTC).timestamp())


#: A line of an INTERNALDATE-only ``UID FETCH`` answer as imaplib keeps it (``* `` and ``FETCH`` gone).
_KEY_LINE = re.compile(rb'\d+ \((?:UID (\d+) INTERNALDATE "([^"]*)"|INTERNALDATE "([^"]*)" UID (\d+))\)')
_DATE_TIME = re.compile(rb" ?(\d{1,2})-([A-Za-z]{3})-(\d{4}) (\d\d):(\d\d):(\d\d) ([+-])(\d\d)(\d\d)")
_MONTHS = {name.encode(): number for number, name in enumerate(calendar.month_abbr) if name}


def internal_keys(session: ImapSession, answer: Sequence[object]) -> dict[int, int | None]:
    """UID -> INTERNALDATE (epoch seconds) of an INTERNALDATE-only ``UID FETCH`` answer.

    A page across 40 mailboxes reads about a thousand such lines, which imapclient's general parser
    takes 2-3 ms per hundred to read: lines of the usual shape are read here, any other (an unsolicited
    FLAGS update, an unexpected spacing) goes through imapclient's parser; the keys are the same."""
    keys: dict[int, int | None] = {}
    others = []
    for item in answer:
        line = _KEY_LINE.fullmatch(item) if isinstance(item, bytes) else None
        key = _date_time_key(line.group(2) or line.group(3)) if line else None
        if line is None or key is None:
            others.append(item)
        else:
            keys[int(line.group(1) or line.group(4))] = key
    for uid, data in session.client.parse_fetch(others).items() if others else ():
        if b"INTERNALDATE" in data:
            keys[uid] = epoch(data[b"INTERNALDATE"])
    return keys


@functools.lru_cache(maxsize=4096)
def _date_time_key(text: bytes) -> int | None:
    """An IMAP date-time (``01-Jan-2025 10:00:00 +0100``) in epoch seconds; None when not one. Kept:
    a page of every folder reads a thousand of them, and the next calls read the same ones again."""
    found = _DATE_TIME.fullmatch(text)
    month = _MONTHS.get(found.group(2).capitalize()) if found else None
    if found is None or month is None:
        return None
    day, _, year, hour, minute, second, sign, zone_h, zone_m = found.groups()
    local = calendar.timegm((int(year), month, int(day), int(hour), int(minute), int(second)))
    offset = (int(zone_h) * 3600 + int(zone_m) * 60) * (1 if sign == b"+" else -1)
    return local - offset


@dataclass
class StreamStart:
    """Where one mailbox's stream starts this page."""

    mailbox: str
    #: The cursor's UIDVALIDITY and snapshot; 0 on a first page.
    uidvalidity: int = 0
    upper: int = 0
    #: Continue below this UID (None: from the newest).
    below: int | None = None
    #: What LIST-STATUS or STATUS said of it before it was opened (a first page's window size).
    hint: MailboxCounts | None = None

    @property
    def first(self) -> bool:
        return not self.uidvalidity


@dataclass
class Newest:
    """One mailbox's newest matches (UIDs newest first, as the windows found them) and their keys."""

    state: MailboxState
    uids: list[int]
    keys: dict[int, int | None]
    #: Matches on a first page (0 on later pages: the cursor keeps the total).
    total: int
    #: The snapshot's highest UID.
    upper: int


@dataclass
class _Stream:
    start: StreamStart
    #: The windows read (:mod:`.search.plan`: the same rules as the one-mailbox plan).
    windows: UidWindows
    state: MailboxState | None = None
    keys: dict[int, int | None] = field(default_factory=dict)
    total: int = 0
    failure: Exception | None = None
    #: A filtered first page's one scan of the whole mailbox: its matches are the total.
    whole: bool = False
    #: ... by ``RETURN (COUNT ALL)`` (ESEARCH, a mailbox larger than its first window).
    counted_all: bool = False


def newest_in_each(
    session: ImapSession,
    account_id: str,
    starts: Sequence[StreamStart],
    criteria: list[bytes | str | int],
    wanted: int,
) -> list[Newest | Exception]:
    """For each of ``starts``, in order, up to about ``wanted`` newest matches of ``criteria`` (no
    CHARSET text: the commands go out pipelined), with their INTERNALDATE keys; or what failed there."""
    tokens = wire.search_args(criteria, None)
    esearch = session.profile.esearch
    streams = [_begin(start, wanted, bool(criteria)) for start in starts]
    reads = []
    for stream in streams:
        # A filtered first page: one scan for the total and the matches (see the module's docstring).
        stream.whole = stream.start.first and bool(criteria)
        stream.counted_all = stream.whole and esearch and stream.windows.lo > 1
        commands = [] if stream.windows.done else [_window(stream, tokens)]
        reads.append(MailboxRead(stream.start.mailbox, commands, stream.start.uidvalidity or None))
    for stream, reply in zip(streams, read_each(session, account_id, reads), strict=True):
        _take_first(stream, reply, session, criteria, wanted)
    while waiting := [s for s in streams if not s.windows.done and s.failure is None]:
        for stream in waiting:
            stream.windows.widen()
        reads = [_reread(stream, [_window(stream, tokens)]) for stream in waiting]
        for stream, reply in zip(waiting, read_each(session, account_id, reads), strict=True):
            if _failed(stream, reply):
                continue
            _take_window(stream, reply.answers[0], session, bool(criteria))
    _read_keys(session, account_id, [s for s in streams if s.failure is None], wanted)
    return [_result(stream) for stream in streams]


def _begin(start: StreamStart, wanted: int, filtered: bool) -> _Stream:
    """The first window of ``start``'s stream, sized as the one-mailbox plan sizes it."""
    if start.hint is not None and start.hint.uidnext is not None:
        uidnext, exists = start.hint.uidnext, start.hint.messages or 0
    else:  # a later page: the snapshot from the cursor; density unknown, taken as 1
        uidnext, exists = start.upper + 1, start.upper
    state = MailboxState(start.mailbox, 0, uidnext, exists)
    upper = start.upper or None
    return _Stream(start, UidWindows.start(state, wanted, filtered=filtered, below=start.below, upper=upper))


def _window(stream: _Stream, tokens: list[bytes]) -> Command:
    """The command reading the stream's window: the search, or without a filter the keys of its UIDs."""
    if stream.whole:
        return Command.search(tokens, counted=stream.counted_all)
    uid_set = stream.windows.uid_set()
    if not tokens:
        return Command.fetch(uid_set, _KEY_ITEMS)
    return Command.search([b"UID", uid_set.encode("ascii"), *tokens])


def _reread(stream: _Stream, commands: list[Command]) -> MailboxRead:
    assert stream.state is not None
    return MailboxRead(stream.start.mailbox, commands, stream.state.uidvalidity)


def _failed(stream: _Stream, reply: MailboxReply) -> bool:
    if reply.failure is not None:
        stream.failure = reply.failure
    elif reply.state is not None:
        stream.state = reply.state
    return stream.failure is not None


def _take_first(
    stream: _Stream,
    reply: MailboxReply,
    session: ImapSession,
    criteria: list[bytes | str | int],
    wanted: int,
) -> None:
    if _failed(stream, reply):
        return
    assert stream.state is not None
    answers, windows = reply.answers, stream.windows
    if stream.start.first:
        if stream.state.exists == 0:  # nothing to search: the snapshot ends at UIDNEXT
            windows.upper, windows.done = max(stream.state.uidnext - 1, 0), True
            return
        if not criteria:
            stream.total = stream.state.exists
    if not answers:  # nothing below the cursor's anchor
        windows.done = True
        return
    if stream.counted_all:  # every match as runs: the newest taken, never the whole set expanded
        stream.total, windows.done = parsing.search_count(answers[0]), True
        windows.matches = newest_of(parsing.search_all_runs(answers[0]), wanted + 1)
        windows.upper = max([max(stream.state.uidnext - 1, 1), *windows.matches[:1]])
        return
    if stream.whole:
        windows.lo = 1
    _take_window(stream, answers[0], session, bool(criteria))
    if stream.whole:
        stream.total = len(windows.matches)


def _take_window(stream: _Stream, answer: list[object], session: ImapSession, filtered: bool) -> None:
    """The matches of the window just read (a search's UIDs, or without a filter the UIDs whose keys
    were read), kept by the windows' rules."""
    assert stream.state is not None
    if filtered:
        found = parsing.search_uids(list(answer))
    else:
        keys = internal_keys(session, answer)
        stream.keys.update(keys)
        found = list(keys)
    stream.windows.take(found, stream.state.uidnext)


def _read_keys(session: ImapSession, account_id: str, streams: list[_Stream], wanted: int) -> None:
    """The INTERNALDATE of every candidate still without one (a filtered search's), one round trip for
    all mailboxes."""
    needing = [s for s in streams if any(uid not in s.keys for uid in s.windows.matches[:wanted])]
    reads = [
        _reread(s, [Command.fetch(format_uid_set(sorted(set(s.windows.matches[:wanted]))), _KEY_ITEMS)])
        for s in needing
    ]
    for stream, reply in zip(needing, read_each(session, account_id, reads), strict=True):
        if _failed(stream, reply):
            continue
        keys = internal_keys(session, reply.answers[0])
        for uid in stream.windows.matches[:wanted]:
            stream.keys[uid] = keys.get(uid)


def _result(stream: _Stream) -> Newest | Exception:
    if stream.failure is not None:
        return stream.failure
    assert stream.state is not None
    windows = stream.windows
    return Newest(stream.state, windows.matches, stream.keys, stream.total, windows.upper or 0)


def summaries_each(
    session: ImapSession,
    account_id: str,
    wanted: Sequence[tuple[str, int, list[int]]],
    *,
    snippet_chars: int,
    raw_window_bytes: int,
) -> list[SummaryBatch | Exception]:
    """The summaries of ``(mailbox, uidvalidity, uids)`` each, in one round trip for all mailboxes: the
    one this call has selected first without EXAMINE, then each other one's EXAMINE and FETCH. A
    mailbox that failed (gone, recreated) gives its exception; one whose FETCH the server refused is
    read again alone, as :func:`~mail_imap_mcp.imap.fetch.fetch_summaries` reads one mailbox (message by
    message if need be)."""
    current = session.selected_mailbox
    order = sorted(range(len(wanted)), key=lambda index: wanted[index][0] != current)
    plans = {index: summary_requests(session, *wanted[index], snippet_chars) for index in order}
    reads = [
        MailboxRead(
            wanted[index][0],
            [Command.fetch(wire.uid_list(uids), items) for uids, items in plans[index].requests],
            wanted[index][1],
            examine=wanted[index][0] != current,
        )
        for index in order
    ]
    results: dict[int, SummaryBatch | Exception] = {}
    for index, reply in zip(order, read_each(session, account_id, reads), strict=True):
        try:
            if isinstance(reply.failure, MailboxMissing | MailboxGone | UidValidityChanged):
                raise reply.failure
            fetched: dict[int, dict[bytes, Any]] | None = None
            if reply.failure is None:  # else the server refused the FETCH: read alone, below
                fetched = {}
                for answer in reply.answers:
                    fetched.update(session.client.parse_fetch(answer))
            results[index] = _summaries_of(
                session, account_id, wanted[index], plans[index], fetched, snippet_chars, raw_window_bytes
            )
        except Exception as exc:  # the caller decides whether it ends the call (mailbox_failure)
            results[index] = exc
    return [results[index] for index in range(len(wanted))]


def _summaries_of(
    session: ImapSession,
    account_id: str,
    wanted: tuple[str, int, list[int]],
    plan: SummaryRequests,
    fetched: dict[int, dict[bytes, Any]] | None,
    snippet_chars: int,
    raw_window_bytes: int,
) -> SummaryBatch:
    """One mailbox's summaries from its answers in the batch, or (``fetched`` None) read alone."""
    mailbox, uidvalidity, uids = wanted
    if fetched is None:
        session.examine_ahead(mailbox, uidvalidity=uidvalidity)
    return fetch_summaries(
        session,
        account_id=account_id,
        mailbox=mailbox,
        uidvalidity=uidvalidity,
        uids=uids,
        snippet_chars=snippet_chars,
        raw_window_bytes=raw_window_bytes,
        fetched=None if fetched is None else (plan, {uid: fetched[uid] for uid in uids if uid in fetched}),
    )

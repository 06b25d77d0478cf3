"""The one executor of a search's reads: it sends what :mod:`.plan` asks and hands the answers back.

Every mailbox of a merged page is read at once (:mod:`mail_imap_mcp.imap.pipeline`): one round trip sends,
for each mailbox, ``EXAMINE`` and its first reads, a second one (only while a window held too few
matches) the wider windows of every such mailbox, and a last one (only for a filter) the INTERNALDATE of
each mailbox's candidates, the merge key. A page of one mailbox, or a query with non-ASCII text (a
CHARSET search sends a literal, which waits for the server's continuation), reads one mailbox after the
other: EXAMINE first, so its first window is sized from what EXAMINE said. Which of the two, this module
decides (:func:`~.plan.reads_at_once`), nowhere else. A mailbox that fails is one failure in its own
result, never the others'.
"""

from __future__ import annotations

import calendar
import functools
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime

from mail_imap_mcp import mime
from mail_imap_mcp.imap import parsing, wire
from mail_imap_mcp.imap.errors import UidValidityChanged, mailbox_failure
from mail_imap_mcp.imap.pipeline import Command, MailboxRead, MailboxReply, read_each
from mail_imap_mcp.imap.search.plan import Answer, Newest, Read, StreamRead, StreamStart, reads_at_once
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.imap.uidplus import parse_uid_set
from mail_imap_mcp.query import Key, Query, needs_utf8, search_keys

_KEY_ITEMS = ["INTERNALDATE"]
#: What a FETCH asks for a message's sort key, per order.
KEY_ITEMS = {"arrival": _KEY_ITEMS, "date": ["INTERNALDATE", "BODY.PEEK[HEADER.FIELDS (DATE)]"]}


def epoch(moment: datetime | None) -> int | None:
    """A sort key: ``moment`` in epoch seconds (imapclient gives local naive time when the server's zone
    is unknown)."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return int(moment.astimezone(UTC).timestamp())


def response_key(response: Mapping[bytes, object], sort: str) -> int | None:
    """A message's sort key from its FETCH response (parsed): INTERNALDATE, or in date order the Date
    header in UTC, else INTERNALDATE (as RFC 5256's SORT DATE)."""
    moment = response.get(b"INTERNALDATE")
    internal = epoch(moment) if isinstance(moment, datetime) else None
    if sort != "date":
        return internal
    raw = next((v for k, v in response.items() if k.startswith(b"BODY[") and isinstance(v, bytes)), b"")
    values = mime.parse_header_block(raw).get("date")
    sent = epoch(mime.parse_date(values[0])) if values else None
    return sent if sent is not None else internal


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


class SearchExecutor:
    """Runs the reads of one search page on one session (see the module's docstring).

    ``merged``: the page merges mailboxes (a search of several, or of a list of names), so each
    mailbox's candidates need their INTERNALDATE, the merge key, and the mailboxes are read at once
    where the query allows it."""

    def __init__(
        self,
        session: ImapSession,
        account_id: str,
        query: Query,
        *,
        merged: bool,
        compile_keys: Callable[[Query], list[Key]] = search_keys,
    ) -> None:
        self.session = session
        self.account_id = account_id
        #: The query as SEARCH keys, in the dialect the search service chose (IMAP's, or Gmail's).
        self.criteria = compile_keys(query)
        self.charset = "UTF-8" if needs_utf8(query) else None
        self.merged = merged
        #: Every mailbox's reads in the same round trips (else one mailbox after the other).
        self.at_once = reads_at_once("arrival", query, merged=merged)

    def plan(self, start: StreamStart, wanted: int) -> StreamRead:
        """The reads of ``start``'s mailbox for ``wanted`` matches (see :class:`~.plan.StreamRead`)."""
        filtered, esearch = bool(self.criteria), self.session.profile.esearch
        return StreamRead(start, wanted, filtered, self.merged, esearch, batched=self.at_once)

    def prefetch(self, starts: Sequence[StreamStart], wanted: int) -> list[Newest | Exception] | None:
        """Every mailbox's newest matches at once, where this page reads them so; else None (then each
        is read when the merge needs it, :meth:`newest`)."""
        if not self.at_once:
            return None
        streams = [self.plan(start, wanted) for start in starts]
        self._all_at_once(streams)
        return [stream.result() for stream in streams]

    def newest(self, start: StreamStart, wanted: int) -> Newest | Exception:
        """One mailbox's newest matches, read on its own; a failure of that mailbox as its result."""
        stream = self.plan(start, wanted)
        try:
            self._one_at_a_time(stream)
        except Exception as exc:
            failure = mailbox_failure(exc)
            if failure is None:
                raise
            stream.failure = failure
        return stream.result()

    # -- one mailbox after the other -------------------------------------------------------------------

    def _one_at_a_time(self, stream: StreamRead) -> None:
        start = stream.start
        state = self.session.examine(start.mailbox)
        if start.uidvalidity and state.uidvalidity != start.uidvalidity:
            raise UidValidityChanged(start.uidvalidity, state.uidvalidity, start.mailbox)
        stream.opened(state, [self._send(read) for read in stream.opening(state)])
        while reads := stream.widening():
            stream.took(self._send(reads[0]))
        for read in stream.keying():
            stream.keyed_by(self._send(read))

    def _send(self, read: Read) -> Answer:
        session, criteria, charset = self.session, self.criteria, self.charset
        if read.kind == "keys":  # the candidates' keys: never a window here (batched reads only)
            assert read.uids is not None
            answer = session.fetch_range(parse_uid_set(read.uids), _KEY_ITEMS)
            return Answer(keys={uid: epoch(data.get(b"INTERNALDATE")) for uid, data in answer.items()})
        if read.kind == "count_all":
            count, runs = session.uid_search_counted(criteria, charset=charset)
            return Answer(count=count, runs=runs)
        scope: list[bytes | str | int] = [] if read.uids is None else [b"UID", read.uids.encode("ascii")]
        return Answer(uids=session.uid_search([*scope, *criteria], charset=charset))

    # -- every mailbox at once ------------------------------------------------------------------------

    def _all_at_once(self, streams: list[StreamRead]) -> None:
        """Each round trip sends every mailbox's reads: the first windows with EXAMINE, the wider
        windows where too few matches came, then the candidates' keys."""
        asked = [stream.opening() for stream in streams]
        first = [
            MailboxRead(stream.start.mailbox, self._commands(reads), stream.start.uidvalidity or None)
            for stream, reads in zip(streams, asked, strict=True)
        ]
        replies = read_each(self.session, self.account_id, first)
        for stream, reads, reply in zip(streams, asked, replies, strict=True):
            if not _failed(stream, reply):
                assert reply.state is not None
                stream.opened(reply.state, self._answers(reads, reply))
        while waiting := [(stream, reads) for stream in streams if (reads := stream.widening())]:
            for (stream, reads), reply in zip(waiting, self._again(waiting), strict=True):
                if not _failed(stream, reply):
                    stream.took(self._answers(reads, reply)[0])
        keying = [(stream, reads) for stream in streams if (reads := stream.keying())]
        for (stream, reads), reply in zip(keying, self._again(keying), strict=True):
            if not _failed(stream, reply):
                stream.keyed_by(self._answers(reads, reply)[0])

    def _again(self, reads: list[tuple[StreamRead, list[Read]]]) -> list[MailboxReply]:
        """Further reads of mailboxes opened already, each checked to be the one opened (UIDVALIDITY)."""
        again = []
        for stream, wanted in reads:
            assert stream.state is not None
            again.append(MailboxRead(stream.start.mailbox, self._commands(wanted), stream.state.uidvalidity))
        return read_each(self.session, self.account_id, again)

    def _commands(self, reads: list[Read]) -> list[Command]:
        tokens = wire.search_args(self.criteria, None)
        commands = []
        for read in reads:
            if read.kind == "keys":
                assert read.uids is not None
                commands.append(Command.fetch(read.uids, _KEY_ITEMS))
            elif read.uids is None:
                commands.append(Command.search(tokens, counted=read.kind == "count_all"))
            else:
                commands.append(Command.search([b"UID", read.uids.encode("ascii"), *tokens]))
        return commands

    def _answers(self, reads: list[Read], reply: MailboxReply) -> list[Answer]:
        answers = []
        for read, raw in zip(reads, reply.answers, strict=True):
            if read.kind == "keys":
                answers.append(Answer(keys=internal_keys(self.session, raw)))
            elif read.kind == "count_all":
                answers.append(Answer(count=parsing.search_count(raw), runs=parsing.search_all_runs(raw)))
            else:
                answers.append(Answer(uids=parsing.search_uids(list(raw))))
        return answers


def _failed(stream: StreamRead, reply: MailboxReply) -> bool:
    """Whether the mailbox failed in this round trip (its failure kept as its result); else its state."""
    if reply.failure is not None:
        stream.failure = reply.failure
    elif reply.state is not None:
        stream.state = reply.state
    return stream.failure is not None

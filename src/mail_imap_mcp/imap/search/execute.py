"""The executor of a page of one mailbox's reads: it sends what :mod:`.plan` asks and hands the answers
back, EXAMINE first, so the first window is sized from what EXAMINE said, then each read after the
answer of the one before. A failure of the mailbox is its result. (A page of several mailboxes is read
by one position, every mailbox at once: :mod:`.position_read`, which shares the sort keys read here.)
"""

from __future__ import annotations

import calendar
import functools
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from mail_imap_mcp import mime
from mail_imap_mcp.imap.errors import mailbox_failure
from mail_imap_mcp.imap.search.plan import Answer, Newest, Read, StreamRead, StreamStart
from mail_imap_mcp.mail.errors import UidValidityChanged
from mail_imap_mcp.query import Key, Query, needs_utf8, search_keys

if TYPE_CHECKING:
    from mail_imap_mcp.imap.session import ImapSession

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
    """Runs the reads of one mailbox's search page on one session (see the module's docstring)."""

    def __init__(
        self,
        session: ImapSession,
        account_id: str,
        query: Query,
        *,
        compile_keys: Callable[[Query], list[Key]] = search_keys,
    ) -> None:
        self.session = session
        self.account_id = account_id
        #: The query as SEARCH keys, in the dialect the search service chose (IMAP's, or Gmail's).
        self.criteria = compile_keys(query)
        self.charset = "UTF-8" if needs_utf8(query) else None

    def newest(self, start: StreamStart, wanted: int) -> Newest | Exception:
        """The mailbox's newest matches; a failure of that mailbox as its result."""
        stream = StreamRead(start, wanted, bool(self.criteria), self.session.profile.esearch)
        try:
            self._read(stream)
        except Exception as exc:
            failure = mailbox_failure(exc)
            if failure is None:
                raise
            stream.failure = failure
        return stream.result()

    def _read(self, stream: StreamRead) -> None:
        start = stream.start
        state = self.session.examine(start.mailbox)
        if start.uidvalidity and state.uidvalidity != start.uidvalidity:
            raise UidValidityChanged(start.uidvalidity, state.uidvalidity, start.mailbox)
        stream.opened(state, [self._send(read) for read in stream.opening(state)])
        while reads := stream.widening():
            stream.took(self._send(reads[0]))

    def _send(self, read: Read) -> Answer:
        session, criteria, charset = self.session, self.criteria, self.charset
        if read.kind == "count_all":
            count, runs = session.uid_search_counted(criteria, charset=charset)
            return Answer(count=count, runs=runs)
        scope: list[bytes | str | int] = [] if read.uids is None else [b"UID", read.uids.encode("ascii")]
        return Answer(uids=session.uid_search([*scope, *criteria], charset=charset))

"""The plan of ``needs_reply``: mail that awaits the user's answer, found with a bounded number of round
trips.

The server narrows the candidates in the search itself (:class:`mail_imap_mcp.query.NeedsReply`): not
``\\Answered``, not from the account's own addresses, no ``List-Id``, no ``Auto-Submitted`` other than
``no`` (RFC 3834: its other values start with ``auto-``), no ``Precedence`` bulk, list or junk, not from
a no-reply or mailer-daemon sender. Then one search of the Sent mailbox for the page's Message-IDs in
``In-Reply-To`` or ``References`` and one FETCH of the headers of what it found (:func:`answered_in`) say
which candidates were answered from a client that does not set ``\\Answered``. A Sent message answers a
candidate only when it is addressed to the candidate's sender and not older than it: a Message-ID is the
sender's to choose, and one reusing the id of a message the user answered must not pass as answered
(docs/security.md, L1). Its Date header is the sender's to write too, so where the server says when
both arrived (INTERNALDATE, one clock), a candidate that arrived after the Sent message was saved is
not answered by it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from mail_imap_mcp import mime
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.query import AnyOf, Header, search_keys

#: Sent messages whose headers are read at most (the newest): more than a page's answers need.
MAX_ANSWERS_READ = 1000
_ANSWER_HEADERS = "BODY.PEEK[HEADER.FIELDS (IN-REPLY-TO REFERENCES TO CC BCC DATE)]<0.65536>"
#: How much earlier than the message its answer may seem: the two Date headers come from two clocks.
CLOCK_SKEW = timedelta(minutes=10)
# Printable ASCII only: the ids are sent as quoted strings of a search without CHARSET.
_MESSAGE_ID = re.compile(r"<[!-;=?-~]{1,500}>")


def first_message_id(value: str | None) -> str | None:
    """The message id of a Message-ID header's value (``<left@right>``), None when it has none."""
    found = _MESSAGE_ID.search(value or "")
    return found.group(0) if found else None


@dataclass(frozen=True)
class Candidate:
    """A message that may await an answer: its key (the caller's name for it), its Message-ID, its
    sender's address, its date and when it arrived (INTERNALDATE)."""

    key: str
    header_id: str
    sender: str | None
    date: datetime | None
    arrived: datetime | None = None


@dataclass(frozen=True)
class _Answer:
    named: frozenset[str]
    recipients: frozenset[str]
    date: datetime | None
    arrived: datetime | None

    def answers(self, candidate: Candidate) -> bool:
        if candidate.header_id not in self.named:
            return False
        if candidate.arrived and self.arrived and candidate.arrived > _aware(self.arrived):
            return False  # it reached the server after this answer was saved: not what it answers
        if candidate.sender is None or candidate.sender.lower() not in self.recipients:
            return False
        return candidate.date is None or self.date is None or self.date >= candidate.date - CLOCK_SKEW


def _aware(moment: datetime) -> datetime:
    """A naive INTERNALDATE (imapclient's where the server's zone is unknown) taken as local time, as
    summaries take it."""
    return moment if moment.tzinfo else moment.astimezone()


def answered_in(session: ImapSession, sent_mailbox: str, candidates: Sequence[Candidate]) -> set[str]:
    """The keys of those ``candidates`` a message of ``sent_mailbox`` answers (module docstring):
    EXAMINE with one UID SEARCH (one round trip), then one UID FETCH of the headers when it found any."""
    wanted = list(dict.fromkeys(candidate.header_id for candidate in candidates))
    if not wanted:
        return set()
    session.examine_ahead(sent_mailbox)
    criteria = search_keys(
        AnyOf(tuple(Header(name, id_) for id_ in wanted for name in ("In-Reply-To", "References")))
    )
    uids = sorted(session.uid_search(criteria))[-MAX_ANSWERS_READ:]
    if not uids:
        return set()
    answers = []
    for response in session.fetch(uids, [_ANSWER_HEADERS, "INTERNALDATE"]).values():
        raw = next((v for k, v in response.items() if isinstance(k, bytes) and k.startswith(b"BODY[")), b"")
        headers = mime.parse_header_block(raw if isinstance(raw, bytes) else b"")
        named = {
            m
            for value in headers.get("in-reply-to", []) + headers.get("references", [])
            for m in _MESSAGE_ID.findall(value)
        }
        recipients = {
            (address.email or "").lower()
            for name in ("to", "cc", "bcc")
            for value in headers.get(name, [])
            for address in mime.parse_address_list(value)
        }
        date = mime.parse_date(next(iter(headers.get("date", [])), None))
        internal = response.get(b"INTERNALDATE")
        arrived = internal if isinstance(internal, datetime) else None
        if date is None and arrived is not None:
            date = arrived if arrived.tzinfo else None
        answers.append(_Answer(frozenset(named), frozenset(recipients), date, arrived))
    return {c.key for c in candidates if any(answer.answers(c) for answer in answers)}

"""Which messages a message of the Sent mailbox answers, whatever the backend that reads them.

A Sent message answers a candidate only when it names the candidate's Message-ID (``In-Reply-To`` or
``References``), is addressed to the candidate's sender and is not older than it: a Message-ID is the
sender's to choose, and one reusing the id of a message the user answered must not pass as answered
(docs/security.md, L1). Its Date header is the sender's to write too, so where the backend says when
both arrived (one clock), a candidate that arrived after the Sent message was saved is not answered by
it. The backend searches Sent with :func:`answer_search` and reads the headers of what it found
(``imap/replies.py``: one UID SEARCH and one UID FETCH).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from mail_imap_mcp import mime
from mail_imap_mcp.query import AnyOf, Header, Query

#: Sent messages whose headers are read at most (the newest): more than a page's answers need.
MAX_ANSWERS_READ = 1000
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
class Answer:
    """A Sent message as far as answering goes: the ids it names, its recipients, its date and when it
    was saved."""

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


def answer_search(candidates: Sequence[Candidate]) -> Query | None:
    """The search of Sent for messages naming any of the candidates' ids; None when there is none."""
    wanted = list(dict.fromkeys(candidate.header_id for candidate in candidates))
    if not wanted:
        return None
    return AnyOf(tuple(Header(name, id_) for id_ in wanted for name in ("In-Reply-To", "References")))


def answer_of(header: bytes, arrived: datetime | None) -> Answer:
    """The answer a Sent message's header block (at least In-Reply-To, References, To, Cc, Bcc and Date)
    gives, saved at ``arrived``."""
    headers = mime.parse_header_block(header)
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
    if date is None and arrived is not None:
        date = arrived if arrived.tzinfo else None
    return Answer(frozenset(named), frozenset(recipients), date, arrived)


def answered_by(candidates: Sequence[Candidate], answers: Iterable[Answer]) -> set[str]:
    """The keys of those ``candidates`` one of ``answers`` answers."""
    found = list(answers)
    return {c.key for c in candidates if any(answer.answers(c) for answer in found)}

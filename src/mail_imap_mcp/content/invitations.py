"""Answering an invitation (iMIP, RFC 6047; iTIP, RFC 5546 3.2.3): the REPLY to a REQUEST, and the
answer in words; pure.

The REPLY carries METHOD:REPLY and, for each event answered, the request's UID, SEQUENCE, RECURRENCE-ID
and ORGANIZER as they were, a new DTSTAMP, and one ATTENDEE: the account's own line, its PARTSTAT the
answer (RSVP left out; DELEGATED-FROM and DELEGATED-TO kept, RFC 5546 4.2.5); SUMMARY, DTSTART, DTEND and
RRULE are copied for the reader, with the VTIMEZONE of each TZID they name. A request with a series (a VEVENT
without RECURRENCE-ID) is answered for the series; one of instances only, for each of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from enum import StrEnum
from typing import Literal

from mail_imap_mcp.content.drafts import parse_address
from mail_imap_mcp.content.icalendar_text import Component, Line, escape_text, parse, unescape_text, write

Answer = Literal["accept", "tentative", "decline"]
PARTSTAT: dict[str, str] = {"accept": "ACCEPTED", "tentative": "TENTATIVE", "decline": "DECLINED"}
_VERB = {"ACCEPTED": "Accept", "TENTATIVE": "Tentatively accept", "DECLINED": "Decline"}
_SUBJECT = {"accept": "Accepted", "tentative": "Tentative", "decline": "Declined"}
#: Properties of the request copied into the reply for its reader (RFC 5546 3.2.3 allows them).
_COPIED = ("RECURRENCE-ID", "SUMMARY", "DTSTART", "DTEND", "DURATION", "RRULE")
#: Attendee parameters a reply does not carry: the request's expectations of the attendee.
_DROPPED_PARAMS = ("RSVP", "SCHEDULE-STATUS", "SCHEDULE-FORCE-SEND")
_PRODID = "-//mail-imap-mcp//invitation reply//EN"
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
#: Characters no header may carry: a line break in a name or address would add header lines.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


class InvitationProblem(StrEnum):
    """Why an invitation cannot be answered (``details.reason`` of the refusal)."""

    NO_CALENDAR = "no_calendar"
    MALFORMED = "calendar_malformed"
    NOT_A_REQUEST = "not_a_request"
    NOT_AN_ATTENDEE = "not_an_attendee"
    CANCELLED = "invitation_cancelled"
    SUPERSEDED = "invitation_superseded"


class InvitationRefused(Exception):
    """The invitation ``reply_to_invitation`` names cannot be answered: ``problem``, and what it found
    (``method``, ``attendees``: the addresses invited; ``later``: the message_id that cancels or
    supersedes it, filled in by the service)."""

    def __init__(
        self, problem: InvitationProblem, detail: str = "", *, method: str = "", attendees: Sequence[str] = ()
    ) -> None:
        super().__init__(f"the invitation cannot be answered: {problem.value} {detail}".strip())
        self.problem = problem
        self.detail = detail
        self.method = method
        self.attendees = list(attendees)
        self.later: str | None = None


@dataclass(frozen=True)
class EventKey:
    """What tells one version of an event from another: its UID, SEQUENCE, and the RECURRENCE-ID of the
    instance (None: the series or a single event)."""

    uid: str
    sequence: int
    recurrence_id: str | None


@dataclass(frozen=True)
class InvitationReply:
    """The answer to an invitation, ready to go into a draft."""

    #: The iCalendar REPLY (CRLF lines).
    calendar: str
    organizer: str
    organizer_name: str | None
    #: The account's address as the invitation names it: the reply's From.
    attendee: str
    #: "Accept 'Quarterly review', Tue 2 Dec 2025 10:00-11:00 Europe/Berlin, as alice@example.com"
    words: str
    #: "Accepted: Quarterly review"
    subject: str
    keys: tuple[EventKey, ...]


def _address(line: Line) -> str:
    value = line.value.strip()
    return value[7:] if value.lower().startswith("mailto:") else value


def _organizer(line: Line | None) -> tuple[str, str | None]:
    """The organizer's address and name, refused where the address is not exactly one (``mailto:a,b``,
    ``mailto:a?bcc=b``) or the name holds a control character (a line break would add header lines)."""
    organizer = _address(line) if line is not None else ""
    if "@" not in organizer:
        raise InvitationRefused(InvitationProblem.MALFORMED, "it names no organizer")
    parsed = parse_address(organizer)
    if _CONTROL.search(organizer) or parsed is None or parsed.display_name or parsed.addr_spec != organizer:
        raise InvitationRefused(InvitationProblem.MALFORMED, "its organizer is not one email address")
    name = unescape_text(line.param("CN") or "") if line is not None else ""
    if _CONTROL.search(name):
        raise InvitationRefused(InvitationProblem.MALFORMED, "the organizer's name holds a control character")
    return organizer, name or None


def _calendar(text: str) -> Component:
    try:
        calendars = [c for c in parse(text) if c.name == "VCALENDAR"]
    except ValueError as exc:
        raise InvitationRefused(InvitationProblem.MALFORMED, str(exc)) from None
    if not calendars:
        raise InvitationRefused(InvitationProblem.MALFORMED, "no VCALENDAR")
    return calendars[0]


def _method(calendar: Component) -> str:
    line = calendar.first("METHOD")
    return line.value.strip().upper() if line is not None else ""


def _sequence(event: Component) -> int:
    line = event.first("SEQUENCE")
    try:
        return int(line.value.strip()) if line is not None else 0
    except ValueError:
        return 0


def event_key(event: Component) -> EventKey:
    uid, recurrence = event.first("UID"), event.first("RECURRENCE-ID")
    return EventKey(
        uid.value.strip() if uid is not None else "",
        _sequence(event),
        recurrence.value.strip() if recurrence is not None else None,
    )


def _answered_events(calendar: Component) -> list[Component]:
    events = calendar.components("VEVENT")
    uids = {event_key(event).uid for event in events}
    if not events or len(uids) != 1 or "" in uids:
        raise InvitationRefused(InvitationProblem.MALFORMED, "it needs VEVENTs of one UID")
    series = [event for event in events if event.first("RECURRENCE-ID") is None]
    return series[:1] or events


def _own_attendee(event: Component, identities: Iterable[str]) -> Line | None:
    own = [identity.lower() for identity in identities]
    by_address = {_address(line).lower(): line for line in event.every("ATTENDEE")}
    return next((by_address[address] for address in own if address in by_address), None)


def _moment(line: Line | None) -> tuple[datetime | date | None, str]:
    """The value of a DTSTART/DTEND line, and its zone as shown (TZID, "UTC", or "" when floating)."""
    if line is None:
        return None, ""
    value = line.value.strip()
    try:
        if "T" not in value:
            return datetime.strptime(value[:8], "%Y%m%d").date(), ""
        moment = datetime.strptime(value[:15], "%Y%m%dT%H%M%S")
    except ValueError:
        return None, ""
    return moment, line.param("TZID") or ("UTC" if value.endswith("Z") else "")


def _duration(text: str) -> timedelta | None:
    """A DURATION value (RFC 5545 3.3.6) such as ``PT1H30M`` or ``P1W``; None when unreadable."""
    text = text.strip().upper().lstrip("+")
    if not text.startswith("P"):
        return None
    total, number, in_time = timedelta(), "", False
    units = {"W": timedelta(weeks=1), "D": timedelta(days=1)}
    times = {"H": timedelta(hours=1), "M": timedelta(minutes=1), "S": timedelta(seconds=1)}
    for char in text[1:]:
        if char.isdigit():
            number += char
        elif char == "T":
            in_time = True
        elif number and char in (times if in_time else units):
            total += int(number) * (times if in_time else units)[char]
            number = ""
        else:
            return None
    return total


def _day(moment: date) -> str:
    return f"{_DAYS[moment.weekday()]} {moment.day} {_MONTHS[moment.month - 1]} {moment.year}"


def when(event: Component) -> str:
    """The event's time as a person reads it: "Tue 2 Dec 2025 10:00-11:00 Europe/Berlin"."""
    start, zone = _moment(event.first("DTSTART"))
    end, _ = _moment(event.first("DTEND"))
    duration = event.first("DURATION")
    if end is None and start is not None and duration is not None:
        span = _duration(duration.value)
        end = start + span if span is not None else None
    if start is None:
        raw = event.first("DTSTART")
        return f"at {raw.value.strip()}" if raw is not None else "at an unknown time"
    if not isinstance(start, datetime):
        last = end - timedelta(days=1) if isinstance(end, date) and not isinstance(end, datetime) else None
        return f"{_day(start)}" + (f" to {_day(last)}" if last and last > start else "") + " (all day)"
    zone = f" {zone}" if zone else ""
    if not isinstance(end, datetime):
        return f"{_day(start)} {start:%H:%M}{zone}"
    if end.date() == start.date():
        return f"{_day(start)} {start:%H:%M}-{end:%H:%M}{zone}"
    return f"{_day(start)} {start:%H:%M} to {_day(end)} {end:%H:%M}{zone}"


def _summary(event: Component) -> str:
    line = event.first("SUMMARY")
    text = " ".join(unescape_text(line.value).split()) if line is not None else ""
    return text[:200] or "(no title)"


def describe(event: Component, attendee: Line) -> str:
    """One event's answer in words (see :class:`InvitationReply`)."""
    verb = _VERB.get((attendee.param("PARTSTAT") or "").upper(), "Answer")
    series = " (every occurrence)" if event.first("RRULE") is not None else ""
    return f"{verb} '{_summary(event)}', {when(event)}{series}, as {_address(attendee)}"


def reply_words(text: str) -> list[str]:
    """The answer a REPLY's calendar gives, in words, one per event (empty when it is none)."""
    try:
        calendar = _calendar(text)
    except InvitationRefused:
        return []
    if _method(calendar) != "REPLY":
        return []
    words = []
    for event in calendar.components("VEVENT"):
        attendees = event.every("ATTENDEE")
        if len(attendees) == 1:
            words.append(describe(event, attendees[0]))
        else:  # a reply of several attendees is no reply this server writes: shown as such
            shown = ", ".join(f"{_address(a)} {a.param('PARTSTAT') or '?'}" for a in attendees) or "nobody"
            words.append(f"Answer '{_summary(event)}', {when(event)}, for {shown}")
    return words


def _utc_stamp(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def _reply_event(event: Component, attendee: Line, partstat: str, comment: str, now: datetime) -> Component:
    key = event_key(event)
    organizer = event.first("ORGANIZER")
    assert organizer is not None
    own = attendee.with_param("PARTSTAT", partstat)
    for name in _DROPPED_PARAMS:
        own = own.with_param(name, None)
    lines = [
        Line("UID", (), key.uid),
        Line("DTSTAMP", (), _utc_stamp(now)),
        Line("SEQUENCE", (), str(key.sequence)),
    ]
    lines += [organizer, own]
    lines += [line for name in _COPIED for line in event.every(name)]
    if comment.strip():
        lines.append(Line("COMMENT", (), escape_text(comment.strip())))
    return Component("VEVENT", lines)


def _zones(calendar: Component, events: Sequence[Component]) -> list[Component]:
    """The VTIMEZONE components of the TZIDs ``events`` name."""
    named = {line.param("TZID") for event in events for line in event.lines if line.param("TZID")}
    zones = []
    for zone in calendar.components("VTIMEZONE"):
        tzid = zone.first("TZID")
        if tzid is not None and tzid.value.strip() in named:
            zones.append(zone)
    return zones


def answer_invitation(
    text: str, identities: Sequence[str], answer: Answer, comment: str, now: datetime
) -> InvitationReply:
    """The REPLY (see the module) to the request ``text`` from the first of ``identities`` it invites;
    :class:`InvitationRefused` when it is no request, names none of them, or cannot be read."""
    calendar = _calendar(text)
    method = _method(calendar)
    if method != "REQUEST":
        raise InvitationRefused(InvitationProblem.NOT_A_REQUEST, method=method or "none")
    events = _answered_events(calendar)
    first = events[0]
    attendee = _own_attendee(first, identities)
    if attendee is None:
        invited = [_address(line) for line in first.every("ATTENDEE")]
        raise InvitationRefused(InvitationProblem.NOT_AN_ATTENDEE, attendees=invited[:20])
    organizer = first.first("ORGANIZER")
    organizer_address, organizer_name = _organizer(organizer)
    assert organizer is not None
    partstat = PARTSTAT[answer]
    address = _address(attendee).lower()
    replies = []
    for event in events:
        own = next((a for a in event.every("ATTENDEE") if _address(a).lower() == address), attendee)
        if event.first("ORGANIZER") is None:
            event.lines.append(organizer)
        replies.append(_reply_event(event, own, partstat, comment, now))
    reply = Component(
        "VCALENDAR",
        [Line("PRODID", (), _PRODID), Line("VERSION", (), "2.0"), Line("METHOD", (), "REPLY")],
        [*_zones(calendar, events), *replies],
    )
    answered = attendee.with_param("PARTSTAT", partstat)
    return InvitationReply(
        calendar=write([reply]),
        organizer=organizer_address,
        organizer_name=organizer_name,
        attendee=_address(attendee),
        words="; ".join(describe(event, answered) for event in events),
        subject=f"{_SUBJECT[answer]}: {_summary(first)}",
        keys=tuple(event_key(event) for event in events),
    )


def supersedes(
    text: str, keys: Sequence[EventKey], organizer: str, authors: Sequence[str]
) -> InvitationProblem | None:
    """Whether the calendar ``text`` (another message's, whose From and Sender addresses are ``authors``)
    cancels or supersedes the events ``keys``: a CANCEL of their UID (of the series, or of the same
    instance) at their SEQUENCE or later, or a REQUEST of it with a later SEQUENCE (of the series, or of
    the same instance). Only the ``organizer``'s counts: a message from them (From or Sender, compared
    without case) whose event names them ORGANIZER; anyone else's cancel of the UID, even one copying the
    invitation's ORGANIZER, leaves it answerable."""
    if organizer.lower() not in {author.lower() for author in authors}:
        return None
    try:
        calendar = _calendar(text)
    except InvitationRefused:
        return None
    method = _method(calendar)
    for event in calendar.components("VEVENT"):
        sender = event.first("ORGANIZER")
        if sender is None or _address(sender).lower() != organizer.lower():
            continue
        later = event_key(event)
        for key in keys:
            if later.uid != key.uid or later.recurrence_id not in (None, key.recurrence_id):
                continue
            if method == "CANCEL" and later.sequence >= key.sequence:
                return InvitationProblem.CANCELLED
            if method == "REQUEST" and later.sequence > key.sequence:
                return InvitationProblem.SUPERSEDED
    return None

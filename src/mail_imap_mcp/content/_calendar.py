"""iCalendar invitations as events and readable text (icalendar; sandboxed child only)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime, timedelta
from typing import Any

from .errors import ExtractionError
from .text import clean_extracted_text

_MAX_EVENTS = 200
_MAX_ATTENDEES = 100
_MAX_FIELD_CHARS = 500
_MAX_DESCRIPTION_CHARS = 2000

_METHODS = {
    "REQUEST": "an invitation",
    "CANCEL": "a cancellation",
    "REPLY": "a reply to an invitation",
    "PUBLISH": "published events",
    "COUNTER": "a counter-proposal",
    "REFRESH": "a request for the latest version",
    "ADD": "added occurrences",
    "DECLINECOUNTER": "a declined counter-proposal",
}
_ROLES = {
    "REQ-PARTICIPANT": "required",
    "OPT-PARTICIPANT": "optional",
    "NON-PARTICIPANT": "for information",
    "CHAIR": "chair",
}


def _text(value: Any, limit: int = _MAX_FIELD_CHARS) -> str | None:
    if value is None:
        return None
    text = clean_extracted_text(str(value)).strip()
    if len(text) > limit:
        text = text[:limit].rstrip() + " [...]"
    return text or None


def _param(value: Any, name: str) -> str | None:
    params = getattr(value, "params", None)
    return _text(params.get(name)) if params else None


def _person(value: Any) -> dict[str, Any]:
    address = str(value)
    if address.lower().startswith("mailto:"):
        address = address[7:]
    return {
        "name": _param(value, "CN"),
        "address": _text(address),
        "role": _param(value, "ROLE"),
        "partstat": _param(value, "PARTSTAT"),
    }


def _moment(value: Any, notes: list[str], label: str) -> tuple[str | None, str | None, bool, Any]:
    """(ISO text, TZID, all_day, the date/datetime) of a DTSTART/DTEND property."""
    if value is None:
        return None, None, False, None
    tzid = _param(value, "TZID")
    try:
        moment = value.dt
    except Exception:  # icalendar raises its own error for an unparsable value
        notes.append(f"{label}: a date that cannot be read was left out")
        return None, tzid, False, None
    if isinstance(moment, datetime):
        if moment.tzinfo is None and tzid:
            notes.append(f"{label}: time zone {tzid!r} is unknown; the time is shown as written")
        elif moment.tzinfo is None:
            notes.append(f"{label}: floating time (no time zone): local time wherever the reader is")
        elif tzid is None and moment.utcoffset() == timedelta(0):
            tzid = "UTC"
        return moment.isoformat(), tzid, False, moment
    if isinstance(moment, date):
        return moment.isoformat(), None, True, moment
    return None, tzid, False, None


def _event(component: Any, notes: list[str]) -> dict[str, Any]:
    summary = _text(component.get("SUMMARY"))
    label = summary or "event"
    start, timezone, all_day, start_value = _moment(component.get("DTSTART"), notes, label)
    end, _, _, _ = _moment(component.get("DTEND"), notes, label)
    duration = component.get("DURATION")
    if end is None and duration is not None and start_value is not None:
        try:
            end = (start_value + duration.dt).isoformat()
        except (TypeError, AttributeError, OverflowError):
            end = None
    organizer = component.get("ORGANIZER")
    attendees = component.get("ATTENDEE") or []
    if not isinstance(attendees, list):
        attendees = [attendees]
    if len(attendees) > _MAX_ATTENDEES:
        notes.append(f"{label}: only the first {_MAX_ATTENDEES} of {len(attendees)} attendees are listed")
    rrule = component.get("RRULE")
    return {
        "summary": summary,
        "start": start,
        "end": end,
        "timezone": timezone,
        "all_day": all_day,
        "location": _text(component.get("LOCATION")),
        "organizer": _person(organizer) if organizer is not None else None,
        "attendees": [_person(attendee) for attendee in attendees[:_MAX_ATTENDEES]],
        "recurrence": _text(rrule.to_ical().decode("utf-8", "replace")) if rrule is not None else None,
        "status": _text(component.get("STATUS")),
        "description": _text(component.get("DESCRIPTION"), _MAX_DESCRIPTION_CHARS),
        "uid": _text(component.get("UID")),
    }


def _who(person: dict[str, Any]) -> str:
    name, address = person["name"], person["address"]
    text = f"{name} <{address}>" if name and address else (name or address or "?")
    details = [_ROLES.get(person["role"] or "", (person["role"] or "").lower())]
    details.append((person["partstat"] or "").lower().replace("-", " "))
    details = [detail for detail in details if detail]
    return text + (f" ({', '.join(details)})" if details else "")


def _when(event: dict[str, Any]) -> str:
    start, end = event["start"] or "?", event["end"]
    if event["all_day"]:
        last = end
        try:
            if end:
                last_day = date.fromisoformat(end) - timedelta(days=1)
                last = last_day.isoformat() if last_day > date.fromisoformat(start) else None
        except ValueError:
            pass
        return f"{start} to {last} (all day)" if last else f"{start} (all day)"
    zone = f" ({event['timezone']})" if event["timezone"] else ""
    return f"{start} to {end}{zone}" if end else f"{start}{zone}"


def _event_text(event: dict[str, Any]) -> str:
    lines = [f"Event: {event['summary'] or '(no title)'}", f"When: {_when(event)}"]
    if event["recurrence"]:
        lines.append(f"Repeats: {event['recurrence']}")
    if event["location"]:
        lines.append(f"Where: {event['location']}")
    if event["organizer"]:
        lines.append(f"Organizer: {_who(event['organizer'])}")
    if event["attendees"]:
        lines.append("Attendees: " + "; ".join(_who(person) for person in event["attendees"]))
    if event["status"]:
        lines.append(f"Status: {event['status']}")
    if event["description"]:
        lines.append(f"Description: {event['description']}")
    return "\n".join(lines) + "\n\n"


def calendar_chunks(
    path: str, notes: list[str], meta: dict[str, Any], params: dict[str, Any]
) -> Iterator[str]:
    """The calendar's events as readable text; ``meta["events"]`` gets them as fields."""
    from icalendar import Calendar

    with open(path, "rb") as stream:
        data = stream.read()
    try:
        calendars = Calendar.from_ical(data, multiple=True)
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ExtractionError("extract_failed", f"The calendar file is malformed ({exc}).") from exc
    events: list[dict[str, Any]] = []
    methods: list[str] = []
    others = 0
    for calendar in calendars:
        method = _text(calendar.get("METHOD"))
        if method:
            methods.append(method.upper())
        for component in calendar.walk():
            if component.name == "VEVENT":
                if len(events) == _MAX_EVENTS:
                    notes.append(f"only the first {_MAX_EVENTS} events are shown")
                    break
                try:
                    events.append(_event(component, notes))
                except Exception as exc:  # one broken event does not hide the others
                    notes.append(f"an event could not be read ({type(exc).__name__})")
            elif component.name in ("VTODO", "VJOURNAL", "VFREEBUSY"):
                others += 1
    if others:
        notes.append(f"{others} to-do, journal or free/busy entries are not shown")
    meta["events"] = events
    for method in dict.fromkeys(methods):
        yield f"Calendar {method.lower()}: {_METHODS.get(method, 'method ' + method)}\n\n"
    if not events:
        notes.append("the calendar has no events")
    for event in events:
        yield _event_text(event)

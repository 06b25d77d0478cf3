"""Date headers (RFC 5322, or ISO 8601 from sloppy mailers) as aware UTC datetimes."""

from __future__ import annotations

import email.utils
import re
from datetime import UTC, datetime, timedelta, timezone

from .header_text import drop_controls, strip_comments, to_str, unfold

__all__ = ["parse_date"]


def parse_date(raw: str | bytes | None) -> datetime | None:
    """Parse an RFC 5322 (or ISO 8601) date into an aware UTC datetime, else None.

    Dates without a usable zone (including ``-0000``) are taken as UTC.
    """
    try:
        text = to_str(raw)
        if not text:
            return None
        text = drop_controls(unfold(text)).strip()
        if not text:
            return None
        parsed = _try_parse_date(text)
        if parsed is not None:
            return parsed
        # Only then without comments ("(CET)"): most dates parse as they are, and this costs.
        stripped, _ = strip_comments(text)
        stripped = " ".join(stripped.split())
        return _try_parse_date(stripped) if stripped != text else None
    except Exception:
        return None


#: The form nearly every Date header has (``Thu, 14 Mar 2024 09:26:53 +0100``): read without the email
#: package's general parser, to the same result (a year below 1000, which it reads as two digits, and
#: anything else goes to that parser).
_COMMON_DATE = re.compile(
    r"(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), )?(\d{1,2}) "
    r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) ([1-9]\d{3}) (\d\d):(\d\d):(\d\d) ([+-])(\d\d)(\d\d)"
)
_MONTHS = {
    name: number
    for number, name in enumerate(
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], 1
    )
}


def _common_date(text: str) -> datetime | None:
    found = _COMMON_DATE.fullmatch(text)
    if found is None:
        return None
    day, month, year, hour, minute, second, sign, zone_hours, zone_minutes = found.groups()
    try:
        zone = _zone(sign, zone_hours, zone_minutes)
        moment = datetime(
            int(year), _MONTHS[month], int(day), int(hour), int(minute), int(second), tzinfo=zone
        )
        return moment.astimezone(UTC)
    except (ValueError, OverflowError):
        return None  # out of range: the general parser says what it makes of it


#: The zones read so far, by their text (``+0100``): at most the 4,800 valid ones, a mailbox uses a few.
_ZONES: dict[str, timezone] = {}


def _zone(sign: str, hours: str, minutes: str) -> timezone:
    """The zone of a ``+hhmm`` offset; ValueError from 24 hours on."""
    key = sign + hours + minutes
    zone = _ZONES.get(key)
    if zone is None:
        offset = int(hours) * 3600 + int(minutes) * 60
        zone = _ZONES[key] = timezone(timedelta(seconds=-offset if sign == "-" else offset))
    return zone


def _try_parse_date(text: str) -> datetime | None:
    common = _common_date(text)
    if common is not None:
        return common
    parsed: datetime | None = None
    try:
        parsed = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            return None
    if parsed is None:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except (OverflowError, ValueError):
        return None

"""The values of the query language's operators read into nodes (flags, days, ages, sizes), and the
error every mistake of a query is (:class:`QuerySyntaxError`)."""

from __future__ import annotations

import re
from calendar import monthrange
from collections.abc import Callable
from datetime import date, timedelta

from mail_imap_mcp.query.tree import (
    CATEGORIES,
    Category,
    DateBound,
    HasAttachment,
    HasFlag,
    Label,
    Query,
    SizeBound,
)

#: The largest size ``larger:`` and ``smaller:`` accept, in bytes (IMAP's numbers are 32-bit).
MAX_SIZE = 2**31
#: How far back ``older_than:`` and ``newer_than:`` reach, per unit.
MAX_AGE = {"d": 36_500, "m": 1_200, "y": 100}


class QuerySyntaxError(ValueError):
    """The query is malformed: ``position`` (0-based) is where, ``expected`` what should stand there."""

    def __init__(self, position: int, expected: str, found: str | None = None) -> None:
        self.position = position
        self.expected = expected
        self.found = found
        where = (
            f"at character {position + 1}" if found is not None else f"at the end (character {position + 1})"
        )
        seen = f", found {found!r}" if found is not None else ""
        super().__init__(f"{where}: expected {expected}{seen}")


FLAGS = {
    "unread": HasFlag("seen", present=False),
    "read": HasFlag("seen"),
    "flagged": HasFlag("flagged"),
    "starred": HasFlag("flagged"),
    "answered": HasFlag("answered"),
    "unanswered": HasFlag("answered", present=False),
}
_DAY = re.compile(r"(\d{4})[/-](\d{1,2})[/-](\d{1,2})")
_AGE = re.compile(r"(\d{1,6})([dmy])", re.IGNORECASE)
_SIZE = re.compile(r"(\d{1,13})([kmg]?)b?", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def _has(text: str, position: int, today: date) -> Query:
    if text.lower() not in ("attachment", "attachments"):
        raise QuerySyntaxError(position, "has:attachment", f"has:{text}")
    return HasAttachment()


def _is(text: str, position: int, today: date) -> Query:
    if text.lower() == "important":  # Gmail's: a label, answered by Gmail's search only
        return Label("\\Important")
    flag = FLAGS.get(text.lower())
    if flag is None:
        raise QuerySyntaxError(position, "is:" + "|".join([*FLAGS, "important"]), f"is:{text}")
    return flag


def _label(text: str, position: int, today: date) -> Query:
    return Label(text)


def _category(text: str, position: int, today: date) -> Query:
    if text.lower() not in CATEGORIES:
        raise QuerySyntaxError(position, "category:" + "|".join(CATEGORIES), f"category:{text}")
    return Category(text.lower())


def _day(text: str, position: int, name: str) -> date:
    match = _DAY.fullmatch(text)
    try:
        if match is None:
            raise ValueError
        day = date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    except ValueError:
        raise QuerySyntaxError(position, f"a day after {name}: as YYYY/MM/DD or YYYY-MM-DD", text) from None
    if day.year < 1000:
        raise QuerySyntaxError(position, "a year of four digits (1000 or later)", text)
    return day


def _before(text: str, position: int, today: date) -> Query:
    return DateBound("before", _day(text, position, "before"))


def _after(text: str, position: int, today: date) -> Query:
    return DateBound("since", _day(text, position, "after"))


def _age(text: str, position: int, today: date, name: str) -> date:
    match = _AGE.fullmatch(text)
    unit = match.group(2).lower() if match else ""
    if match is None or int(match.group(1)) > MAX_AGE[unit]:
        limits = ", ".join(f"{limit}{unit}" for unit, limit in MAX_AGE.items())
        raise QuerySyntaxError(
            position, f"an age after {name}: such as 7d, 3m or 1y (at most {limits})", text
        )
    return _earlier(today, int(match.group(1)), unit)


def _earlier(today: date, count: int, unit: str) -> date:
    """The day ``count`` days (``d``), months (``m``) or years (``y``) before ``today``; a day the month
    lacks (31 March less a month) becomes the month's last."""
    if unit == "d":
        return today - timedelta(days=count)
    months = count * (12 if unit == "y" else 1)
    year, month = divmod(today.year * 12 + today.month - 1 - months, 12)
    return date(year, month + 1, min(today.day, monthrange(year, month + 1)[1]))


def _older(text: str, position: int, today: date) -> Query:
    return DateBound("before", _age(text, position, today, "older_than"))


def _newer(text: str, position: int, today: date) -> Query:
    return DateBound("since", _age(text, position, today, "newer_than"))


def _size(text: str, position: int, name: str) -> int:
    match = _SIZE.fullmatch(text)
    octets = int(match.group(1)) * _UNITS[match.group(2).lower()] if match else MAX_SIZE + 1
    if octets > MAX_SIZE:
        raise QuerySyntaxError(
            position, f"a size after {name}: in bytes or with K, M or G (at most 2G)", text
        )
    return octets


def _larger(text: str, position: int, today: date) -> Query:
    return SizeBound("larger", _size(text, position, "larger"))


def _smaller(text: str, position: int, today: date) -> Query:
    return SizeBound("smaller", _size(text, position, "smaller"))


OPERANDS: dict[str, Callable[[str, int, date], Query]] = {
    "has": _has,
    "is": _is,
    "before": _before,
    "after": _after,
    "older_than": _older,
    "newer_than": _newer,
    "larger": _larger,
    "smaller": _smaller,
    "label": _label,
    "category": _category,
}

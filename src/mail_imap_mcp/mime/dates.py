"""Date headers (RFC 5322, or ISO 8601 from sloppy mailers) as aware UTC datetimes."""

from __future__ import annotations

import email.utils
from datetime import UTC, datetime

from .header_text import HEADER_CONTROL, strip_comments, to_str, unfold

__all__ = ["parse_date"]


def parse_date(raw: str | bytes | None) -> datetime | None:
    """Parse an RFC 5322 (or ISO 8601) date into an aware UTC datetime, else None.

    Dates without a usable zone (including ``-0000``) are taken as UTC.
    """
    try:
        text = to_str(raw)
        if not text:
            return None
        text = unfold(text).translate(HEADER_CONTROL).strip()
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


def _try_parse_date(text: str) -> datetime | None:
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

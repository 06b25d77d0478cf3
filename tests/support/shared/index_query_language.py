"""What tests/integration/index/test_index_query_language.py shares with other test modules."""

from __future__ import annotations

import datetime as dt

from tests.support.shared.query_language import NOW

TWO_DAYS_AGO = NOW.date() - dt.timedelta(days=2)


#: Every operator, alone and combined (the scope's queries name no mailbox: every folder).
QUERIES = (
    "budget",
    "budget lunch",
    '"budget talk"',
    "photos OR invoice",
    "budget -lunch",
    "-(budget OR photos)",
    "{photos invoice} is:flagged",
    "from:bob",
    "from:(carol OR billing)",
    "to:user@example.org subject:report",
    "cc:dan",
    'subject:"re: lunch"',
    "is:unread",
    "is:read -is:flagged",
    "is:starred",
    "is:answered",
    f"after:{TWO_DAYS_AGO:%Y/%m/%d}",
    f"before:{TWO_DAYS_AGO:%Y-%m-%d}",
    "newer_than:3d",
    "older_than:3d",
    "older_than:1y",
    "newer_than:1m -newer_than:3d",
    "larger:15K",
    "smaller:15K",
    "has:attachment",
    "filename:pdf",
    "filename:jpg budget",
    "-has:attachment budget",
    "{filename:txt filename:pdf} -from:billing",
    "in:inbox subject:budget",
    "in:archive budget",
    "in:trash budget",
    "in:spam budget",
    "in:anywhere subject:budget",
)

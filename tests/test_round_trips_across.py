"""Round trips of a search across mailboxes (``mailbox: "*"``, ``mailboxes``) and in date order, pinned.

Such a page reads each mailbox in two phases (:func:`mail_imap_mcp.imap.sort.ordered_page`, then the
summaries of the page's picks, mailbox by mailbox), so its cost grows with the mailboxes that take part:
on a real network each round trip costs the link's RTT. The test pins what each page sends (the IMAP
verbs in order) and how often it waits for the server (``AccountConnection.round_trips``), like
tests/test_round_trips.py does for the one-mailbox calls; a change that adds a command or a round trip
fails here, one that removes one updates these plans and docs/benchmarks.md ("IMAP plan of each call").
The answers are checked against the messages seeded, so a cheaper plan cannot be a wrong one.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from tests.support import mailgen
from tests.support.dovecot import Dovecot
from tests.test_round_trips import Plan, plain_settings, recording, rig

pytestmark = pytest.mark.anyio

#: Messages per mailbox; Trash and Junk are left out of ``"*"``, Empty holds nothing (LIST-STATUS).
MAILBOXES = {"INBOX": 6, "Sent": 4, "Archive": 5, "Projects": 3, "Trash": 2, "Junk": 2, "Empty": 0}
SEARCHED = ("INBOX", "Archive", "Projects", "Sent")

BASE = dt.datetime(2024, 3, 1, 9, 0, tzinfo=dt.UTC)
#: Phase 1 of a mailbox on a page without filter: EXAMINE, the UID window's SEARCH (the total is EXISTS),
#: the FETCH of the candidates' sort keys (INTERNALDATE).
_OPEN = ("EXAMINE", "UID SEARCH", "UID FETCH")
#: Phase 2 of a mailbox that is not the selected one: EXAMINE again, FETCH of its summaries.
_SUMMARIES = ("EXAMINE", "UID FETCH")


def _plan(opened: int, summarised: int, *, listed: bool = False) -> Plan:
    """``opened`` mailboxes read in phase 1, then the summaries of ``summarised`` mailboxes: the one
    left selected by phase 1 first (one FETCH), then each other one."""
    commands = ("LIST",) * listed + _OPEN * opened + ("UID FETCH",) + _SUMMARIES * (summarised - 1)
    return Plan(commands, listed + 3 * opened + 1 + 2 * (summarised - 1))


PLANS: dict[str, Plan] = {
    # LIST-STATUS (Trash, Junk skipped; Empty not opened: it holds nothing), then the four mailboxes.
    "every mailbox, first page": _plan(4, 4, listed=True),  # 20 round trips
    "every mailbox, next page": _plan(4, 4),  # 19
    "two mailboxes": _plan(2, 2),  # 9
    # Server-side SORT of the matches (UIDs only), then the FETCH of the page's summaries.
    "one mailbox by date": Plan(("EXAMINE", "UID SORT", "UID FETCH"), 3),
}


def seed(dovecot: Dovecot, user: str) -> dict[str, list[str]]:
    """The mailboxes of ``MAILBOXES``; the subjects of each, oldest first (INTERNALDATE interleaved)."""
    subjects: dict[str, list[str]] = {}
    for offset, (name, count) in enumerate(MAILBOXES.items()):
        subjects[name] = [f"{name} note {i}" for i in range(count)]
        stamps = [BASE + dt.timedelta(hours=i * len(MAILBOXES) + offset) for i in range(count)]
        messages = [
            mailgen.plain_message(s, f"body of {s}\n", date=d)
            for s, d in zip(subjects[name], stamps, strict=True)
        ]
        if count:
            dovecot.seed(user, name, messages, internaldates=stamps)
    with dovecot.connect(user) as client:
        client.create_folder("Empty")
    return subjects


def newest_first(subjects: dict[str, list[str]], names: tuple[str, ...]) -> list[str]:
    """The subjects of ``names`` newest first by INTERNALDATE (as ``seed`` placed them)."""
    order = list(MAILBOXES)
    stamped = [(i * len(MAILBOXES) + order.index(n), s) for n in names for i, s in enumerate(subjects[n])]
    return [s for _, s in sorted(stamped, reverse=True)]


def subjects_of(data: dict[str, Any]) -> list[str]:
    return [m["subject"] for m in data["messages"]]


async def test_searches_across_mailboxes_send_their_plans(dovecot: Dovecot) -> None:
    user = dovecot.new_user("t-across")
    subjects = seed(dovecot, user)
    observed: dict[str, Plan] = {}
    with recording(dovecot) as recorder:
        async with rig(plain_settings(dovecot, user, recorder.port), recorder) as r:
            await r.call("imap_list_mailboxes", {})  # the login is not part of any plan below
            everywhere = {"mailbox": "*", "limit": 8, "snippet_chars": 0}
            first, observed["every mailbox, first page"] = await r.call("imap_search_messages", everywhere)
            second, observed["every mailbox, next page"] = await r.call(
                "imap_search_messages", {**everywhere, "cursor": first["next_cursor"]}
            )
            two, observed["two mailboxes"] = await r.call(
                "imap_search_messages", {"mailboxes": ["Sent", "Archive"], "limit": 5, "snippet_chars": 0}
            )
            dated, observed["one mailbox by date"] = await r.call(
                "imap_search_messages",
                {"mailbox": "Archive", "sort": "date", "limit": 3, "snippet_chars": 0},
            )
            assert r.connection.logins == 1
    expected = newest_first(subjects, SEARCHED)
    assert subjects_of(first) + subjects_of(second) == expected[:16]
    assert first["total"] == len(expected) and not first.get("issues")
    assert subjects_of(two) == newest_first(subjects, ("Sent", "Archive"))[:5]
    assert subjects_of(dated) == subjects["Archive"][::-1][:3]
    assert observed == PLANS

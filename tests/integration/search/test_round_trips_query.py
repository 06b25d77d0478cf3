"""Round trips of the query language on the IMAP path, pinned against Dovecot through the wire recorder:
a query costs what the same filters cost as arguments; ``in:anywhere`` what ``mailbox: "*"`` costs;
``in:<name>`` one LIST more than ``mailbox`` (the name is looked up by name, level or role); and a page
whose attachments are judged from BODYSTRUCTURE reads the server's matches page by page, each next page
twice the size of the one before, one that finds more matches than the page has room for read again up to
the last it takes: its cost grows with the logarithm of how far apart the matches are."""

from __future__ import annotations

from email.message import EmailMessage

import pytest

from tests.support.mail import mailgen
from tests.support.round_trips import Plan, plain_settings, recording, rig
from tests.support.servers.dovecot import Dovecot

pytestmark = pytest.mark.anyio

WARM_PAGE = Plan(("NOOP", "STATUS", "UID SEARCH", "UID FETCH"), 2)


def with_attachment(i: int) -> bytes:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "a@example.com", "u@example.org", f"Attached {i}"
    msg["Date"] = "Mon, 06 Jan 2025 10:00:00 +0000"
    msg.set_content("See attached.")
    msg.add_attachment(b"data", maintype="application", subtype="pdf", filename=f"file{i}.pdf")
    return mailgen.crlf(msg)


async def test_a_query_costs_what_its_filters_cost_and_in_what_mailbox_costs(dovecot: Dovecot) -> None:
    user = dovecot.new_user("t-rtq")
    dovecot.seed(user, "INBOX", mailgen.corpus(30))
    dovecot.seed(user, "Archive", mailgen.corpus(5, seed=1))
    with recording(dovecot) as recorder:
        async with rig(plain_settings(dovecot, user, recorder.port), recorder) as r:
            await r.call("imap_search_messages", {"limit": 5})
            _, as_argument = await r.call("imap_search_messages", {"limit": 5, "subject": "invoice"})
            _, as_query = await r.call(
                "imap_search_messages", {"limit": 5, "mailbox": "INBOX", "query": "subject:invoice"}
            )
            _, every = await r.call("imap_search_messages", {"limit": 5, "mailbox": "*", "query": "ref"})
            _, anywhere = await r.call("imap_search_messages", {"limit": 5, "query": "ref in:anywhere"})
            _, default = await r.call("imap_search_messages", {"limit": 5, "query": "ref"})
            await r.call("imap_search_messages", {"limit": 5, "mailbox": "INBOX"})
            _, named = await r.call("imap_search_messages", {"limit": 5, "query": "ref in:inbox"})
            await r.call("imap_search_messages", {"limit": 5, "mailbox": "Archive"})
            _, by_mailbox = await r.call(
                "imap_search_messages", {"limit": 5, "mailbox": "Archive", "query": "ref"}
            )
            _, by_in = await r.call("imap_search_messages", {"limit": 5, "query": "ref in:archive"})
    assert as_argument == as_query == named == WARM_PAGE
    assert every == anywhere == default  # a query without mailbox is mailbox "*"; in:anywhere adds no trip
    assert by_in == Plan(("LIST", *by_mailbox.commands), by_mailbox.round_trips + 1)


#: INBOX: 40 plain messages with one attachment message after every 9 (UIDs 10, 20, 30, 40).
SPARSE = [with_attachment(i) if i % 10 == 9 else mailgen.plain_message(f"Plain {i}", "x") for i in range(40)]


async def test_attachments_judged_from_structure_read_the_matches_page_by_page(dovecot: Dovecot) -> None:
    user = dovecot.new_user("t-rtq")
    dovecot.seed(user, "INBOX", SPARSE)
    arguments = {"mailbox": "INBOX", "query": "has:attachment", "limit": 2}
    with recording(dovecot) as recorder:
        async with rig(plain_settings(dovecot, user, recorder.port), recorder) as r:
            await r.call("imap_search_messages", {"limit": 5})
            dense, dense_plan = await r.call(
                "imap_search_messages", {**arguments, "query": "has:attachment subject:attached"}
            )
            sparse, sparse_plan = await r.call("imap_search_messages", arguments)
    # Candidates that all match: one page, as any filtered page.
    assert [m["subject"] for m in dense["messages"]] == ["Attached 39", "Attached 29"]
    # (UID 40 was on the warm page: its summary is kept, only its flags are fetched again.)
    assert dense_plan == Plan((*WARM_PAGE.commands, "UID FETCH"), 2)
    # One match in ten: the first page of 2 candidates holds UID 40 and 39; the next pages ask twice as
    # many candidates each (4: UIDs 38-35, 8: UIDs 34-27, where UID 30 matches).
    assert [m["subject"] for m in sparse["messages"]] == ["Attached 39", "Attached 29"]
    # (Summaries kept from the warm page add a FETCH of their flags to a round trip, no round trip.)
    assert (sparse_plan.round_trips, sparse_plan.commands.count("UID SEARCH")) == (2 + 2 * 2, 3)


#: 40 plain messages, with attachments on UID 40 and on UIDs 21-24.
CLUSTERED = [
    with_attachment(i) if i == 39 or 20 <= i <= 23 else mailgen.plain_message(f"Plain {i}", "x")
    for i in range(40)
]


async def test_a_page_that_finds_more_matches_than_it_has_room_for_is_read_again_up_to_the_last_it_takes(
    dovecot: Dovecot,
) -> None:
    user = dovecot.new_user("t-rtq")
    dovecot.seed(user, "INBOX", CLUSTERED)
    arguments = {"mailbox": "INBOX", "query": "has:attachment", "limit": 3}
    with recording(dovecot) as recorder:
        async with rig(plain_settings(dovecot, user, recorder.port), recorder) as r:
            await r.call("imap_search_messages", {"limit": 5})
            first, first_plan = await r.call("imap_search_messages", arguments)
            rest, _ = await r.call("imap_search_messages", {**arguments, "cursor": first["next_cursor"]})
    # UIDs 40-38 (one match), 37-32 (none), 31-20 (four: more than the two the page has room for),
    # read again as 31-23: the page ends at UID 23 and the next page starts below it.
    assert [m["subject"] for m in first["messages"]] == ["Attached 39", "Attached 23", "Attached 22"]
    assert (first_plan.round_trips, first_plan.commands.count("UID SEARCH")) == (2 + 2 * 3, 4)
    assert [m["subject"] for m in rest["messages"]] == ["Attached 21", "Attached 20"]
    assert "next_cursor" not in rest


async def test_a_page_stops_judging_at_its_bound_says_so_and_its_cursor_continues(dovecot: Dovecot) -> None:
    user = dovecot.new_user("t-rtq")
    dovecot.seed(
        user, "INBOX", [with_attachment(0), *(mailgen.plain_message(f"P {i}", "x") for i in range(260))]
    )
    arguments = {"mailbox": "INBOX", "query": "has:attachment", "limit": 1}
    with recording(dovecot) as recorder:
        async with rig(plain_settings(dovecot, user, recorder.port), recorder) as r:
            await r.call("imap_search_messages", {"limit": 5})
            before = r.connection.round_trips
            envelope = await r.client.call("imap_search_messages", arguments)
            trips = r.connection.round_trips - before
            data = envelope["data"]
            assert data["messages"] == [] and "next_cursor" in data
            (warning,) = envelope["meta"]["warnings"]
            assert "judged 200 of the server's matches" in warning and "next_cursor continues" in warning
            rest, plan = await r.call("imap_search_messages", {**arguments, "cursor": data["next_cursor"]})
    assert [m["subject"] for m in rest["messages"]] == ["Attached 0"]
    assert "next_cursor" not in rest
    # Pages of 1, 2, 4 ... 64, 64 candidates, then the 9 left of the 200: 9 pages of 2 round trips each.
    assert trips == 2 * 9
    assert plan.commands.count("UID SEARCH") <= 8

"""Round trips of a search across mailboxes (``mailbox: "*"``, ``mailboxes``) and in date order, pinned.

Such a page reads its mailboxes in two phases (by one position, :mod:`mail_imap_mcp.services.search_position`;
one mailbox by :func:`mail_imap_mcp.imap.sort.ordered_page`; then the summaries of the page's picks,
mailbox by mailbox), so its cost grows with the mailboxes that take part:
on a real network each round trip costs the link's RTT. The test pins what each page sends (the IMAP
verbs in order) and how often it waits for the server (``AccountConnection.round_trips``), like
tests/integration/harness/test_round_trips.py does for the one-mailbox calls; a change that adds a command or a round trip
fails here, one that removes one updates these plans and docs/benchmarks.md ("IMAP plan of each call").
The answers are checked against the messages seeded, so a cheaper plan cannot be a wrong one.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import time
from typing import Any

import pytest

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.mail.errors import MailboxMissing, UidValidityChanged
from tests.support.accounts import account_settings
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.mail import mailgen
from tests.support.round_trips import Plan, logged_cost, plain_settings, recording, rig
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.faultproxy import FaultProxy
from tests.support.servers.matrix import MatrixServer, on_matrix

pytestmark = pytest.mark.anyio

#: Messages per mailbox; Trash and Junk are left out of ``"*"``, Empty holds nothing (LIST-STATUS).
MAILBOXES = {"INBOX": 6, "Sent": 4, "Archive": 5, "Projects": 3, "Trash": 2, "Junk": 2, "Empty": 0}
SEARCHED = ("INBOX", "Archive", "Projects", "Sent")

BASE = dt.datetime(2024, 3, 1, 9, 0, tzinfo=dt.UTC)
#: The candidates' merge keys (INTERNALDATE), each behind its EXAMINE.
_KEYS = ("EXAMINE", "UID FETCH")


def _summaries(mailboxes: int) -> tuple[str, ...]:
    """Phase 2, one round trip: the summaries of the mailbox left selected (one FETCH), then each other
    one's EXAMINE and FETCH."""
    return ("UID FETCH",) + ("EXAMINE", "UID FETCH") * (mailboxes - 1)


#: A mailbox in the arrival-order plan of one position (issue 33 item 11; imap/search/position.py), every
#: mailbox in the same round trips: EXAMINE and ``UID SORT (REVERSE ARRIVAL)`` (on a next page also a
#: ``UID SEARCH`` of the days around the position), then EXAMINE and the INTERNALDATE of what was found.
_SORTED_FIRST = ("EXAMINE", "UID SORT")
_SORTED_NEXT = ("EXAMINE", "UID SEARCH", "UID SORT")


#: A first page of every mailbox lists them with their counts (LIST-STATUS) behind an EXAMINE of INBOX,
#: which it searches anyway: Dovecot answers the STATUS of an open INBOX from its view, of a closed one by
#: reading its whole uidlist (imap/kept_open.py). INBOX is then sorted without another EXAMINE. Before
#: (issue 80): LIST alone, and INBOX's EXAMINE with the others'.
_LISTED = ("EXAMINE", "LIST")


def _by_position(opened: int, summarised: int, *, listed: bool = False, later: bool = False) -> Plan:
    """``listed``: a first page of every mailbox (:data:`_LISTED`, INBOX then sorted as it stands); then
    ``opened`` mailboxes sorted at once, their candidates' keys at once, and the summaries of
    ``summarised`` mailboxes at once."""
    sorted_ = (_SORTED_NEXT if later else _SORTED_FIRST) * opened
    head = _LISTED if listed else ()
    commands = head + (sorted_[1:] if listed else sorted_) + _KEYS * opened
    return Plan(commands + _summaries(summarised), (1 if listed else 0) + 3)


# Before EXAMINE was pipelined (commit 0e12dbd): 20, 19, 9, 3, 20 and 3 round trips; before every
# mailbox was read in the same round trip (issue 22): 17, 16, 8, 3, 13, 2 and 5.
PLANS: dict[str, Plan] = {
    # LIST-STATUS (Trash, Junk skipped; Empty not opened: it holds nothing), then the four mailboxes at
    # once, their keys at once, their summaries at once: 4 round trips, whatever the number of
    # mailboxes (3 with the windows of before, whose cursor grew with the mailboxes); a next page lists
    # nothing: 3 (2 before).
    "every mailbox, first page": _by_position(4, 4, listed=True),
    "every mailbox, filtered first page": _by_position(4, 4, listed=True),
    "every mailbox, next page": _by_position(4, 4, later=True),
    # Names no LIST showed: no STATUS is needed (the windows it sized are gone).
    "two mailboxes": _by_position(2, 2),
    # A name no LIST showed: EXAMINE first (SORT behind an EXAMINE that fails would be answered BAD).
    "one mailbox by date": Plan(("EXAMINE", "UID SORT", "UID FETCH"), 3),
    # As in arrival order, by the Date header (SORT DATE): 4 round trips (10 one mailbox after the other).
    "every mailbox by date": _by_position(4, 4, listed=True),
    # Its cursor says the mailbox exists: EXAMINE and the server-side SORT (UIDs only) in one round
    # trip, then the FETCH of the summaries.
    "one mailbox by date, next page": Plan(("EXAMINE", "UID SORT", "UID FETCH"), 2),
    # Names no LIST showed, one of them empty: its SORT answers nothing, and no key is read there (5
    # round trips one mailbox after the other).
    "a named empty mailbox by date": Plan(_SORTED_FIRST * 2 + _KEYS + _summaries(1), 3),
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


def _serial(subject: str) -> int:
    return int(subject.rsplit("-", 1)[1])


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
            filtered, observed["every mailbox, filtered first page"] = await r.call(
                "imap_search_messages", {**everywhere, "subject": "note 1"}
            )
            two, observed["two mailboxes"] = await r.call(
                "imap_search_messages", {"mailboxes": ["Sent", "Archive"], "limit": 5, "snippet_chars": 0}
            )
            dated, observed["one mailbox by date"] = await r.call(
                "imap_search_messages",
                {"mailbox": "Archive", "sort": "date", "limit": 3, "snippet_chars": 0},
            )
            by_date, observed["every mailbox by date"] = await r.call(
                "imap_search_messages", {**everywhere, "sort": "date"}
            )
            dated_next, observed["one mailbox by date, next page"] = await r.call(
                "imap_search_messages",
                {
                    "mailbox": "Archive",
                    "sort": "date",
                    "limit": 3,
                    "snippet_chars": 0,
                    "cursor": dated["next_cursor"],
                },
            )
            named_empty, observed["a named empty mailbox by date"] = await r.call(
                "imap_search_messages",
                {"mailboxes": ["Empty", "Sent"], "sort": "date", "limit": 3, "snippet_chars": 0},
            )
            assert r.connection.logins == 1
    expected = newest_first(subjects, SEARCHED)
    assert subjects_of(named_empty) == subjects["Sent"][::-1][:3]
    assert subjects_of(first) + subjects_of(second) == expected[:16]
    assert first["total"] == len(expected) and not first.get("issues")
    assert subjects_of(two) == newest_first(subjects, ("Sent", "Archive"))[:5]
    assert subjects_of(filtered) == [s for s in expected if s.endswith(" note 1")]
    assert filtered["total"] == len(SEARCHED)
    assert subjects_of(by_date) == expected[:8]
    assert subjects_of(dated) + subjects_of(dated_next) == subjects["Archive"][::-1]
    assert observed == PLANS


# ------------------------------------------------------------------ what is pipelined, when it fails

TOOL = "imap_search_messages"


def seed_dated(server: MatrixServer, user: str, names: dict[str, int]) -> dict[str, list[str]]:
    """``names[short]`` messages in each mailbox (the server's spelling), sent and arrived interleaved."""
    placed: dict[str, list[str]] = {}
    for offset, (short, count) in enumerate(names.items()):
        name = server.mailbox_name(short) if short != "INBOX" else "INBOX"
        placed[name] = [f"{short}-{i * len(names) + offset}" for i in range(count)]
        stamps = [BASE + dt.timedelta(hours=i * len(names) + offset) for i in range(count)]
        messages = [
            mailgen.plain_message(s, f"body {s}\n", date=d) for s, d in zip(placed[name], stamps, strict=True)
        ]
        server.seed(user, name, messages, internaldates=stamps)
    return placed


def uidvalidity_of(server: MatrixServer, user: str, mailbox: str) -> int:
    with server.connect(user) as client:
        return int(client.select_folder(mailbox, readonly=True)[b"UIDVALIDITY"])


def recreate(server: MatrixServer, user: str, mailbox: str, subjects: list[str]) -> None:
    """Delete ``mailbox`` and create it anew with ``subjects``, under another UIDVALIDITY (some servers
    derive it from the clock: a second later, if needed)."""
    old = uidvalidity_of(server, user, mailbox)
    for _ in range(3):
        delete(server, user, mailbox)
        server.seed(user, mailbox, [mailgen.plain_message(s, "new\n", date=BASE) for s in subjects])
        if uidvalidity_of(server, user, mailbox) != old:
            return
        time.sleep(1.1)
    raise AssertionError(f"{mailbox!r} kept UIDVALIDITY {old} when recreated")


def delete(server: MatrixServer, user: str, mailbox: str) -> None:
    """Delete ``mailbox``, as another client of the user would."""
    server.delete_mailbox(user, mailbox)


@on_matrix()
async def test_date_order_across_mailboxes_deleted_or_recreated_between_pages(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient
) -> None:
    """A page of several mailboxes in date order continues from one position: a mailbox deleted or
    recreated (new UIDVALIDITY) since the first page makes the next page a conflict, whose next_action
    runs the search again; the connection answers the next call normally."""
    placed = seed_dated(imap_server, user, {"INBOX": 5, "Archive": 5, "Projects": 5})
    archive, projects = imap_server.mailbox_name("Archive"), imap_server.mailbox_name("Projects")
    arguments = {"mailboxes": ["INBOX", archive, projects], "sort": "date", "limit": 6, "snippet_chars": 0}
    first = await mcp.ok(TOOL, arguments)
    newest = sorted((s for names in placed.values() for s in names), key=_serial, reverse=True)
    assert subjects_of(first) == newest[:6]
    recreate(imap_server, user, projects, ["Projects-recreated"])
    failure = await mcp.fail(TOOL, {**arguments, "cursor": first["next_cursor"]}, "conflict")
    assert failure["data"]["next_action"]["arguments"]["mailboxes"] == arguments["mailboxes"]
    first = await mcp.ok(TOOL, arguments)
    delete(imap_server, user, archive)
    await mcp.fail(TOOL, {**arguments, "cursor": first["next_cursor"]}, "conflict")
    again = await mcp.ok(TOOL, {**arguments, "mailboxes": ["INBOX", projects]})
    assert subjects_of(again)[:1] == ["Projects-recreated"] or "Projects-recreated" in subjects_of(again)


@on_matrix()
async def test_date_order_of_one_mailbox_recreated_or_deleted_between_pages_is_an_error(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient
) -> None:
    """A mailbox named alone: the next page's pipelined EXAMINE finds it recreated (conflict) or gone
    (not_found), the call's error as before, and the call after it is answered normally."""
    seed_dated(imap_server, user, {"Archive": 4, "Projects": 4})
    archive, projects = imap_server.mailbox_name("Archive"), imap_server.mailbox_name("Projects")
    arguments = {"sort": "date", "limit": 2, "snippet_chars": 0}
    cursors = {}
    for name in (archive, projects):
        cursors[name] = (await mcp.ok(TOOL, {**arguments, "mailbox": name}))["next_cursor"]
    recreate(imap_server, user, archive, ["Archive-recreated"])
    delete(imap_server, user, projects)
    await mcp.fail(TOOL, {**arguments, "mailbox": archive, "cursor": cursors[archive]}, "conflict")
    await mcp.fail(TOOL, {**arguments, "mailbox": projects, "cursor": cursors[projects]}, "not_found")
    again = await mcp.ok(TOOL, {**arguments, "mailbox": archive})
    assert subjects_of(again) == ["Archive-recreated"]


@on_matrix()
def test_a_command_behind_an_examine_that_fails_is_not_taken_for_an_answer(
    imap_server: MatrixServer, user: str
) -> None:
    """The summaries' FETCH rides with its mailbox's EXAMINE: with another UIDVALIDITY than the page's,
    or a mailbox gone, its answer is dropped for UidValidityChanged or not_found, and the session reads
    the next mailbox normally, on the same connection."""
    seed_dated(imap_server, user, {"INBOX": 2, "Archive": 3})
    archive = imap_server.mailbox_name("Archive")
    validity = uidvalidity_of(imap_server, user, archive)
    app = AppContext.from_config(make_config({"default": account_settings(imap_server, user)}))

    def read(session: ImapSession) -> tuple[dict[int, Any], str | None, int]:
        session.examine("INBOX")
        session.examine_ahead(archive, uidvalidity=validity + 1)
        with pytest.raises(UidValidityChanged):
            session.fetch([1], ["FLAGS"])
        session.examine_ahead(imap_server.mailbox_name("Gone"), uidvalidity=validity)
        with pytest.raises(MailboxMissing) as failure:  # said as not_found by the tools
            session.fetch([1], ["FLAGS"])
        assert failure.value.mailbox == imap_server.mailbox_name("Gone")
        session.examine_ahead(archive, uidvalidity=validity)
        answer = session.fetch([1, 2, 3], ["FLAGS"])
        return answer, session.selected_mailbox, session.examine(archive).exists

    try:
        connection = app.connection("default")
        answer, selected, exists = connection.run(read)
        assert sorted(answer) == [1, 2, 3] and selected == archive and exists == 3
        assert connection.logins == 1
    finally:
        app.close()


async def test_a_reset_under_a_pipelined_examine_and_fetch_gives_the_page_on_a_new_connection(
    dovecot: Dovecot,
) -> None:
    """The connection is cut right after EXAMINE and the FETCH behind it went out: the read runs again
    on a new connection and answers the same page, without waiting out a timeout."""
    user = dovecot.new_user("t-across")
    for name, days in (("Old", 0), ("New", 10)):  # New's are newer: the page takes only those
        stamps = [BASE + dt.timedelta(days=days + i) for i in range(3)]
        messages = [mailgen.plain_message(f"{name} {d:%d}", "body\n", date=d) for d in stamps]
        dovecot.seed(user, name, messages, internaldates=stamps)
    arguments = {"mailboxes": ["New", "Old"], "limit": 3, "snippet_chars": 20}
    with FaultProxy(dovecot.host, dovecot.plain_port) as proxy:
        config = make_config({"default": plain_settings(dovecot, user, proxy.port)})
        app = AppContext.from_config(config)
        async for mcp in open_client(config, app):
            clean = await mcp.ok(TOOL, arguments)
            assert {m["message_id"].split(":")[2] for m in clean["messages"]} == {"New"}
            proxy.clear_log()
            proxy.cut_after_sent(b"RFC822.SIZE")  # first sent behind EXAMINE "New" in phase 2
            envelope = await mcp.call(TOOL, arguments)
            assert proxy.cuts == 1
            assert envelope["success"], envelope["error"]
            assert envelope["data"]["messages"] == clean["messages"]
            assert app.connection("default").logins == 2
            assert re.search(rb'EXAMINE "New"\r\n\w+ UID FETCH [^\r]*RFC822\.SIZE', proxy.sent())


@on_matrix()
async def test_a_mailbox_failing_in_the_pipelined_batch_is_one_issue_and_the_plan_keeps_its_round_trips(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient, caplog: pytest.LogCaptureFixture
) -> None:
    """Every mailbox's commands go out together: a mailbox missing in the middle of the list is one issue
    of a partial first page while the others answer as before, in the same round trips (3: the sorts of
    all, their keys, the summaries), and it leaves the search; one deleted or recreated between pages
    makes the next page a conflict (the cursor's digest of the mailboxes), on the same connection."""
    placed = seed_dated(imap_server, user, {"INBOX": 5, "Archive": 5, "Projects": 5})
    archive, projects = imap_server.mailbox_name("Archive"), imap_server.mailbox_name("Projects")
    missing = imap_server.mailbox_name("Missing")
    arguments = {"fields": "full", "mailboxes": ["INBOX", missing, archive, projects], "limit": 6}
    newest = sorted((s for names in placed.values() for s in names), key=_serial, reverse=True)
    await mcp.ok("imap_list_mailboxes", {})  # logged in before the pages are measured
    caplog.set_level(logging.DEBUG, logger="mail_imap_mcp.imap")

    caplog.clear()
    first = await mcp.ok(TOOL, arguments)
    assert logged_cost(caplog)[1] == 3
    assert subjects_of(first) == newest[:6]
    assert first["total"] == 15 and first["status"] == "partial"
    assert [(i["code"], i["stage"]) for i in first["issues"]] == [("not_found", "search")]
    assert missing in first["issues"][0]["message"]
    caplog.clear()
    second = await mcp.ok(TOOL, {**arguments, "cursor": first["next_cursor"]})
    assert logged_cost(caplog)[1] == 3
    assert subjects_of(second) == newest[6:12] and second["status"] == "ok"

    delete(imap_server, user, archive)
    await mcp.fail(TOOL, {**arguments, "cursor": second["next_cursor"]}, "conflict")
    arguments["mailboxes"] = ["INBOX", projects]
    again = await mcp.ok(TOOL, arguments)
    recreate(imap_server, user, projects, ["Projects-recreated"])
    await mcp.fail(TOOL, {**arguments, "cursor": again["next_cursor"]}, "conflict")
    rerun = await mcp.ok(TOOL, arguments)
    assert "Projects-recreated" in subjects_of(rerun)

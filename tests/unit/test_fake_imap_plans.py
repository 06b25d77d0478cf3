"""Round-trip plans and failure handling against a scripted IMAP server, without a server.

The stack from the tool down to the socket is the shipped one; only the socket is a
:class:`~tests.support.fake_imap.ScriptedServer`. The plans pinned here are those that
tests/test_round_trips.py pins against Dovecot ("first call after start", "warm newest page"): a
change that adds a command or a round trip fails here in a second, before the integration tier runs.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.credentials.logins import Logins
from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.imap.pool import ConnectionPool
from mail_imap_mcp.imap.search.position import BAND_EDGES
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.mail.errors import OutcomeUnknown
from mail_imap_mcp.presentation import failures
from mail_imap_mcp.presentation.search_page import SearchMessagesData
from mail_imap_mcp.tools import get_thread, search_messages
from mail_imap_mcp.tools.get_thread_models import GetThreadInput
from mail_imap_mcp.tools.search_messages_models import SearchMessagesInput
from tests.support.fake_imap import LOGIN_OK, ScriptedServer, Step, answer, ok
from tests.support.shared.fake_imap_plans import UIDVALIDITY, connection, examine_answer, make_config
from tests.support.translate import as_tool_failure

HEADERS = (
    b"Date: Thu, 01 Jan 2026 10:00:00 +0000\r\nFrom: Ann <ann@example.org>\r\nTo: me@example.org\r\n"
    b"Subject: Quarterly invoice\r\nMessage-ID: <q1@example.org>\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n\r\n"
)
TEXT = b"Please find the figures attached.\r\n"


def summary_fetch(seq: int, uid: int) -> list[bytes]:
    """The answer of a summary UID FETCH for one plain-text message (as Dovecot sends it)."""
    return [
        b'* %d FETCH (UID %d FLAGS () INTERNALDATE "01-Jan-2026 10:00:00 +0000" RFC822.SIZE %d '
        b'BODYSTRUCTURE ("text" "plain" ("charset" "utf-8") NIL NIL "7bit" %d 1 NIL NIL NIL NIL) '
        b"BODY[HEADER.FIELDS (DATE FROM TO CC SUBJECT MESSAGE-ID CONTENT-TYPE CONTENT-TRANSFER-ENCODING)]<0> {%d}"
        % (seq, uid, len(HEADERS) + len(TEXT), len(TEXT), len(HEADERS)),
        HEADERS + b" BODY[TEXT]<0> {%d}" % len(TEXT),
        TEXT + b")",
        b"{tag} OK Fetch completed",
    ]


def app_on(server: ScriptedServer) -> AppContext:
    config = make_config()
    return AppContext(
        config=config,
        pool=ConnectionPool(
            dict(config.accounts),
            Logins().all(config.accounts),
            open_socket=server.open_socket,
            translate=as_tool_failure,
        ),
    )


#: The newest page of INBOX on a new connection (LOGIN, EXAMINE, SEARCH, FETCH) and on a warm one (the
#: selection revalidated by NOOP + STATUS, pipelined with the SEARCH).
FIRST_PAGE = (
    answer("LOGIN", LOGIN_OK),
    answer("EXAMINE", *examine_answer(1, 2)),
    ok("UID SEARCH", b"* SEARCH 1"),
    answer("UID FETCH", *summary_fetch(1, 1)),
)
WARM_PAGE = (
    ok("NOOP"),
    ok("STATUS", b"* STATUS INBOX (UIDVALIDITY %d UIDNEXT 2)" % UIDVALIDITY),
    ok("UID SEARCH", b"* SEARCH 1"),
    answer("UID FETCH", *summary_fetch(1, 1)),
)


def subjects_of_newest_page(app: AppContext) -> list[str]:
    """imap_search_messages of INBOX, newest first: the subjects of its page."""
    result = search_messages.handle(app, SearchMessagesInput(mailbox="INBOX", limit=10))
    return [message.subject for message in result.data.messages]


def test_first_and_warm_newest_page_keep_their_plans() -> None:
    server = ScriptedServer()
    app = app_on(server)
    server.expect(*FIRST_PAGE)
    try:
        subjects = subjects_of_newest_page(app)
        plan = (tuple(server.commands()), app.connection("default").round_trips)
        # As tests/test_round_trips.py pins on Dovecot: TCP connect, greeting, LOGIN, EXAMINE, SEARCH, FETCH.
        assert plan == (("LOGIN", "EXAMINE", "UID SEARCH", "UID FETCH"), 6)
        assert subjects == ["Quarterly invoice"]

        server.expect(*WARM_PAGE)
        before = app.connection("default").round_trips
        subjects = subjects_of_newest_page(app)
        trips = app.connection("default").round_trips - before
        # The warm page: NOOP + STATUS revalidate the selection, pipelined with the SEARCH; then FETCH.
        assert (tuple(server.commands()), trips) == (("NOOP", "STATUS", "UID SEARCH", "UID FETCH"), 2)
        assert subjects == ["Quarterly invoice"]
        assert server.connections == 1
        assert not server.script
    finally:
        app.close()


@pytest.mark.parametrize("stale", ["uidvalidity", "gone"])
def test_regression_a_stale_id_on_a_warm_connection_settles_its_revalidation_within_its_call(
    stale: str,
) -> None:
    """A message id for a recreated mailbox (conflict) or a message gone (not_found), read on a connection
    that kept INBOX selected: the call's pipelined NOOP + STATUS are answered within it. Raised as the
    domain errors the registry words, they once left the revalidation unanswered, and the next call's
    traffic began with it (the hostile-input test saw it as commands sent for a rejected call)."""
    server = ScriptedServer()
    app = app_on(server)
    server.expect(*FIRST_PAGE)
    try:
        subjects_of_newest_page(app)
        uidvalidity = UIDVALIDITY + 1 if stale == "uidvalidity" else UIDVALIDITY
        message_id = f"imap:default:INBOX:{uidvalidity}:7"
        steps = [ok("NOOP"), ok("STATUS", b"* STATUS INBOX (UIDVALIDITY %d UIDNEXT 2)" % UIDVALIDITY)]
        if stale == "gone":
            steps.append(ok("UID FETCH"))
        server.expect(*steps)
        with pytest.raises(ToolFailure) as raised:
            failures.run(get_thread.handle, app, GetThreadInput(message_id=message_id))
        expected = ErrorCode.CONFLICT if stale == "uidvalidity" else ErrorCode.NOT_FOUND
        assert raised.value.code is expected, raised.value
        assert not server.script, "the revalidation was left unanswered"
        server.expect(*WARM_PAGE)
        assert subjects_of_newest_page(app) == ["Quarterly invoice"]
        assert server.connections == 1
    finally:
        app.close()


def test_a_mailbox_the_server_refuses_to_examine_is_not_found_and_the_connection_stays() -> None:
    server = ScriptedServer()
    account = connection(server)
    server.expect(
        answer("LOGIN", LOGIN_OK),
        answer("EXAMINE", b"{tag} NO Mailbox doesn't exist: Archive"),
        answer("EXAMINE", *examine_answer(1, 2)),
    )
    try:
        with pytest.raises(ToolFailure) as failed:
            account.run(lambda session: session.examine("Archive"))
        assert failed.value.code is ErrorCode.NOT_FOUND
        assert failed.value.details["mailbox"] == "Archive"
        # A NO answers one command: the same connection serves the next call, without a new LOGIN.
        state = account.run(lambda session: session.examine("INBOX"))
        assert (state.uidvalidity, state.exists) == (UIDVALIDITY, 1)
        assert server.commands() == ["LOGIN", "EXAMINE", "EXAMINE"]
        assert server.connections == 1
    finally:
        account.close()


def fetch_flags(session: ImapSession) -> dict[int, Any]:
    session.examine("INBOX")
    return session.fetch([1], ["FLAGS"])


def test_a_read_cut_by_bye_runs_once_more_on_a_fresh_connection() -> None:
    server = ScriptedServer()
    account = connection(server)
    server.expect(
        answer("LOGIN", LOGIN_OK),
        answer("EXAMINE", *examine_answer(1, 2)),
        answer("UID FETCH", b"* BYE Server shutting down.", then_close=True),
        answer("LOGIN", LOGIN_OK),
        answer("EXAMINE", *examine_answer(1, 2)),
        ok("UID FETCH", b"* 1 FETCH (UID 1 FLAGS (\\Seen))"),
    )
    try:
        answered = account.run(fetch_flags)
        assert answered == {1: {b"SEQ": 1, b"FLAGS": (b"\\Seen",)}}
        assert server.commands() == ["LOGIN", "EXAMINE", "UID FETCH", "LOGIN", "EXAMINE", "UID FETCH"]
        assert server.connections == 2
    finally:
        account.close()


def test_a_read_cut_twice_is_connection_lost_not_a_third_try() -> None:
    server = ScriptedServer()
    account = connection(server)
    for _ in range(2):
        server.expect(
            answer("LOGIN", LOGIN_OK),
            answer("EXAMINE", *examine_answer(1, 2)),
            answer("UID FETCH", b"* BYE Server shutting down.", then_close=True),
        )
    try:
        with pytest.raises(ToolFailure) as failed:
            account.run(fetch_flags)
        assert failed.value.code is ErrorCode.UNAVAILABLE
        assert failed.value.retryable
        assert server.connections == 2
        assert not server.script
    finally:
        account.close()


def test_a_write_cut_by_bye_is_never_sent_again() -> None:
    server = ScriptedServer()
    account = connection(server)
    select_answer = [*examine_answer(1, 2)[:-1], b"{tag} OK [READ-WRITE] Select completed"]
    server.expect(
        answer("LOGIN", LOGIN_OK),
        answer("SELECT", *select_answer),
        answer("UID STORE", b"* BYE Server shutting down.", then_close=True),
    )

    def mark_seen(session: ImapSession) -> set[int]:
        session.select("INBOX")
        return session.store_flags([1], "+", ["\\Seen"])

    try:
        with pytest.raises(OutcomeUnknown) as unknown:
            account.run_write(mark_seen)
        assert unknown.value.uids == [1]
        assert server.commands() == ["LOGIN", "SELECT", "UID STORE"]  # one STORE, no reconnect
        assert server.connections == 1
    finally:
        account.close()


def test_a_connection_the_server_closed_while_idle_is_replaced_before_the_call() -> None:
    server = ScriptedServer()
    account = connection(server)
    server.expect(answer("LOGIN", LOGIN_OK), answer("EXAMINE", *examine_answer(1, 2)))
    try:
        account.run(lambda session: session.examine("INBOX"))
        server.sockets[-1].hang_up()  # an idle timeout on the server's side
        server.expect(answer("LOGIN", LOGIN_OK), answer("EXAMINE", *examine_answer(1, 2)))
        account.run(lambda session: session.examine("INBOX"))
        # Found closed without a round trip (the socket is readable at its end): no failed command first.
        assert (account.found_closed, server.connections) == (1, 2)
        assert server.commands() == ["LOGIN", "EXAMINE", "LOGIN", "EXAMINE"]
    finally:
        account.close()


#: LOGIN's answer on a server with neither ESEARCH nor LIST-STATUS (Courier, the IMAP4rev1-only Dovecot).
LOGIN_OK_REV1 = b"{tag} OK [CAPABILITY IMAP4rev1 UIDPLUS NAMESPACE] Logged in"


def examine_of(uidvalidity: int) -> list[bytes]:
    return [
        b"* 1 EXISTS",
        b"* OK [UIDVALIDITY %d] UIDs valid" % uidvalidity,
        b"* OK [UIDNEXT 2] Predicted next UID",
        b"{tag} OK [READ-ONLY] Examine completed",
    ]


def internaldate(day: int) -> Step:
    return ok("UID FETCH", b'* 1 FETCH (UID 1 INTERNALDATE "0%d-Jan-2026 10:00:00 +0000")' % day)


def bands(*answers: bytes) -> list[Step]:
    """A mailbox's eight searches in bands of days (a server without SORT), newest band first: the
    answers given, then none."""
    found = [*answers, *[b"* SEARCH"] * (len(BAND_EDGES) + 1 - len(answers))]
    return [ok("UID SEARCH", line) for line in found]


def test_several_mailboxes_are_read_in_the_same_round_trips_and_one_that_fails_mid_batch_is_one_issue() -> (
    None
):
    """A filtered search of three mailboxes without SORT, ESEARCH or LIST-STATUS (issue 22; by one
    position since issue 33 item 11): EXAMINE and the eight searches in bands of days of each together
    (their matches are the total), the keys of the bands the page needs together, the summaries
    together. Archive's EXAMINE is refused: the searches behind it are answered BAD (no mailbox selected)
    and dropped, Archive becomes one not_found issue, and the two others give the page, newest first, in
    the same three round trips."""
    server = ScriptedServer()
    app = app_on(server)
    server.expect(
        answer("LOGIN", LOGIN_OK_REV1),
        answer("EXAMINE", *examine_of(11)),
        *bands(*[b"* SEARCH"] * len(BAND_EDGES), b"* SEARCH 1"),  # January: everything older
        answer("EXAMINE", b"{tag} NO Mailbox doesn't exist: Archive"),
        *[answer("UID SEARCH", b"{tag} BAD No mailbox selected")] * (len(BAND_EDGES) + 1),
        answer("EXAMINE", *examine_of(33)),
        *bands(*[b"* SEARCH"] * len(BAND_EDGES), b"* SEARCH 1"),
        answer("EXAMINE", *examine_of(11)),
        internaldate(1),
        answer("EXAMINE", *examine_of(33)),
        internaldate(2),
        answer("UID FETCH", *summary_fetch(1, 1)),  # Projects, left selected: no EXAMINE
        answer("EXAMINE", *examine_of(11)),
        answer("UID FETCH", *summary_fetch(1, 1)),
    )
    try:
        arguments = {"mailboxes": ["INBOX", "Archive", "Projects"], "subject": "invoice", "fields": "full"}
        result = search_messages.handle(app, SearchMessagesInput.model_validate(arguments))
        data = result.data
        assert isinstance(data, SearchMessagesData)
        assert [m.message_id.split(":")[2] for m in data.messages] == ["Projects", "INBOX"]
        assert data.total == 2 and data.status == "partial"
        assert [(i.code, i.stage) for i in data.issues] == [("not_found", "search")]
        assert "'Archive'" in data.issues[0].message
        commands = server.commands()
        searches = ["EXAMINE", *["UID SEARCH"] * (len(BAND_EDGES) + 1)]
        assert commands[:1] == ["LOGIN"] and commands[1 : 1 + 3 * len(searches)] == searches * 3
        assert commands[1 + 3 * len(searches) :] == [
            "EXAMINE",
            "UID FETCH",
            "EXAMINE",
            "UID FETCH",
            "UID FETCH",
            "EXAMINE",
            "UID FETCH",
        ]
        # TCP connect, greeting and LOGIN (3), then the searches, the keys, the summaries.
        assert app.connection("default").round_trips == 3 + 3
        assert server.connections == 1 and not server.script
    finally:
        app.close()


@pytest.mark.parametrize(
    ("login", "search_answer"),
    [
        # ESEARCH: the count and every match as a compact set, in one command (RFC 4731).
        (LOGIN_OK, b'* ESEARCH (TAG "{tag}") UID COUNT 4 ALL 7,2990:2991,2999'),
        # Without it, one plain SEARCH: its matches are the total too.
        (LOGIN_OK_REV1, b"* SEARCH 7 2990 2991 2999"),
    ],
)
def test_a_filtered_first_page_of_a_large_mailbox_is_one_scan(login: bytes, search_answer: bytes) -> None:
    """A mailbox larger than the first window (2,000 UIDs): the total and the newest matches come from
    one search (issue 22), where a COUNT and a window search, two scans, went before; the page is the
    newest matches, the total every match."""
    server = ScriptedServer()
    app = app_on(server)
    server.expect(
        answer("LOGIN", login),
        answer("EXAMINE", *examine_answer(3000, 3001)),
        ok("UID SEARCH", search_answer.replace(b"{tag}", b"x")),
        answer(
            "UID FETCH",
            *summary_fetch(2999, 2999),
        ),
    )
    try:
        arguments = {"subject": "invoice", "limit": 1, "fields": "full"}
        result = search_messages.handle(app, SearchMessagesInput.model_validate(arguments))
        data = result.data
        assert isinstance(data, SearchMessagesData)
        assert [m.message_id.rsplit(":", 1)[1] for m in data.messages] == ["2999"]
        assert data.total == 4 and data.has_more
        sent = [s.text for s in server.received]
        assert [s.command for s in server.received] == ["LOGIN", "EXAMINE", "UID SEARCH", "UID FETCH"]
        assert (b"RETURN (COUNT ALL)" in sent[2]) is (login == LOGIN_OK)
        assert app.connection("default").round_trips == 3 + 3  # connect, greeting, LOGIN; then the page
    finally:
        app.close()


#: Dovecot's LOGIN answer without SORT (as Gmail and Microsoft 365 lack it): a page of several mailboxes
#: then searches each in bands of days.
LOGIN_OK_NO_SORT = LOGIN_OK.replace(b" SORT ", b" ")


def test_a_large_mailbox_among_several_reads_the_keys_of_its_newest_band_alone() -> None:
    """Across mailboxes on a server without SORT: a mailbox of 3,000 matches over the years answers its
    bands of days, and the page reads the keys of the newest band that holds it (12 messages of the last
    days), never of the 3,000; the page merges the newest of both mailboxes by INTERNALDATE, and the
    total is every match."""
    server = ScriptedServer()
    app = app_on(server)
    today = dt.datetime.now(dt.UTC).replace(hour=10, minute=0, second=0, microsecond=0)
    recent = {2990 + n: today - dt.timedelta(minutes=n) for n in range(12)}

    def internal(when: dt.datetime) -> bytes:
        return when.strftime("%d-%b-%Y %H:%M:%S +0000").encode()

    older = " ".join(str(uid) for uid in range(1, 2989)).encode()
    server.expect(
        answer("LOGIN", LOGIN_OK_NO_SORT),
        answer("EXAMINE", *examine_answer(3000, 3002)),
        *bands(
            b"* SEARCH " + " ".join(str(uid) for uid in recent).encode(), b"* SEARCH", b"* SEARCH " + older
        ),
        answer("EXAMINE", *examine_of(33)),
        *bands(b"* SEARCH 1"),
        answer("EXAMINE", *examine_answer(3000, 3002)),
        ok(
            "UID FETCH",
            *(b'* %d FETCH (UID %d INTERNALDATE "%s")' % (u, u, internal(w)) for u, w in recent.items()),
        ),
        answer("EXAMINE", *examine_of(33)),
        ok("UID FETCH", b'* 1 FETCH (UID 1 INTERNALDATE "%s")' % internal(today + dt.timedelta(hours=1))),
        answer("UID FETCH", *summary_fetch(1, 1)),  # INBOX, left selected
        answer("EXAMINE", *examine_answer(3000, 3002)),
        answer("UID FETCH", *summary_fetch(2990, 2990)),
    )
    try:
        arguments = {"mailboxes": ["Archive", "INBOX"], "subject": "invoice", "limit": 2, "fields": "full"}
        result = search_messages.handle(app, SearchMessagesInput.model_validate(arguments))
        data = result.data
        assert isinstance(data, SearchMessagesData)
        assert [m.message_id.split(":", 2)[2] for m in data.messages] == [
            "INBOX:33:1",
            f"Archive:{UIDVALIDITY}:2990",
        ]
        assert data.total == 12 + 2988 + 1 and data.has_more and data.status == "ok"
        assert data.next_cursor is not None and len(data.next_cursor) <= 80
        keys = next(s.text for s in server.received if s.command == "UID FETCH")
        assert b"2990:3001" in keys and b"2988" not in keys
        assert app.connection("default").round_trips == 3 + 3
        assert not server.script
    finally:
        app.close()

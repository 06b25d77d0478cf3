"""imap_search_messages in sent-date order (``sort: "date"``) and across mailboxes (``mailbox: "*"`` or a list).

Through the SDK's MCP client against the server matrix (Dovecot, Cyrus in both namespaces, Courier, all of
which advertise SORT), and against a Dovecot that advertises no SORT (``no_sort_dovecot``): the bounded
fallback, with its window made small so a few dozen messages span several windows. Mail is seeded with
Date headers in another order than its arrival (INTERNALDATE, UID), so the two orders differ.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from mail_imap_mcp.config import Config
from mail_imap_mcp.imap import sort as sort_module
from mail_imap_mcp.mail.cursors import ANCHORS
from tests.support.accounts import account_settings
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.mail import mailgen
from tests.support.mail.mail_state import change_inbox
from tests.support.round_trips import logged_cost
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.matrix import INBOX_ONLY, ON_DOVECOT, SESSION_PASSWORD, MatrixServer
from tests.support.wire import ImapRecorder

pytestmark = pytest.mark.anyio

TOOL = "imap_search_messages"
BASE = dt.datetime(2025, 3, 1, 12, tzinfo=dt.UTC)
#: A permutation of 0..N-1 for the Date headers: message i (arrival order) was sent on day SENT[i].
N = 23
SENT = [(i * 7) % N for i in range(N)]


def shuffled(n: int = N, tag: str = "m") -> tuple[list[bytes], list[dt.datetime]]:
    """Messages ``tag-i`` arriving an hour apart (INTERNALDATE) whose Date headers are in another order."""
    messages, arrivals = [], []
    for i in range(n):
        sent = BASE + dt.timedelta(days=(i * 7) % n)
        messages.append(mailgen.plain_message(subject=f"{tag}-{i}", body=f"body {tag} {i}", date=sent))
        arrivals.append(BASE + dt.timedelta(days=40, hours=i))
    return messages, arrivals


async def page_all(
    mcp: EnvelopeClient, arguments: dict[str, Any]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every page's data and every summary, following next_cursor to the end."""
    pages = [await mcp.ok(TOOL, {"fields": "full", **arguments})]
    while pages[-1]["has_more"]:
        assert pages[-1]["next_action"]["tool"] == TOOL
        pages.append(await mcp.ok(TOOL, pages[-1]["next_action"]["arguments"]))
        assert len(pages) < 200, "paging does not end"
    return pages, [m for page in pages for m in page["messages"]]


def uid_of(client: Any, subject: str) -> int:
    """UID of the message with exactly this subject in the client's selected mailbox."""
    found = client.fetch(client.search("ALL"), ["ENVELOPE"])
    (uid,) = [u for u, d in found.items() if d[b"ENVELOPE"].subject == subject.encode()]
    return int(uid)


def subjects(messages: list[dict[str, Any]]) -> list[str]:
    return [m["subject"] for m in messages]


def by_sent_date(tag: str, indexes: list[int], n: int = N) -> list[str]:
    """Subjects of ``tag-i`` newest sent date first."""
    return [f"{tag}-{i}" for i in sorted(indexes, key=lambda i: (i * 7) % n, reverse=True)]


# ------------------------------------------------------------------------------------------ date order


@INBOX_ONLY
async def test_date_order_pages_by_sent_date_not_arrival(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient
) -> None:
    messages, arrivals = shuffled()
    imap_server.seed(user, "INBOX", messages, internaldates=arrivals)
    arrival = await mcp.ok(TOOL, {"fields": "full", "limit": 5, "snippet_chars": 0})
    assert subjects(arrival["messages"]) == [f"m-{i}" for i in range(N - 1, N - 6, -1)]
    pages, listed = await page_all(mcp, {"limit": 5, "sort": "date", "snippet_chars": 0})
    assert subjects(listed) == by_sent_date("m", list(range(N)))
    assert [p["total"] for p in pages] == [N] * len(pages)
    assert pages[0]["messages"][0]["date"] == (BASE + dt.timedelta(days=N - 1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert "sort" in pages[0]["next_action"]["arguments"]
    assert pages[-1]["next_action"]["tool"] == "imap_get_message"


@INBOX_ONLY
async def test_date_order_with_a_filter(imap_server: MatrixServer, user: str, mcp: EnvelopeClient) -> None:
    messages, arrivals = shuffled()
    imap_server.seed(user, "INBOX", messages, internaldates=arrivals)
    # "m-1" matches m-1 and m-10..m-19 by subject.
    wanted = [1, *range(10, 20)]
    pages, listed = await page_all(mcp, {"limit": 4, "sort": "date", "subject": "m-1", "snippet_chars": 0})
    assert subjects(listed) == by_sent_date("m", wanted)
    assert pages[0]["total"] == len(wanted)


@INBOX_ONLY
async def test_date_order_stays_stable_when_mail_arrives_and_is_deleted_between_pages(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient
) -> None:
    messages, arrivals = shuffled()
    imap_server.seed(user, "INBOX", messages, internaldates=arrivals)
    first = await mcp.ok(TOOL, {"fields": "full", "limit": 6, "sort": "date", "snippet_chars": 0})
    expected = by_sent_date("m", list(range(N)))
    assert subjects(first["messages"]) == expected[:6]
    # New mail sent "before" and "after" the anchor arrives; one listed and one not-yet-listed message go.
    late = [
        mailgen.plain_message(subject="late-old", body="x", date=BASE - dt.timedelta(days=3)),
        mailgen.plain_message(subject="late-new", body="x", date=BASE + dt.timedelta(days=99)),
    ]
    gone = {expected[2], expected[12]}
    change_inbox(imap_server, user, add=late, remove=lambda writer: [uid_of(writer, s) for s in gone])
    _, rest = await page_all(mcp, first["next_action"]["arguments"])
    # Nothing repeated, nothing skipped, nothing that arrived after the first page.
    assert subjects(rest) == [s for s in expected[6:] if s != expected[12]]


@INBOX_ONLY
async def test_date_order_continues_by_date_when_the_page_s_last_messages_were_deleted(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient
) -> None:
    messages, arrivals = shuffled()
    imap_server.seed(user, "INBOX", messages, internaldates=arrivals)
    first = await mcp.ok(TOOL, {"fields": "full", "limit": 5, "sort": "date", "snippet_chars": 0})
    second = await mcp.ok(TOOL, first["next_action"]["arguments"])
    expected = by_sent_date("m", list(range(N)))
    assert subjects(first["messages"] + second["messages"]) == expected[:10]
    # Every anchor the cursor keeps (the page's last messages) is deleted: the next page finds its place
    # by the date of the last message listed instead.
    doomed = [m["uid"] for m in second["messages"][-ANCHORS:]]
    change_inbox(imap_server, user, remove=lambda writer: doomed)
    _, rest = await page_all(mcp, second["next_action"]["arguments"])
    assert subjects(rest) == expected[10:]


@ON_DOVECOT
async def test_a_date_cursor_does_not_fit_an_arrival_search_and_back(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient
) -> None:
    # Dovecot alone: the cursor's fit is the service's:
    # tests/pure/test_search_pages.py::test_a_cursor_of_another_search_or_garbled_is_refused,
    # tests/pure/test_cursor.py::test_a_truncated_or_altered_cursor_is_a_cursor_error.
    imap_server.seed(user, "INBOX", list(mailgen.corpus(6)))
    by_date = (await mcp.ok(TOOL, {"fields": "full", "limit": 2, "sort": "date"}))["next_cursor"]
    by_arrival = (await mcp.ok(TOOL, {"fields": "full", "limit": 2}))["next_cursor"]
    await mcp.fail(TOOL, {"fields": "full", "limit": 2, "cursor": by_date}, "invalid_input")
    await mcp.fail(
        TOOL, {"fields": "full", "limit": 2, "sort": "date", "cursor": by_arrival}, "invalid_input"
    )
    await mcp.fail(
        TOOL, {"fields": "full", "limit": 2, "sort": "date", "query": "x", "cursor": by_date}, "invalid_input"
    )
    tampered = by_date[:-3] + ("A" if by_date[-3] != "A" else "B") + by_date[-2:]
    await mcp.fail(TOOL, {"fields": "full", "limit": 2, "sort": "date", "cursor": tampered}, "invalid_input")


# ----------------------------------------------------------------- a server without SORT (the fallback)


@pytest.fixture(scope="module")
def no_sort_dovecot() -> Iterator[Dovecot]:
    """A Dovecot that advertises neither SORT nor THREAD nor ESEARCH (like Gmail and Microsoft 365)."""
    with Dovecot(capabilities="IMAP4rev1 LITERAL+ UNSELECT SPECIAL-USE", password=SESSION_PASSWORD) as server:
        yield server


@pytest.fixture
def no_sort_user(no_sort_dovecot: Dovecot) -> str:
    """A user of ``no_sort_dovecot`` whose INBOX holds the shuffled messages."""
    user = no_sort_dovecot.new_user()
    messages, arrivals = shuffled()
    no_sort_dovecot.seed(user, "INBOX", messages, internaldates=arrivals)
    return user


@pytest.fixture
def no_sort_config(no_sort_dovecot: Dovecot, no_sort_user: str) -> Config:
    return make_config({"default": account_settings(no_sort_dovecot, no_sort_user)})


@pytest.fixture
def small_window(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(sort_module, "DATE_WINDOW", 10)
    return 10


async def test_without_sort_date_order_is_exact_within_the_window_and_never_sends_sort(
    no_sort_dovecot: Dovecot, no_sort_user: str
) -> None:
    recorder = ImapRecorder(no_sort_dovecot.plain_port)
    settings = account_settings(no_sort_dovecot, no_sort_user, port=recorder.port, security="plain")
    try:
        async for mcp in open_client(make_config({"default": settings})):
            _pages, listed = await page_all(mcp, {"limit": 5, "sort": "date", "snippet_chars": 0})
            envelope = await mcp.call(TOOL, {"fields": "full", "limit": 5, "sort": "date"})
    finally:
        sent = b"".join(s for s, _ in recorder.take())
        recorder.close()
    assert subjects(listed) == by_sent_date("m", list(range(N)))
    assert not envelope["meta"]["warnings"] or all("SORT" not in w for w in envelope["meta"]["warnings"])
    assert b" SORT " not in sent and b"THREAD" not in sent and b"RETURN" not in sent


async def test_without_sort_a_search_spanning_several_windows_says_so_and_lists_each_message_once(
    no_sort_dovecot: Dovecot, no_sort_user: str, no_sort_config: Config, small_window: int
) -> None:
    async for mcp in open_client(no_sort_config):
        first = await mcp.call(TOOL, {"fields": "full", "limit": 4, "sort": "date", "snippet_chars": 0})
        assert any("no SORT" in w and str(small_window) in w for w in first["meta"]["warnings"]), first[
            "meta"
        ]["warnings"]
        _, listed = await page_all(mcp, {"limit": 4, "sort": "date", "snippet_chars": 0})
    # Windows of the 10 newest arrivals (UIDs 23..14, 13..4, 3..1), each in date order.
    blocks = [list(range(N - 1, N - 11, -1)), list(range(N - 11, N - 21, -1)), list(range(N - 21, -1, -1))]
    assert subjects(listed) == [s for block in blocks for s in by_sent_date("m", block)]


async def test_without_sort_paging_stays_stable_when_mail_arrives_between_pages(
    no_sort_dovecot: Dovecot, no_sort_user: str, no_sort_config: Config, small_window: int
) -> None:
    async for mcp in open_client(no_sort_config):
        _, everything = await page_all(mcp, {"limit": 4, "sort": "date", "snippet_chars": 0})
        first = await mcp.ok(TOOL, {"fields": "full", "limit": 4, "sort": "date", "snippet_chars": 0})
        no_sort_dovecot.seed(
            no_sort_user,
            "INBOX",
            [mailgen.plain_message(subject="late", body="x", date=BASE + dt.timedelta(days=1))],
        )
        _, rest = await page_all(mcp, first["next_action"]["arguments"])
    assert subjects(first["messages"]) + subjects(rest) == subjects(everything)


# ------------------------------------------------------------------------------------- every mailbox


def _mailboxes(server: MatrixServer) -> dict[str, str]:
    return {name: server.mailbox_name(name) for name in ("Sent", "Archive", "Trash", "Junk")}


def seed_folders(server: MatrixServer, user: str) -> dict[str, list[str]]:
    """Mail in INBOX, Sent, Archive, Trash and Junk, arrivals interleaved across them; returns the subjects
    per mailbox name (the server's spelling) and leaves newest-arrival order to ``arrival_order``."""
    names = {"INBOX": "INBOX", **_mailboxes(server)}
    placed: dict[str, list[str]] = {}
    for index, (short, name) in enumerate(names.items()):
        count = 7 if short in ("INBOX", "Archive") else 4
        batch = []
        stamps = []
        for i in range(count):
            serial = i * len(names) + index
            batch.append(
                mailgen.plain_message(
                    subject=f"{short}-{serial}",
                    body=f"text {short} {serial}",
                    date=BASE + dt.timedelta(days=(serial * 11) % 37),
                )
            )
            stamps.append(BASE + dt.timedelta(days=50, hours=serial))
        server.seed(user, name, batch, internaldates=stamps)
        placed[name] = [f"{short}-{i * len(names) + index}" for i in range(count)]
    return placed


def _serial(subject: str) -> int:
    return int(subject.rsplit("-", 1)[1])


async def test_every_mailbox_merges_newest_first_and_pages_each_message_once(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient
) -> None:
    placed = seed_folders(imap_server, user)
    boxes = _mailboxes(imap_server)
    pages, listed = await page_all(mcp, {"mailbox": "*", "limit": 4, "snippet_chars": 0})
    searched = [n for n in placed if n not in (boxes["Trash"], boxes["Junk"])]
    expected = sorted((s for n in searched for s in placed[n]), key=_serial, reverse=True)
    assert subjects(listed) == expected
    assert sorted(pages[0]["mailboxes"]) == sorted(searched) or set(searched) <= set(pages[0]["mailboxes"])
    assert pages[0]["total"] == len(expected)
    for message in listed:
        home = next(n for n, s in placed.items() if message["subject"] in s)
        assert message["mailbox"] == home
        assert message["message_id"].startswith(f"imap:default:{home}:")
    assert pages[0]["mailbox"] == "*"
    assert "mailbox(es)" in (await mcp.call(TOOL, {"fields": "full", "mailbox": "*", "limit": 1}))["summary"]
    # A message id from the merged page reads its message.
    read = await mcp.ok("imap_get_message", {"message_id": listed[-1]["message_id"]})
    assert read["message"]["subject"] == listed[-1]["subject"]


async def test_trash_and_junk_are_searched_when_named(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient
) -> None:
    placed = seed_folders(imap_server, user)
    boxes = _mailboxes(imap_server)
    _, listed = await page_all(mcp, {"mailboxes": ["*", boxes["Trash"]], "limit": 5, "snippet_chars": 0})
    searched = [n for n in placed if n != boxes["Junk"]]
    assert subjects(listed) == sorted((s for n in searched for s in placed[n]), key=_serial, reverse=True)
    _, junk_only = await page_all(
        mcp, {"mailboxes": [boxes["Junk"], "INBOX"], "limit": 3, "snippet_chars": 0}
    )
    assert subjects(junk_only) == sorted(placed[boxes["Junk"]] + placed["INBOX"], key=_serial, reverse=True)


async def test_every_mailbox_in_date_order(imap_server: MatrixServer, user: str, mcp: EnvelopeClient) -> None:
    placed = seed_folders(imap_server, user)
    boxes = _mailboxes(imap_server)
    _, listed = await page_all(mcp, {"mailbox": "*", "sort": "date", "limit": 4, "snippet_chars": 0})
    searched = [s for n, subs in placed.items() if n not in (boxes["Trash"], boxes["Junk"]) for s in subs]
    assert subjects(listed) == sorted(searched, key=lambda s: (_serial(s) * 11) % 37, reverse=True)
    dates = [m["date"] for m in listed]
    assert dates == sorted(dates, reverse=True)


async def test_date_order_across_mailboxes_places_a_message_without_date_by_its_arrival(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient
) -> None:
    """A message without a Date header sorts by its INTERNALDATE (RFC 5256), which the date searches of
    a next page cannot see (SENTBEFORE has nothing to compare): it still comes once, at its place."""
    placed = seed_folders(imap_server, user)
    boxes = _mailboxes(imap_server)
    undated = b"From: a@example.com\r\nSubject: Archive-undated\r\n\r\nno date\r\n"
    arrival = BASE + dt.timedelta(days=20, hours=6)  # between the sent dates of the seeded mail
    imap_server.seed(user, boxes["Archive"], [undated], internaldates=[arrival])
    _, listed = await page_all(mcp, {"mailbox": "*", "sort": "date", "limit": 3, "snippet_chars": 0})
    searched = [s for n, subs in placed.items() if n not in (boxes["Trash"], boxes["Junk"]) for s in subs]
    sent = {s: BASE + dt.timedelta(days=(_serial(s) * 11) % 37) for s in searched}
    sent["Archive-undated"] = arrival
    assert sorted(subjects(listed)) == sorted(sent)
    assert [sent[s] for s in subjects(listed)] == sorted(sent.values(), reverse=True)


async def test_many_messages_arriving_in_one_second_are_each_listed_once_across_mailboxes(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient
) -> None:
    """30 messages of one mailbox share one INTERNALDATE (an import), more than a page reads keys for:
    the plan reads more keys rather than trust the server's order of equal times (Courier reverses it),
    and every message comes once, in mailbox order within the second."""
    boxes = _mailboxes(imap_server)
    same = BASE + dt.timedelta(days=3)
    burst = [mailgen.plain_message(f"Archive-{i}", "burst", date=same) for i in range(30)]
    imap_server.seed(user, boxes["Archive"], burst, internaldates=[same] * 30)
    around = [(f"INBOX-{i}", same + dt.timedelta(seconds=(-1) ** i * (i + 1) * 60)) for i in range(6)]
    imap_server.seed(
        user,
        "INBOX",
        [mailgen.plain_message(s, "around", date=d) for s, d in around],
        internaldates=[d for _, d in around],
    )
    _, listed = await page_all(mcp, {"mailbox": "*", "limit": 3, "snippet_chars": 0})
    newer = [s for s, d in sorted(around, key=lambda a: a[1], reverse=True) if d > same]
    older = [s for s, d in sorted(around, key=lambda a: a[1], reverse=True) if d < same]
    assert subjects(listed) == newer + [f"Archive-{i}" for i in range(30)] + older


async def test_a_search_of_every_mailbox_for_non_ascii_text_pages_with_a_short_cursor(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient
) -> None:
    """CHARSET UTF-8 text (a literal, one mailbox after the other) pages by one position too: every match
    once, newest first across the mailboxes, the cursor the same few dozen characters in arrival and in
    date order."""
    boxes = _mailboxes(imap_server)
    placed: dict[str, list[tuple[str, dt.datetime]]] = {}
    for offset, name in enumerate(("INBOX", boxes["Archive"], boxes["Sent"])):
        items = [(f"Grüße {name} {i}", BASE + dt.timedelta(hours=3 * i + offset)) for i in range(4)]
        items.append((f"plain {name}", BASE + dt.timedelta(hours=40 + offset)))
        imap_server.seed(
            user,
            name,
            [mailgen.plain_message(s, "text", date=d) for s, d in items],
            internaldates=[d for _, d in items],
        )
        placed[name] = items[:4]
    newest = [s for s, _ in sorted((i for v in placed.values() for i in v), key=lambda i: i[1], reverse=True)]
    for sort in ("arrival", "date"):
        pages, listed = await page_all(
            mcp, {"mailbox": "*", "subject": "Grüße", "limit": 5, "snippet_chars": 0, "sort": sort}
        )
        assert subjects(listed) == newest, sort
        assert all(len(page["next_cursor"]) < 80 for page in pages[:-1]), sort


async def test_every_mailbox_with_a_filter_and_mail_arriving_between_pages(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient
) -> None:
    """Mail delivered between pages (arrived now) is newer than the page reached and stays out; a message
    filed meanwhile with an older arrival time comes once, at its place; nothing comes twice."""
    placed = seed_folders(imap_server, user)
    boxes = _mailboxes(imap_server)
    first = await mcp.ok(
        TOOL, {"fields": "full", "mailbox": "*", "limit": 3, "body": "text", "snippet_chars": 0}
    )
    now = dt.datetime.now(dt.UTC)
    late = [mailgen.plain_message(subject="late text", body="text late", date=now)]
    imap_server.seed(user, boxes["Archive"], late, internaldates=[now])
    imap_server.seed(user, "INBOX", [mailgen.plain_message(subject="late inbox", body="text late", date=now)])
    # Filed meanwhile, with the arrival time of a message the paging has not reached yet.
    filed = [mailgen.plain_message(subject="Sent-2", body="text filed", date=BASE)]
    imap_server.seed(user, boxes["Sent"], filed, internaldates=[BASE + dt.timedelta(days=50, hours=2)])
    _, rest = await page_all(mcp, first["next_action"]["arguments"])
    searched = [s for n, subs in placed.items() if n not in (boxes["Trash"], boxes["Junk"]) for s in subs]
    listed = subjects(first["messages"]) + subjects(rest)
    assert listed == sorted([*searched, "Sent-2"], key=_serial, reverse=True)
    assert first["total"] == len(searched)


@ON_DOVECOT
async def test_a_mailbox_that_fails_makes_the_page_partial_and_the_rest_is_listed(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient
) -> None:
    # Dovecot alone: a failed mailbox among others is the service's; every backend:
    # tests/pure/test_search_pages.py::test_a_missing_mailbox_fails_a_search_of_it_alone_and_is_said_among_others,
    # mail_contract_cases.py::a_missing_mailbox_fails_a_page_of_it_alone_or_is_its_failure.
    placed = seed_folders(imap_server, user)
    missing = imap_server.mailbox_name("NoSuchFolder")
    envelope = await mcp.call(
        TOOL, {"fields": "full", "mailboxes": ["INBOX", missing], "limit": 50, "snippet_chars": 0}
    )
    data = envelope["data"]
    assert envelope["success"] and data["status"] == "partial"
    (issue,) = data["issues"]
    assert issue["code"] == "not_found" and missing in issue["message"]
    assert sorted(subjects(data["messages"])) == sorted(placed["INBOX"])
    # That page's cursor leaves the missing mailbox out and goes on with the others.
    envelope = await mcp.call(
        TOOL, {"fields": "full", "mailboxes": ["INBOX", missing], "limit": 3, "snippet_chars": 0}
    )
    _, rest = await page_all(mcp, envelope["data"]["next_action"]["arguments"])
    assert sorted(subjects(envelope["data"]["messages"]) + subjects(rest)) == sorted(placed["INBOX"])


async def test_a_mailbox_deleted_between_pages_is_a_conflict_that_reruns_the_search(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient, config: Config
) -> None:
    """The cursor binds the mailboxes' names and UIDVALIDITYs (a digest): one deleted, created or
    recreated since the first page makes the next page a conflict, whose next_action starts again."""
    placed = seed_folders(imap_server, user)
    boxes = _mailboxes(imap_server)
    arguments = {"fields": "full", "mailbox": "*", "limit": 3, "snippet_chars": 0}
    first = await mcp.ok(TOOL, arguments)
    imap_server.delete_mailbox(user, boxes["Archive"])
    failure = await mcp.fail(TOOL, first["next_action"]["arguments"], "conflict")
    rerun = failure["data"]["next_action"]["arguments"]
    assert "cursor" not in rerun and rerun["mailbox"] == "*"
    _, listed = await page_all(mcp, rerun)
    kept = [s for n in ("INBOX", boxes["Sent"]) for s in placed[n]]
    assert sorted(subjects(listed)) == sorted(kept)
    # A folder created meanwhile is left out of the later pages of a search this process started ...
    first = await mcp.ok(TOOL, arguments)
    _create(imap_server, user, "Fresh")
    _, rest = await page_all(mcp, first["next_action"]["arguments"])
    assert sorted(subjects(first["messages"]) + subjects(rest)) == sorted(kept)
    # ... and where the server restarted between pages (the list is made again), it is a conflict; a
    # restart alone changes nothing.
    for created in (None, "Fresher"):
        first = await mcp.ok(TOOL, arguments)
        if created:
            _create(imap_server, user, created)
        async for restarted in open_client(config):
            if created:
                await restarted.fail(TOOL, first["next_action"]["arguments"], "conflict")
            else:
                await restarted.ok(TOOL, first["next_action"]["arguments"])


def _create(server: MatrixServer, user: str, name: str) -> None:
    """A mailbox created over IMAP, as another client would (the harness may write Dovecot's files
    directly, which a running session's list does not see)."""
    writer = server.connect(user)
    try:
        writer.create_folder(server.mailbox_name(name))
    finally:
        writer.logout()


@ON_DOVECOT
async def test_unknown_mailbox_named_alone_is_still_not_found(
    imap_server: MatrixServer, mcp: EnvelopeClient
) -> None:
    # Dovecot alone: every backend:
    # tests/pure/test_search_pages.py::test_a_missing_mailbox_fails_a_search_of_it_alone_and_is_said_among_others,
    # mail_contract_cases.py::a_missing_mailbox_fails_a_page_of_it_alone_or_is_its_failure.
    await mcp.fail(
        TOOL, {"fields": "full", "mailbox": imap_server.mailbox_name("Nope"), "sort": "date"}, "not_found"
    )


# --------------------------------------------------------------------------------------- round trips


def seed_account(server: Dovecot) -> str:
    """A plausible account: INBOX 300, Archive 200, Sent 60, Projects 40, three empty folders, Trash, Junk."""
    user = server.new_user()
    for name, count, seed in (("INBOX", 300, 1), ("Archive", 200, 2), ("Sent", 60, 3), ("Projects", 40, 4)):
        server.seed(user, name, list(mailgen.corpus(count, seed=seed)))
    for name in ("Trash", "Junk"):
        server.seed(user, name, list(mailgen.corpus(5, seed=9)))
    writer = server.connect(user)
    try:
        for name in ("Empty1", "Empty2", "Templates"):
            writer.create_folder(name)
    finally:
        writer.logout()
    return user


COST_CASES = (
    ("inbox, arrival", {"limit": 20}),
    ("inbox, date", {"limit": 20, "sort": "date"}),
    ("every mailbox, arrival", {"mailbox": "*", "limit": 20}),
    ("every mailbox, date", {"mailbox": "*", "limit": 20, "sort": "date"}),
    ("every mailbox, from=example", {"mailbox": "*", "limit": 20, "from": "example"}),
)


async def measure_costs(config: Config, caplog: pytest.LogCaptureFixture) -> dict[str, tuple[int, int]]:
    """IMAP commands and round trips (the connection's debug line) of a first and a next page of each case."""
    caplog.set_level(logging.DEBUG, logger="mail_imap_mcp.imap")
    costs: dict[str, tuple[int, int]] = {}
    async for mcp in open_client(config):
        await mcp.ok("imap_list_mailboxes")  # connected and logged in before the first measure
        for label, arguments in COST_CASES:
            caplog.clear()
            first = await mcp.ok(TOOL, {"fields": "full", **arguments})
            costs[f"{label}, first page"] = logged_cost(caplog)
            caplog.clear()
            await mcp.ok(TOOL, first["next_action"]["arguments"])
            costs[f"{label}, next page"] = logged_cost(caplog)
    for label, (commands, trips) in costs.items():
        print(f"{label}: imap_commands={commands} round_trips={trips}")
    return costs


async def test_round_trips_per_page(dovecot: Dovecot, caplog: pytest.LogCaptureFixture) -> None:
    """Prints the cost of each new path and pins the bounds: a page costs a few round trips per mailbox
    with matches (five here: INBOX, Archive, Sent, Projects; the empty ones cost nothing with LIST-STATUS),
    whatever the mailboxes hold."""
    config = make_config({"default": account_settings(dovecot, seed_account(dovecot))})
    costs = await measure_costs(config, caplog)
    assert costs["inbox, date, first page"][1] <= 3
    assert costs["inbox, date, next page"][1] <= 3
    # Per mailbox with mail: EXAMINE, SEARCH (and COUNT on a filtered first page, in the same round trip
    # with ESEARCH), FETCH of the merge keys, then EXAMINE and FETCH of the summaries in one round trip
    # where it contributes to the page (none for the mailbox left selected). With SORT, EXAMINE and SORT
    # go together too.
    # Since issue 22 every mailbox is read in the same round trips: LIST-STATUS, then (issue 33 item 11,
    # a cursor of one position) EXAMINE with UID SORT (REVERSE ARRIVAL) of all, the merge keys of all,
    # the summaries of all; one more than the windows of before (3 and 2), for a cursor of 52 characters
    # whatever the number of mailboxes. A next page lists nothing (the list is kept per process).
    assert costs["every mailbox, arrival, first page"][1] == 4
    assert costs["every mailbox, arrival, next page"][1] == 3
    assert costs["every mailbox, from=example, first page"][1] == 4
    assert costs["every mailbox, from=example, next page"][1] == 3
    # Date order across mailboxes by one position too (UID SORT (REVERSE DATE)): 4 and 3, where one
    # mailbox after the other took 10 and 9.
    assert costs["every mailbox, date, first page"][1] == 4
    assert costs["every mailbox, date, next page"][1] == 3


async def test_round_trips_per_page_without_sort(
    no_sort_dovecot: Dovecot, caplog: pytest.LogCaptureFixture
) -> None:
    config = make_config({"default": account_settings(no_sort_dovecot, seed_account(no_sort_dovecot))})
    costs = await measure_costs(config, caplog)
    assert costs["inbox, date, first page"][1] <= 4
    # Every mailbox by one position as where the server sorts (issue 33 item 11): LIST, then each
    # mailbox's EXAMINE with its bands of days, the keys of the bands a page needs, the summaries. The
    # windows of before took 3 and 2 in arrival order, 20 and more in date order.
    for order in ("arrival", "date", "from=example"):
        assert costs[f"every mailbox, {order}, first page"][1] == 4, costs
        assert costs[f"every mailbox, {order}, next page"][1] == 3, costs


async def test_without_sort_every_mailbox_in_date_order(no_sort_dovecot: Dovecot) -> None:
    user = no_sort_dovecot.new_user()
    placed = seed_folders(no_sort_dovecot, user)
    config = make_config({"default": account_settings(no_sort_dovecot, user)})
    async for mcp in open_client(config):
        _, listed = await page_all(mcp, {"mailbox": "*", "sort": "date", "limit": 4, "snippet_chars": 0})
    searched = [s for n, subs in placed.items() if n not in ("Trash", "Junk") for s in subs]
    assert subjects(listed) == sorted(searched, key=lambda s: (_serial(s) * 11) % 37, reverse=True)


async def test_without_sort_every_mailbox_pages_by_arrival_from_one_short_position_whatever_the_uids(
    no_sort_dovecot: Dovecot,
) -> None:
    """Issue 33 item 11 on a server without SORT (as Gmail, Microsoft 365): a page of several mailboxes
    continues from one position, so its cursor stays short whatever the number of mailboxes, and the
    order is true arrival order even where UIDs do not follow it (mail imported late with old arrival
    times, years apart, and a day's mail in one zone): each message once, at its place."""
    user = no_sort_dovecot.new_user()
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    spans = [0, 1, 3, 30, 400, 2900, 9000]  # days back: today's band to the band of everything older
    names = ("INBOX", "Archive", "Projects", *(f"Folder{n}" for n in range(9)))
    arrivals: dict[str, dt.datetime] = {}
    for index, name in enumerate(names):
        batch = []
        for i in range(len(spans) if index < 3 else 2):
            # Higher UIDs arrive earlier (imported later), hours and days apart per mailbox.
            when = now - dt.timedelta(days=spans[(i + index) % len(spans)], hours=index, minutes=i)
            subject = f"{name}-{i}"
            arrivals[subject] = when
            batch.append((mailgen.plain_message(subject=subject, body="x", date=when), when))
        no_sort_dovecot.seed(user, name, [m for m, _ in batch], internaldates=[w for _, w in batch])
    recorder = ImapRecorder(no_sort_dovecot.plain_port)
    settings = account_settings(no_sort_dovecot, user, port=recorder.port, security="plain")
    try:
        async for mcp in open_client(make_config({"default": settings})):
            pages, listed = await page_all(mcp, {"mailbox": "*", "limit": 4, "snippet_chars": 0})
    finally:
        sent = b"".join(s for s, _ in recorder.take())
        recorder.close()
    order = {name: i for i, name in enumerate(sorted(names, key=lambda n: (n != "INBOX", n)))}
    expected = sorted(arrivals, key=lambda s: (-arrivals[s].timestamp(), order[s.rsplit("-", 1)[0]]))
    assert [m["subject"] for m in listed] == expected
    assert pages[0]["total"] == len(arrivals)
    cursors = [page["next_cursor"] for page in pages[:-1]]
    assert cursors and max(len(c) for c in cursors) <= 80
    assert b" SORT " not in sent and b"RETURN" not in sent


async def test_without_sort_a_page_reads_the_keys_of_the_newest_days_alone(no_sort_dovecot: Dovecot) -> None:
    """Each band of days is its own search, answered by its own untagged SEARCH in the pipelined batch:
    a page reads the keys of the band that holds it (today's mail), not of mail of years ago."""
    user = no_sort_dovecot.new_user()
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    for name in ("INBOX", "Archive"):
        stamps = [now - dt.timedelta(minutes=m) for m in range(20)]
        stamps += [now - dt.timedelta(days=2000, minutes=m) for m in range(20)]  # UIDs 21-40
        messages = [
            mailgen.plain_message(subject=f"{name} {i}", body="x", date=d) for i, d in enumerate(stamps)
        ]
        no_sort_dovecot.seed(user, name, messages, internaldates=stamps)
    recorder = ImapRecorder(no_sort_dovecot.plain_port)
    settings = account_settings(no_sort_dovecot, user, port=recorder.port, security="plain")
    try:
        async for mcp in open_client(make_config({"default": settings})):
            page = await mcp.ok(TOOL, {"mailboxes": ["INBOX", "Archive"], "limit": 3, "fields": "full"})
    finally:
        sent = b"".join(s for s, _ in recorder.take())
        recorder.close()
    assert subjects(page["messages"]) == ["INBOX 0", "Archive 0", "INBOX 1"]
    assert page["total"] == 80
    keys = [line for line in sent.split(b"\r\n") if line.endswith(b"(INTERNALDATE)")]
    assert len(keys) == 2 and all(b" 1:20 " in line for line in keys), keys


async def test_empty_mailboxes_are_not_opened_where_list_status_counts_them(dovecot: Dovecot) -> None:
    """Dovecot advertises LIST-STATUS: the LIST of a search of every mailbox brings each one's MESSAGES, and
    the empty ones are reported as searched without an EXAMINE of their own."""
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", list(mailgen.corpus(3)))
    writer = dovecot.connect(user)
    try:
        for name in ("Empty1", "Empty2", "Projects/Empty3"):
            writer.create_folder(name)
    finally:
        writer.logout()
    recorder = ImapRecorder(dovecot.plain_port)
    settings = account_settings(dovecot, user, port=recorder.port, security="plain")
    try:
        async for mcp in open_client(make_config({"default": settings})):
            data = await mcp.ok(TOOL, {"fields": "full", "mailbox": "*", "limit": 5})
    finally:
        sent = b"".join(s for s, _ in recorder.take())
        recorder.close()
    assert {"Empty1", "Empty2", "Projects/Empty3", "INBOX"} <= set(data["mailboxes"])
    assert len(data["messages"]) == 3
    assert b"RETURN (STATUS (MESSAGES UIDNEXT))" in sent
    assert b'EXAMINE "INBOX"' in sent and b"Empty" not in sent.split(b"LIST", 1)[1].split(b"\r\n", 1)[1]


async def test_a_mailbox_whose_next_message_cannot_make_the_page_takes_no_part_in_it(
    dovecot: Dovecot, caplog: pytest.LogCaptureFixture
) -> None:
    """Archive holds only old mail: while INBOX's newer mail fills the pages, Archive is read in the same
    round trips and gives none of them; then it follows, and every message comes once."""
    user = dovecot.new_user()
    recent = [dated_plain(f"new-{i}", BASE + dt.timedelta(days=100 + i)) for i in range(12)]
    old = [dated_plain(f"old-{i}", BASE + dt.timedelta(days=i)) for i in range(7)]
    dovecot.seed(user, "INBOX", recent)
    dovecot.seed(user, "Archive", old)
    config = make_config({"default": account_settings(dovecot, user)})
    caplog.set_level(logging.DEBUG, logger="mail_imap_mcp.imap")
    async for mcp in open_client(config):
        pages, listed = await page_all(mcp, {"mailbox": "*", "limit": 4, "snippet_chars": 0})
        first = await mcp.ok(TOOL, {"fields": "full", "mailbox": "*", "limit": 4, "snippet_chars": 0})
        caplog.clear()
        second = await mcp.ok(TOOL, first["next_action"]["arguments"])
        cost = logged_cost(caplog)
    assert subjects(listed) == [f"new-{i}" for i in range(11, -1, -1)] + [
        f"old-{i}" for i in range(6, -1, -1)
    ]
    assert [m["mailbox"] for m in second["messages"]] == ["INBOX"] * 4
    assert cost[1] <= 3, cost
    assert len(pages) == 5


def dated_plain(subject: str, when: dt.datetime) -> bytes:
    return mailgen.plain_message(subject=subject, body=f"text {subject}", date=when)


@ON_DOVECOT
async def test_compact_summaries_name_their_mailbox_only_when_the_search_spans_several(
    imap_server: MatrixServer, user: str, mcp: EnvelopeClient
) -> None:
    # Dovecot alone: the compact shape is the presentation's; each message's mailbox and id on every server:
    # test_every_mailbox_merges_newest_first_and_pages_each_message_once.
    placed = seed_folders(imap_server, user)
    boxes = _mailboxes(imap_server)
    everywhere = await mcp.ok(TOOL, {"mailbox": "*", "limit": 30})
    assert "has_more" not in everywhere or everywhere["has_more"] is False
    for message in everywhere["messages"]:
        home = next(n for n, s in placed.items() if message["subject"] in s)
        assert message["mailbox"] == home
        assert message["message_id"].startswith(f"imap:default:{home}:")
    listed = await mcp.ok(TOOL, {"mailboxes": ["INBOX", boxes["Sent"]], "limit": 30})
    assert {m["mailbox"] for m in listed["messages"]} == {"INBOX", boxes["Sent"]}
    alone = await mcp.ok(TOOL, {"limit": 5})
    assert all("mailbox" not in m for m in alone["messages"])
    by_date = await mcp.ok(TOOL, {"sort": "date", "limit": 5})
    assert all("mailbox" not in m for m in by_date["messages"])

"""Freshness from push (``index_fresh_from_push``, issue 51): a search asks the account's NOTIFY connection
for one NOOP instead of the STATUS of every folder, and still finds what another client changed just
before it, through a real MCP client on Dovecot, every command seen on the wire (a recording relay)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

import anyio
import pytest

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.imap.push_view import PushView
from mail_imap_mcp.mail.freshness import CHECKED_RECENTLY_S, RECHECK_S
from mail_imap_mcp.services.index_search import PUSHED_UNCHECKED
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.clients.index_clients import indexed_client, wait_ready
from tests.support.mail.mailgen import plain_message
from tests.support.patience import eventually_async, patient
from tests.support.round_trips import plain_settings
from tests.support.servers.courier import Courier
from tests.support.servers.dovecot import Dovecot
from tests.support.wire import ImapRecorder, has_news, parse_commands

pytestmark = pytest.mark.anyio

SEARCH = "imap_search_messages"
FOLDERS = ("INBOX", "Work", "Lists/Python")


def note(folder: str, number: int) -> bytes:
    return plain_message(f"{folder} note {number}", f"the text of note {number} says kiwiword\r\n")


@contextmanager
def relay(dovecot: Dovecot) -> Iterator[ImapRecorder]:
    recorder = ImapRecorder(dovecot.plain_port)
    try:
        yield recorder
    finally:
        recorder.close()


class Clock:
    """The view's clock, moved by the test: no test waits out the time a view vouches for."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def pushed_client(
    dovecot: Dovecot, user: str, port: int, tmp_path: Path, **settings: Any
) -> AsyncIterator[tuple[EnvelopeClient, AppContext]]:
    config = make_config(
        {"default": plain_settings(dovecot, user, port)},
        index=True,
        index_dir=str(tmp_path / "ix"),
        index_fresh_from_push=True,
        **settings,
    )
    app = AppContext.from_config(config)
    async for mcp in open_client(config, app):
        assert await wait_ready(mcp) == "ready"
        view_of(app).clock = Clock()  # still while the test does not move it: no check of every folder
        yield mcp, app


async def relayed(
    dovecot: Dovecot, user: str, tmp_path: Path
) -> AsyncIterator[tuple[EnvelopeClient, AppContext, ImapRecorder]]:
    """:func:`pushed_client` through a recording relay: the client, the application and the relay."""
    with relay(dovecot) as recorder:
        async for mcp, app in pushed_client(dovecot, user, recorder.port, tmp_path):
            yield mcp, app, recorder


#: How often the silence of Dovecot's NOTIFY is played before the test gives up on it.
SILENCE_TRIES = 5


def verbs(recorder: ImapRecorder) -> list[list[str]]:
    """The commands each connection sent since the last look (:func:`verbs_of`)."""
    return verbs_of(recorder.take())


def verbs_of(traffic: list[tuple[bytes, bytes]]) -> list[list[str]]:
    """The commands of each connection's ``traffic`` (connections that sent nothing left out); a STATUS
    that asks a folder's counts (MESSAGES: the freshness check's, not a sync's HIGHESTMODSEQ alone) as
    ``STATUS counts``."""
    return [
        [
            "STATUS counts"
            if command.verb == "STATUS" and b"MESSAGES" in command.raw.upper()
            else command.verb
            for command in parse_commands(sent)
        ]
        for sent, _ in traffic
        if sent
    ]


def every(sent: list[list[str]]) -> list[str]:
    return [verb for connection in sent for verb in connection]


def pipelined(dovecot: Dovecot, user: str, *batches: list[bytes]) -> None:
    """Each batch of commands sent by another client in one write after its login, its answers (every one
    OK) awaited before the next batch: Dovecot runs the commands of a batch that do not conflict in
    parallel, and answers them in any order. LITERAL+ and MULTIAPPEND: an APPEND of many messages needs
    no round trip of its own."""
    with socket.create_connection((dovecot.host, dovecot.plain_port), timeout=patient(30)) as sock:
        reader = sock.makefile("rb")
        reader.readline()  # the greeting
        sock.sendall(b'a LOGIN "%s" "%s"\r\n' % (user.encode(), dovecot.password.encode()))
        answers = answered(reader, {b"a"})
        for number, commands in enumerate(batches):
            tags = [b"b%dc%d" % (number, index) for index in range(len(commands))]
            sock.sendall(b"".join(b"%s %s\r\n" % pair for pair in zip(tags, commands, strict=True)))
            answers += answered(reader, set(tags))
    assert all(line.split()[1] == b"OK" for line in answers), answers


def answered(reader: BinaryIO, tags: set[bytes]) -> list[bytes]:
    """The tagged answers to ``tags``, in the order they came (the untagged lines between them skipped)."""
    lines: list[bytes] = []
    while len(lines) < len(tags):
        line = reader.readline()
        assert line, f"the connection closed with {len(tags) - len(lines)} of {sorted(tags)} unanswered"
        if line.split(b" ", 1)[0] in tags:
            lines.append(line)
    return lines


def view_of(app: AppContext) -> PushView:
    runtime = app.index_of("default")
    assert runtime is not None and runtime.push_view is not None
    return runtime.push_view


async def told(view: PushView, what: str) -> None:
    """Wait until the view's idle connection has something to read (what the server sent it unasked, or
    its EOF): the next search then meets it on the socket, not a moment later."""

    async def readable() -> bool:
        return has_news(view._connection)

    await eventually_async(readable, interval=0.02, what=what)


async def found(mcp: EnvelopeClient, query: str) -> set[str]:
    data = await mcp.ok(SEARCH, {"query": query, "limit": 50})
    return {message["subject"] for message in data["messages"]}


async def test_a_quiet_view_stands_in_for_status_and_changes_made_just_before_a_search_are_found(
    dovecot: Dovecot, tmp_path: Path
) -> None:
    user = dovecot.new_user()
    for folder in FOLDERS:
        dovecot.seed(user, folder, [note(folder, n) for n in range(4)])
    with relay(dovecot) as recorder:
        async for mcp, app in pushed_client(dovecot, user, recorder.port, tmp_path):
            assert len(await found(mcp, "kiwiword")) == 12  # the view is set up by the first search
            view = view_of(app)
            assert (view.setups, view.flushes) == (1, 0)
            verbs(recorder)
            # Nothing changed: one NOOP on the view's connection, no STATUS, no LIST, on any connection.
            assert len(await found(mcp, "kiwiword")) == 12
            sent = verbs(recorder)
            assert sorted(every(sent)) == ["NOOP"], sent
            assert (view.setups, view.flushes) == (1, 1)
            with dovecot.connect(user, tls=False, starttls=False) as other:
                for number, folder in enumerate(FOLDERS * 3):
                    # Answered, then searched at once: long before Dovecot would tell the view on its own.
                    other.append(folder, plain_message(f"fresh {number}", f"pineappleword{number}\r\n"))
                    assert await found(mcp, f"pineappleword{number}") == {f"fresh {number}"}
                other.select_folder("Work")
                flagged = other.search(["SUBJECT", "Work note 2"])
                other.add_flags(flagged, [b"\\Flagged"])
                assert await found(mcp, "kiwiword is:flagged") == {"Work note 2"}
                other.select_folder("Lists/Python")
                gone = other.search(["SUBJECT", "Lists/Python note 1"])
                other.add_flags(gone, [b"\\Deleted"])
                other.expunge()
                assert "Lists/Python note 1" not in await found(mcp, "kiwiword")
                other.unselect_folder()
            # The folders changed were synced (EXAMINE, FETCH); none was asked its counts, none listed.
            sent = verbs(recorder)
            assert not {"STATUS counts", "LIST"} & set(every(sent)), sent
            assert every(sent).count("EXAMINE") >= 11, sent
            assert view.setups == 1 and view.flushes == 1 + 9 + 2


async def test_a_view_whose_connection_was_lost_is_set_up_again_and_misses_nothing(
    dovecot: Dovecot, tmp_path: Path
) -> None:
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", [note("INBOX", n) for n in range(3)])
    with relay(dovecot) as recorder:
        async for mcp, app in pushed_client(dovecot, user, recorder.port, tmp_path):
            assert len(await found(mcp, "kiwiword")) == 3
            view = view_of(app)
            dovecot.kick(user)  # every connection of the user, the view's too
            await told(view, "the kick to reach the view's connection through the relay")
            with dovecot.connect(user, tls=False, starttls=False) as other:
                other.append("INBOX", plain_message("after the kick", "guavaword\r\n"))
            assert await found(mcp, "guavaword") == {"after the kick"}
            assert view.setups == 2
            # A mailbox created ends the view (a LIST response): the next search sets it up again.
            with dovecot.connect(user, tls=False, starttls=False) as other:
                other.create_folder("Later")
                other.append("Later", plain_message("in a new folder", "limeword\r\n"))
            assert await found(mcp, "limeword") == {"in a new folder"}
            assert await found(mcp, "limeword") == {"in a new folder"}
            assert view.setups == 3


async def test_on_a_server_without_notify_the_searches_ask_status_as_before(
    courier: Courier, tmp_path: Path
) -> None:
    # Regression: the view closed its connection inside its own call, whose lock it held: the first
    # search hung on a server without NOTIFY.
    user = courier.new_user()
    courier.seed(user, "INBOX", [note("INBOX", n) for n in range(3)])
    async for mcp, app, _config in indexed_client(courier, user, tmp_path, index_fresh_from_push=True):
        with anyio.fail_after(patient(30)):
            assert len(await found(mcp, "kiwiword")) == 3
            with courier.connect(user, tls=False, starttls=False) as other:
                other.append("INBOX", plain_message("appended", "guavaword\r\n"))
            assert await found(mcp, "guavaword") == {"appended"}
        view = view_of(app)
        assert not view.offered and view.setups == view.flushes == 0


async def test_over_tls_what_the_view_was_told_between_searches_keeps_it_alive(
    dovecot: Dovecot, tmp_path: Path
) -> None:
    # Regression: over TLS the connection's idle check reads whatever waits on the socket and takes it for
    # a closed connection: a change told to the view between two searches cost the next one a new view.
    user = dovecot.new_user()
    for folder in ("INBOX", "Work"):
        dovecot.seed(user, folder, [note(folder, n) for n in range(3)])
    async for mcp, app, _config in indexed_client(dovecot, user, tmp_path, index_fresh_from_push=True):
        view = view_of(app)
        view.clock = Clock()
        assert len(await found(mcp, "kiwiword")) == 6
        for number in range(3):
            with dovecot.connect(user, tls=False, starttls=False) as other:
                other.append(
                    "Work" if number % 2 else "INBOX", plain_message(f"told {number}", "figword\r\n")
                )
            # Dovecot tells the view half a second after the change, unasked.
            await told(view, "Dovecot to tell the view of the change")
            assert await found(mcp, "figword") == {f"told {n}" for n in range(number + 1)}
        assert (view.setups, view.flushes) == (1, 3)


async def test_regression_a_view_the_server_told_nothing_checks_every_folder_again_after_its_time(
    dovecot: Dovecot, tmp_path: Path
) -> None:
    # Regression (issue 56 item 11): another client adds, expunges and flags mail, then creates and deletes
    # a folder at once; Dovecot 2.3.19's NOTIFY then tells the view nothing at all, and the view took the
    # silence as proof: every later search answered from the stale index. The view vouches only for a
    # stated time after a STATUS of every folder, then asks again.
    heard: list[list[bytes]] = []
    for attempt in range(SILENCE_TRIES):
        user = dovecot.new_user()
        dovecot.seed(user, "Work", [note("Work", n) for n in range(10)])
        silent = False
        async for mcp, app, recorder in relayed(dovecot, user, tmp_path / f"try-{attempt}"):
            view = view_of(app)
            clock = view.clock
            assert isinstance(clock, Clock)
            assert len(await found(mcp, "kiwiword")) == 10
            # The sequence pipelined, in three round trips: Dovecot ends it within its half-second NOTIFY
            # delay on all but the most loaded machine. Where it outlasted the delay (two full runs side by
            # side), Dovecot told the view of the appends, and the search rightly synced: the silence this is
            # about did not arise, and the scenario is played again, as another user.
            fresh = [plain_message(f"fresh {n}", f"pineappleword {n}\r\n") for n in range(30)]
            pipelined(
                dovecot,
                user,
                [
                    b"APPEND Work" + b"".join(b" {%d+}\r\n%s" % (len(raw), raw) for raw in fresh),
                    b"SELECT Work",
                    b"STORE 36:40 +FLAGS.SILENT (\\Flagged)",  # the last 5 of the 40
                    b"STORE 1:10 +FLAGS.SILENT (\\Deleted)",  # the 10 notes seeded first
                    b"EXPUNGE",
                ],
                [b"CREATE Passing"],
                [b"DELETE Passing"],
            )
            verbs(recorder)
            await found(mcp, "pineappleword")
            traffic = recorder.take()
            told = [
                line for _, received in traffic for line in received.splitlines() if line.startswith(b"* ")
            ]
            if every(verbs_of(traffic)) != ["NOOP"] and any(b" STATUS " in line for line in told):
                heard.append(told)
                continue
            # Within its time the view vouches for what it was told: one NOOP, no STATUS.
            assert every(verbs_of(traffic)) == ["NOOP"], f"what the server said meanwhile: {told}"
            silent = True
            clock.now += RECHECK_S + 0.5
            assert await found(mcp, "pineappleword") == {f"fresh {n}" for n in range(30)}
            # Past it, the view's connection asked the listing and every folder's counts again, no NOOP.
            sent = every(verbs(recorder))
            assert "LIST" in sent and "STATUS counts" in sent and "NOOP" not in sent, sent
            assert await found(mcp, "kiwiword") == set()
            assert await found(mcp, "pineappleword is:flagged") == {f"fresh {n}" for n in range(25, 30)}
            assert (view.setups, view.rechecks, view.flushes) == (1, 1, 3)
        if silent:
            return
    pytest.fail(f"Dovecot told the view of the changes in each of {SILENCE_TRIES} tries: {heard}")


async def warnings_of(mcp: EnvelopeClient, arguments: dict[str, Any]) -> list[str]:
    """The warnings of a search for ``kiwiword`` (with ``arguments``), which must succeed."""
    envelope = await mcp.call(SEARCH, {"query": "kiwiword", **arguments})
    assert envelope["success"] and envelope["data"]["total"] >= 3, envelope
    return list(envelope["meta"].get("warnings") or ())


async def test_a_search_on_counts_the_view_last_checked_over_a_few_seconds_ago_says_so(
    dovecot: Dovecot, tmp_path: Path
) -> None:
    """Within its 30 s the view vouches for the server's silence, which is no proof (the test above): the
    page says when its counts rest on a check of every folder older than a few seconds (issue 78)."""
    user = dovecot.new_user()
    for folder in ("INBOX", "Work"):
        dovecot.seed(user, folder, [note(folder, n) for n in range(3)])
    async for mcp, app, _recorder in relayed(dovecot, user, tmp_path):
        view = view_of(app)
        clock = view.clock
        assert isinstance(clock, Clock)

        assert PUSHED_UNCHECKED not in await warnings_of(mcp, {})  # the view set up: every folder just asked
        clock.now += CHECKED_RECENTLY_S
        assert PUSHED_UNCHECKED not in await warnings_of(mcp, {"mailbox": "Work"})
        clock.now += 1
        assert PUSHED_UNCHECKED in await warnings_of(mcp, {})
        assert PUSHED_UNCHECKED in await warnings_of(mcp, {"mailbox": "Work"})
        assert (view.setups, view.flushes, view.rechecks) == (1, 3, 0)  # every count from a NOOP
        clock.now += RECHECK_S
        assert PUSHED_UNCHECKED not in await warnings_of(mcp, {})  # every folder asked again
        assert (view.setups, view.rechecks) == (1, 1)

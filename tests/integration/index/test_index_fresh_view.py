"""The freshness check keeps the mailbox the session has open (issue 80): NOOP on it, not UNSELECT, in the
same one round trip as the STATUS of every folder; with nothing open, INBOX is EXAMINEd there once.
Dovecot answers STATUS of INBOX, which it keeps out of its mailbox list index, by reading the INBOX's
whole uidlist unless INBOX is open (the round trip grew with the INBOX: :mod:`mail_imap_mcp.imap.kept_open`).
And a search still finds what another client changed in the open mailbox just before it: through a real
MCP client on Dovecot, every command seen on the wire (a recording relay)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mail_imap_mcp.app import AppContext
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import open_client
from tests.support.clients.index_clients import wait_ready
from tests.support.mail.mailgen import plain_message
from tests.support.round_trips import recorded_index
from tests.support.servers.dovecot import Dovecot
from tests.support.shared.index_search import other_client
from tests.support.wire import ImapRecorder, parse_commands

pytestmark = pytest.mark.anyio

SEARCH = "imap_search_messages"
FOLDERS = ("INBOX", "Work")


def note(folder: str, number: int) -> bytes:
    return plain_message(f"{folder} note {number}", f"the text of note {number} says kiwiword\r\n")


@pytest.fixture
async def indexed(
    dovecot: Dovecot, tmp_path: Path
) -> AsyncIterator[tuple[EnvelopeClient, AppContext, ImapRecorder, str]]:
    """An MCP client with its index built of three notes in each of :data:`FOLDERS`, through a recording
    relay: the client, its application, the relay and the user."""
    seeded = {folder: [note(folder, n) for n in range(3)] for folder in FOLDERS}
    with recorded_index(dovecot, tmp_path / "ix", seeded) as (config, recorder, user):
        app = AppContext.from_config(config)
        async for mcp in open_client(config, app):
            assert await wait_ready(mcp) == "ready"
            yield mcp, app, recorder, user


async def searched(
    mcp: EnvelopeClient, app: AppContext, recorder: ImapRecorder, **arguments: object
) -> tuple[set[str], list[str], int]:
    """A ranked search of every mailbox: the subjects found, the commands sent on the search's connection
    (the background sync's is quiet once the index is ready) and its round trips."""
    recorder.take()
    before = app.connection("default").round_trips
    data = await mcp.ok(SEARCH, {"query": "kiwiword", "limit": 50, **arguments})
    trips = app.connection("default").round_trips - before
    sent = [command.verb for out, _ in recorder.take() for command in parse_commands(out)]
    return {message["subject"] for message in data["messages"]}, sent, trips


async def test_the_check_opens_inbox_once_then_asks_it_with_noop_in_the_same_round_trip(
    indexed: tuple[EnvelopeClient, AppContext, ImapRecorder, str],
) -> None:
    mcp, app, recorder, _ = indexed
    await mcp.ok("imap_list_mailboxes", {})  # logged in, nothing selected
    found, sent, trips = await searched(mcp, app, recorder)
    assert (len(found), sent, trips) == (6, ["EXAMINE", "LIST"], 1)
    for _ in range(2):  # INBOX stays open: no EXAMINE, no UNSELECT, the same one round trip
        found, sent, trips = await searched(mcp, app, recorder)
        assert (len(found), sent, trips) == (6, ["NOOP", "LIST"], 1)
    # A mailbox another call opened stays open too, and is the one asked with NOOP.
    await mcp.ok(SEARCH, {"mailbox": "Work", "limit": 5})
    found, sent, trips = await searched(mcp, app, recorder)
    assert (len(found), sent, trips) == (6, ["NOOP", "LIST"], 1)


@pytest.mark.parametrize("opened_by", ["the check", "a page"])
async def test_what_another_client_changed_in_the_open_mailbox_just_before_a_search_is_found(
    dovecot: Dovecot, indexed: tuple[EnvelopeClient, AppContext, ImapRecorder, str], opened_by: str
) -> None:
    mcp, app, recorder, user = indexed
    await searched(mcp, app, recorder)  # INBOX opened by the check
    folder = "INBOX" if opened_by == "the check" else "Work"
    if opened_by == "a page":
        await mcp.ok(SEARCH, {"mailbox": folder, "limit": 5})
    with other_client(dovecot, user) as other:
        other.append(folder, note(folder, 7))
        found, sent, _ = await searched(mcp, app, recorder)
        assert f"{folder} note 7" in found and sent[:2] == ["NOOP", "LIST"]
        other.select_folder(folder)
        gone = other.search(["SUBJECT", f"{folder} note 1"])
        other.add_flags(gone, [b"\\Deleted"])
        other.expunge()
        found, _, _ = await searched(mcp, app, recorder)
        assert f"{folder} note 1" not in found and f"{folder} note 7" in found
        seen = other.search(["SUBJECT", f"{folder} note 2"])
        other.add_flags(seen, [b"\\Seen"])
        unread, _, _ = await searched(mcp, app, recorder, unread_only=True)
        assert f"{folder} note 2" not in unread and f"{folder} note 0" in unread

"""Search by meaning answers from what the server has now, through a real MCP client on Dovecot, Cyrus and
Courier with the local index and the shipped model: mail a search's own freshness check brings into the index is found
by its meaning at once (not after the next background sync), ``like`` naming a message another client
deleted, or whose mailbox it deleted, answers as a read of that message does, whether or not the search covers its mailbox, at no
round trip more where the index's copy is known fresh, and a deleted message is never a hit."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.index import runtime
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.index_clients import SEARCH, indexed_client
from tests.support.mail.mailgen import plain_message
from tests.support.patience import eventually_async
from tests.support.servers.courier import Courier
from tests.support.servers.matrix import MatrixServer
from tests.support.shared.search_meaning import ABOUT, LANDLORD, every_message_has_vectors, seed, subjects

pytestmark = pytest.mark.anyio

#: The servers each test runs on: how each answers another client's APPEND and EXPUNGE, and the round
#: trips its STATUS and EXAMINE take, are the servers' own. Cyrus's second namespace names Archive
#: otherwise, which :meth:`~tests.support.servers.imapserver.ImapServer.mailbox_name` already covers.
ON_SERVERS = pytest.mark.parametrize("imap_server", ["dovecot", "cyrus", "courier"], indirect=True)

#: Mail about the heating that shares no word with :data:`ABOUT` ("radiators" is another word than
#: "radiator"): only its meaning can find it.
BOILER = plain_message(
    "Boiler repaired",
    "The heating works again and the radiators are warm.",
    from_=LANDLORD,
    message_id="<boiler@meaning.test>",
)


class Meaning:
    """An account indexed with vectors, its MCP client, its application, and another client's hand;
    ``archive``: the server's name of the Archive folder."""

    def __init__(self, mcp: EnvelopeClient, app: AppContext, server: MatrixServer, user: str) -> None:
        self.mcp, self.app, self.server, self.user = mcp, app, server, user
        self.archive = server.mailbox_name("Archive")

    async def trips(self, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """The answer to ``tool`` and the IMAP round trips it waited for."""
        connection = self.app.connection("default")
        before = connection.round_trips
        envelope = await self.mcp.call(tool, arguments)
        return envelope, connection.round_trips - before

    async def one_id(self, mailbox: str, subject: str) -> str:
        found = await self.mcp.ok(SEARCH, {"mailbox": mailbox, "query": f"subject:{subject!r}"})
        (message,) = found["messages"]
        message_id: str = message["message_id"]
        return message_id

    def delete(self, mailbox: str, message_id: str) -> None:
        """Another client deletes the message for good (the index has not seen it go)."""
        with self.server.connect(self.user) as other:
            other.select_folder(mailbox)
            other.delete_messages([int(message_id.rsplit(":", 1)[1])])
            other.expunge()


@pytest.fixture
async def meaning(
    request: pytest.FixtureRequest, imap_server: MatrixServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Meaning]:
    """test_search_meaning's mail in INBOX and :data:`BOILER` in Archive, every message with its vectors;
    the background sync comes back no sooner than in an hour: what the index learns meanwhile, a search
    brought in. Parametrized (indirect): the ``index_fresh_budget_ms`` of the account."""
    monkeypatch.setattr(runtime, "RESYNC_S", 3600.0)
    user = imap_server.new_user()
    seed(imap_server, user)
    imap_server.seed(user, imap_server.mailbox_name("Archive"), [BOILER])
    budget = getattr(request, "param", None)
    settings = {} if budget is None else {"index_fresh_budget_ms": budget}
    async for mcp, app, _config in indexed_client(imap_server, user, tmp_path, **settings):
        await every_message_has_vectors(mcp)
        yield Meaning(mcp, app, imap_server, user)


@ON_SERVERS
async def test_mail_a_search_brought_into_the_index_is_found_by_its_meaning_at_once(
    meaning: Meaning,
) -> None:
    """Mail delivered to Archive (special use ``\\Archive``) after the build: the first search of Archive
    syncs it, words alone (``partial``); the vectors are made then, not after the next background sync
    (an hour away here; a minute by default, when it used to be found: issue 80). Delivered through the
    server (APPEND): a Maildir file written behind Dovecot's back is not counted by its STATUS until a
    session opens the folder, so a search may never see it come (the test then failed some runs)."""
    cold = plain_message("Cold flat", "Our apartment stays chilly, the heaters do not work.", from_=LANDLORD)
    with meaning.server.connect(meaning.user) as other:
        other.append(meaning.archive, cold)

    async def found() -> dict[str, Any] | None:
        data = await meaning.mcp.ok(SEARCH, {"about": ABOUT, "mailbox": meaning.archive})
        # Found with its vectors: an answer before them (``partial``) is not yet the one awaited.
        return data if "Cold flat" in subjects(data) and data["status"] == "ok" else None

    data = await eventually_async(found, within=60, what="the archived mail found by its meaning")
    assert data["status"] == "ok" and set(subjects(data)) == {"Cold flat", "Boiler repaired"}, data
    assert {message["why"] for message in data["messages"]} == {"meaning"}


@ON_SERVERS
@pytest.mark.parametrize("mailbox", ["INBOX", "Archive", "*"])
async def test_like_a_message_deleted_on_the_server_answers_as_reading_it_does(
    meaning: Meaning, mailbox: str
) -> None:
    """``like`` names the archived message another client deleted: the search of its own mailbox, of
    every mailbox or of another one (whose check asks its mailbox's STATUS beside the others) answers
    ``not_found`` as ``imap_get_message`` does, never a ranking by the index's copy."""
    boiler = await meaning.one_id(meaning.archive, "Boiler")
    meaning.delete(meaning.archive, boiler)
    searched = meaning.archive if mailbox == "Archive" else mailbox
    like, trips = await meaning.trips(SEARCH, {"like": boiler, "mailbox": searched})
    read = await meaning.mcp.call("imap_get_message", {"message_id": boiler})
    assert read["error"]["code"] == "not_found", read
    assert like["error"] == read["error"], like
    # The STATUS of the mailboxes, and Archive's sync (EXAMINE, its expunge read); every mailbox on a
    # server without LIST-STATUS (Courier): their LIST first.
    listed = mailbox == "*" and isinstance(meaning.server, Courier)
    assert trips == 3 + listed, trips


@ON_SERVERS
async def test_like_costs_no_round_trip_more_than_about(meaning: Meaning) -> None:
    """The check of the message ``like`` names rides on the search's own freshness round trip: ``like``
    of a message of the mailbox searched, or of another one, waits for the server as often as ``about``
    of that mailbox."""
    boiler, radiators = (
        await meaning.one_id(meaning.archive, "Boiler"),
        await meaning.one_id("INBOX", "Radiators"),
    )
    await meaning.trips(SEARCH, {"about": ABOUT, "mailbox": "INBOX"})  # the session opened and settled
    about, about_trips = await meaning.trips(SEARCH, {"about": ABOUT, "mailbox": "INBOX"})
    here, here_trips = await meaning.trips(SEARCH, {"like": radiators, "mailbox": "INBOX"})
    there, there_trips = await meaning.trips(SEARCH, {"like": boiler, "mailbox": "INBOX"})
    assert about["success"] and here["success"] and there["success"], (about, here, there)
    assert subjects(there["data"])[0] in {"Radiators", "Central heating"}, there
    assert here_trips == there_trips == about_trips, (about_trips, here_trips, there_trips)
    # One STATUS; Courier, without UNSELECT, has INBOX selected from the last search and syncs it each
    # time (its STATUS of a selected mailbox may be stale).
    assert isinstance(meaning.server, Courier) or about_trips == 1, about_trips


#: Not on Courier: without UNSELECT it keeps INBOX selected, and syncs it at every search, so with no
#: time to sync INBOX is always said behind (the warning this test says is not there).
@pytest.mark.parametrize("imap_server", ["dovecot", "cyrus"], indirect=True)
@pytest.mark.parametrize("meaning", [0], indirect=True)
async def test_like_whose_mailbox_the_check_left_behind_asks_the_server_for_the_message(
    meaning: Meaning,
) -> None:
    """``index_fresh_budget_ms`` 0: the search's check finds Archive changed and has no time to sync it,
    so the index's copy of the message ``like`` names is not known fresh; the server is asked for that
    message (EXAMINE and a FETCH): there, the ranking; gone, ``not_found`` as a read says. Where Archive
    did not change the copy is known fresh: no round trip more than ``about``."""
    boiler = await meaning.one_id(meaning.archive, "Boiler")
    await meaning.trips(SEARCH, {"about": ABOUT, "mailbox": "INBOX"})  # the session opened and settled
    _, about_trips = await meaning.trips(SEARCH, {"about": ABOUT, "mailbox": "INBOX"})
    fresh, fresh_trips = await meaning.trips(SEARCH, {"like": boiler, "mailbox": "INBOX"})
    assert fresh["success"] and fresh_trips == about_trips, (fresh, about_trips, fresh_trips)
    with meaning.server.connect(meaning.user) as other:  # Archive changes, the message is still there
        other.append(meaning.archive, plain_message("Keys", "The spare keys are at the desk."))
    behind, behind_trips = await meaning.trips(SEARCH, {"like": boiler, "mailbox": "INBOX"})
    assert behind["success"] and subjects(behind["data"])[0] in {"Radiators", "Central heating"}, behind
    assert behind["meta"]["warnings"] == [], behind  # INBOX, searched, is not behind
    # The STATUS of both, and the message asked for (EXAMINE Archive, a FETCH).
    assert about_trips == 1 and behind_trips == 3, (about_trips, behind_trips)
    meaning.delete(meaning.archive, boiler)
    like, _ = await meaning.trips(SEARCH, {"like": boiler, "mailbox": "INBOX"})
    read = await meaning.mcp.call("imap_get_message", {"message_id": boiler})
    assert read["error"]["code"] == "not_found" and like["error"] == read["error"], like


@ON_SERVERS
@pytest.mark.parametrize("budget_ms", [None, 0])
async def test_a_message_deleted_on_the_server_is_never_a_hit(
    imap_server: MatrixServer, tmp_path: Path, budget_ms: int | None
) -> None:
    """Another client deletes "Central heating": neither ``about`` nor ``like`` lists it, whether the
    search's check syncs INBOX (the default budget) or has no time to (``index_fresh_budget_ms`` 0: the
    summaries are read from the server, which has it no more)."""
    user = imap_server.new_user()
    seed(imap_server, user)
    settings = {} if budget_ms is None else {"index_fresh_budget_ms": budget_ms}
    async for mcp, app, _config in indexed_client(imap_server, user, tmp_path, **settings):
        await every_message_has_vectors(mcp)
        meaning = Meaning(mcp, app, imap_server, user)
        radiators = await meaning.one_id("INBOX", "Radiators")
        heating = await meaning.one_id("INBOX", "Central heating")
        about = await mcp.ok(SEARCH, {"about": ABOUT, "mailbox": "INBOX"})
        assert "Central heating" in subjects(about)  # listed while the server has it
        meaning.delete("INBOX", heating)
        for asked in ({"about": ABOUT}, {"like": radiators}):
            data = await mcp.ok(SEARCH, {**asked, "mailbox": "INBOX", "limit": 50})
            assert "Central heating" not in subjects(data), (asked, data)
            assert heating not in [message["message_id"] for message in data["messages"]]
            assert subjects(data), data


@ON_SERVERS
@pytest.mark.parametrize("mailbox", ["INBOX", "*"])
async def test_regression_like_a_message_whose_mailbox_was_deleted_answers_as_reading_it_does(
    meaning: Meaning, mailbox: str
) -> None:
    """Another client deletes Archive: ``like`` naming its message, in a search of another mailbox or of
    every one, says what ``imap_get_message`` says of that message (its mailbox not found), code and
    words; it used to say the message no longer existed. Again once the index has dropped Archive."""
    boiler = await meaning.one_id(meaning.archive, "Boiler")
    meaning.server.delete_mailbox(meaning.user, meaning.archive)
    read = await meaning.mcp.call("imap_get_message", {"message_id": boiler})
    assert read["error"]["code"] == "not_found" and read["error"]["details"]["mailbox"] == meaning.archive
    for _ in range(2):
        like = await meaning.mcp.call(SEARCH, {"like": boiler, "mailbox": mailbox})
        assert like["error"] == read["error"], (like, read)

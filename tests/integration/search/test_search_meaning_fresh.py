"""Search by meaning answers from what the server has now, through a real MCP client on Dovecot with the
local index and the shipped model: mail a search's own freshness check brings into the index is found
by its meaning at once (not after the next background sync), ``like`` naming a message another client
deleted answers as a read of that message does, whether or not the search covers its mailbox, at no
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
from tests.support.servers.matrix import MatrixServer
from tests.support.shared.search_meaning import ABOUT, LANDLORD, every_message_has_vectors, seed, subjects

pytestmark = pytest.mark.anyio

#: Mail about the heating that shares no word with :data:`ABOUT` ("radiators" is another word than
#: "radiator"): only its meaning can find it.
BOILER = plain_message(
    "Boiler repaired",
    "The heating works again and the radiators are warm.",
    from_=LANDLORD,
    message_id="<boiler@meaning.test>",
)


class Meaning:
    """An account indexed with vectors, its MCP client, its application, and another client's hand."""

    def __init__(self, mcp: EnvelopeClient, app: AppContext, server: MatrixServer, user: str) -> None:
        self.mcp, self.app, self.server, self.user = mcp, app, server, user

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
    dovecot: MatrixServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Meaning]:
    """test_search_meaning's mail in INBOX and :data:`BOILER` in Archive, every message with its vectors;
    the background sync comes back no sooner than in an hour: what the index learns meanwhile, a search
    brought in."""
    monkeypatch.setattr(runtime, "RESYNC_S", 3600.0)
    user = dovecot.new_user()
    seed(dovecot, user)
    dovecot.seed(user, "Archive", [BOILER])
    async for mcp, app, _config in indexed_client(dovecot, user, tmp_path):
        await every_message_has_vectors(mcp)
        yield Meaning(mcp, app, dovecot, user)


async def test_mail_a_search_brought_into_the_index_is_found_by_its_meaning_at_once(
    meaning: Meaning,
) -> None:
    """Mail seeded into Archive (special use ``\\Archive``) after the build: the first search of Archive
    syncs it, words alone (``partial``); the vectors are made then, not after the next background sync
    (an hour away here; a minute by default, when it used to be found: issue 80)."""
    meaning.server.seed(
        meaning.user,
        "Archive",
        [plain_message("Cold flat", "Our apartment stays chilly, the heaters do not work.", from_=LANDLORD)],
    )

    async def found() -> dict[str, Any] | None:
        data = await meaning.mcp.ok(SEARCH, {"about": ABOUT, "mailbox": "Archive"})
        return data if "Cold flat" in subjects(data) else None

    data = await eventually_async(found, within=60, what="the archived mail found by its meaning")
    assert data["status"] == "ok" and set(subjects(data)) == {"Cold flat", "Boiler repaired"}, data
    assert {message["why"] for message in data["messages"]} == {"meaning"}

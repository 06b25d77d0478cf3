"""``sort: "date"`` over several mailboxes: messages with one Date header (a message filed in two folders)
come in one documented order whoever answers, the server or the local index in any engine (issue 56 item
13): the newest first, then the mailbox's place in the search's list (INBOX first, then by name), then
UID. The index ordered them by its row ids, so a page changed when a build finished."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from tests.support.accounts import account_settings
from tests.support.clients import make_config, open_client
from tests.support.envelope_client import EnvelopeClient
from tests.support.index_clients import indexed_client
from tests.support.mailgen import plain_message
from tests.support.matrix import MATRIX, MatrixServer
from tests.support.postgres import ServerCase, case_fixtures, engine_of

pytestmark = pytest.mark.anyio

case, server = case_fixtures(MATRIX, ("dovecot", "courier"), ("dovecot", "courier"))
DAY = dt.datetime(2026, 3, 2, 8, 0, tzinfo=dt.UTC)


def copies(number: int) -> list[bytes]:
    """``number`` messages, the first two sharing one Date, the rest each a day older."""
    return [
        plain_message(
            f"tie {n}",
            "the figword report\r\n",
            date=DAY - dt.timedelta(days=max(n - 1, 0)),
            message_id=f"<tie-{n}@ties.test>",
        )
        for n in range(number)
    ]


async def walk(mcp: EnvelopeClient) -> list[tuple[str, str]]:
    """Every page of the date-ordered search, three at a time: (mailbox, subject) in page order."""
    arguments: dict[str, Any] = {"mailbox": "*", "query": "figword", "sort": "date", "limit": 3}
    found: list[tuple[str, str]] = []
    while True:
        data = await mcp.ok("imap_search_messages", arguments)
        found += [(message["mailbox"], message["subject"]) for message in data["messages"]]
        if not data.get("next_cursor"):
            return found
        arguments = {**arguments, "cursor": data["next_cursor"]}


async def test_date_ties_come_in_one_order_from_the_server_and_the_index(
    request: pytest.FixtureRequest, server: MatrixServer, case: ServerCase, tmp_path: Path
) -> None:
    user = server.new_user()
    names = ["INBOX", server.mailbox_name("Work"), server.mailbox_name("Zeta")]
    # The same three messages filed in each folder, Zeta first: a build stores its rows in its own order.
    for name in reversed(names):
        server.seed(user, name, copies(3))
    place = {name: i for i, name in enumerate(names)}
    dates = {"tie 0": 0, "tie 1": 0, "tie 2": 1}  # days before DAY
    expected = sorted(
        ((name, f"tie {n}") for name in names for n in range(3)),
        key=lambda found: (dates[found[1]], place[found[0]], found[1]),  # UIDs follow the subjects
    )
    async for mcp in open_client(make_config({"default": account_settings(server, user)})):
        assert await walk(mcp) == expected
    async for mcp, _app, _config in indexed_client(server, user, tmp_path, engine_of(request, case[1])):
        assert await walk(mcp) == expected

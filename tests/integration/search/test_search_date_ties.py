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
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.clients.index_clients import indexed_client
from tests.support.mail.mail_state import move_last
from tests.support.mail.mailgen import plain_message
from tests.support.servers.matrix import MATRIX, MatrixServer
from tests.support.servers.postgres import ServerCase, case_fixtures, engine_of

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


@pytest.mark.parametrize("order", ["relevance", "date"])
async def test_a_message_moved_during_a_walk_of_the_index_is_listed_once(
    request: pytest.FixtureRequest, server: MatrixServer, case: ServerCase, tmp_path: Path, order: str
) -> None:
    """Issue 56 item 12: with the index answering, a message moved to another searched mailbox between two
    pages was never listed (the first page's list, or its keys, took the move for a delete and an
    arrival): it is listed once, in one of its two places."""
    user = server.new_user()
    work = server.mailbox_name("Work")
    for name, hour in (("INBOX", 0), (work, 1)):
        server.seed(
            user,
            name,
            [
                plain_message(
                    f"{name} {n}",
                    "the figword report\r\n",
                    date=DAY - dt.timedelta(hours=2 * n + hour),
                    message_id=f"<{name}-{n}@moved.test>",
                )
                for n in range(6)
            ],
            internaldates=lambda n, hour=hour: DAY - dt.timedelta(hours=2 * n + hour),  # type: ignore[misc]
        )
    listed: list[str] = []
    async for mcp, _app, _config in indexed_client(server, user, tmp_path, engine_of(request, case[1])):
        arguments: dict[str, Any] = {"mailbox": "*", "query": "figword", "sort": order, "limit": 4}
        data = await mcp.ok("imap_search_messages", arguments)
        listed += [message["subject"] for message in data["messages"]]
        move_last(server, user, work, "INBOX")  # "Work 5", the oldest: not listed yet in either order
        while data.get("next_cursor"):
            data = await mcp.ok("imap_search_messages", {**arguments, "cursor": data["next_cursor"]})
            listed += [message["subject"] for message in data["messages"]]
    assert sorted(listed) == sorted(f"{name} {n}" for name in ("INBOX", work) for n in range(6)), listed

"""A first page of a search of every mailbox (``mailbox: "*"``) without the local index lists the folders
with their counts (LIST-STATUS) behind an EXAMINE of INBOX, which it searches anyway (issue 80): Dovecot
answers the STATUS of an open INBOX from its view, and reads a closed INBOX's whole uidlist for it
(:mod:`mail_imap_mcp.imap.kept_open`); INBOX is then sorted without a second EXAMINE. On Dovecot every
command is seen on the wire; on every server of the matrix the pages are those of the mailboxes as they
are after another client appended to INBOX, expunged from it and emptied it (an empty INBOX is still
searched, and its messages counted, as before)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tests.support.accounts import account_settings
from tests.support.clients.in_process import make_config, open_client
from tests.support.mail.mailgen import plain_message
from tests.support.round_trips import Plan, logged_cost, plain_settings, recording, rig
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.matrix import MatrixServer, on_matrix
from tests.support.shared.index_search import other_client

pytestmark = pytest.mark.anyio

SEARCH = "imap_search_messages"
EVERY = {"mailbox": "*", "limit": 2, "snippet_chars": 0}


def seed(server: MatrixServer, user: str) -> str:
    """INBOX with 3 messages, Archive (the server's spelling, returned) with 2."""
    server.seed(user, "INBOX", [plain_message(f"inbox {n}", "a body") for n in range(3)])
    archive = server.mailbox_name("Archive")
    server.seed(user, archive, [plain_message(f"archive {n}", "a body") for n in range(2)])
    return archive


def subjects(data: dict[str, Any]) -> list[str]:
    return sorted(message["subject"] for message in data["messages"])


async def test_the_first_page_examines_inbox_with_the_listing_and_sorts_it_once(dovecot: Dovecot) -> None:
    user = dovecot.new_user()
    seed(dovecot, user)
    with recording(dovecot) as recorder:
        async with rig(plain_settings(dovecot, user, recorder.port), recorder) as r:
            await r.call("imap_list_mailboxes", {})  # logged in, nothing selected
            first, plan = await r.call(SEARCH, EVERY)
            sent = r.last_sent
            # INBOX opened before the listing asks its counts, sorted as it stands; Archive's EXAMINE
            # and SORT; the keys of both; the summaries of the newest two, Archive's (4 round trips, as
            # before, and one EXAMINE of INBOX fewer than LIST-STATUS then EXAMINE and SORT had).
            assert plan == Plan(
                ("EXAMINE", "LIST", "UID SORT", "EXAMINE", "UID SORT") + ("EXAMINE", "UID FETCH") * 3, 4
            )
            listed = sent[: sent.index(b"UID SORT")]  # INBOX's SORT right behind the listing
            assert listed.index(b'EXAMINE "INBOX"') < listed.index(b"LIST ") < listed.index(b"RETURN (STATUS")
            assert listed.count(b"EXAMINE") == 1
            assert first["total"] == 5 and first["next_cursor"]
            second, _ = await r.call(SEARCH, {**EVERY, "cursor": first["next_cursor"]})
            third, _ = await r.call(SEARCH, {**EVERY, "cursor": second["next_cursor"]})
            found = subjects(first) + subjects(second) + subjects(third)
            assert sorted(found) == [f"archive {n}" for n in range(2)] + [f"inbox {n}" for n in range(3)]
            assert third.get("next_cursor") is None


@on_matrix()
async def test_every_mailbox_first_pages_see_another_clients_changes_to_inbox(
    imap_server: MatrixServer, user: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mail_imap_mcp.imap")
    seed(imap_server, user)
    async for mcp in open_client(make_config({"default": account_settings(imap_server, user)})):
        await mcp.ok("imap_list_mailboxes", {})  # logged in, nothing selected
        caplog.clear()
        data = await mcp.ok(SEARCH, {**EVERY, "limit": 10})
        assert subjects(data) == ["archive 0", "archive 1", "inbox 0", "inbox 1", "inbox 2"]
        assert logged_cost(caplog)[1] == 4  # listing, sorts, keys, summaries
        with other_client(imap_server, user) as other:
            other.append("INBOX", plain_message("inbox 3", "a body"))
            data = await mcp.ok(SEARCH, {**EVERY, "limit": 10})
            assert data["total"] == 6 and "inbox 3" in subjects(data)
            other.select_folder("INBOX")
            other.add_flags(other.search(["SUBJECT", "inbox 1"]), [b"\\Deleted"])
            other.expunge()
            data = await mcp.ok(SEARCH, {**EVERY, "limit": 10})
            assert data["total"] == 5 and "inbox 1" not in subjects(data)
            other.add_flags(other.search(["ALL"]), [b"\\Deleted"])
            other.expunge()
            other.close_folder()
            for _ in range(2):  # twice: the second after the selection the first left
                first = await mcp.ok(SEARCH, {**EVERY, "limit": 1})
                assert first["total"] == 2
                second = await mcp.ok(SEARCH, {**EVERY, "limit": 1, "cursor": first["next_cursor"]})
                assert sorted(subjects(first) + subjects(second)) == ["archive 0", "archive 1"]
                assert second.get("next_cursor") is None

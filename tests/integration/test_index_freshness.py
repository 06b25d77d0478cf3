"""The local index's freshness check before it answers (issue 35), through a real MCP client.

Flags another client changed are current in a flag query on servers that cannot say so with a
HIGHESTMODSEQ: the IMAP4rev1-only Dovecot, Courier, and a Dovecot whose mailboxes answer ``NOMODSEQ``
(in-memory indexes: CONDSTORE advertised, no persistent MODSEQ), where the index stores a HIGHESTMODSEQ
of 0 and STATUS says nothing of flags.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mail_imap_mcp.app import AppContext
from tests.support.accounts import PASSWORD_ENV, account_settings
from tests.support.clients import make_config, open_client
from tests.support.dovecot import Dovecot
from tests.support.envelope_client import EnvelopeClient
from tests.support.mailgen import plain_message
from tests.support.matrix import SESSION_PASSWORD, MatrixServer

pytestmark = pytest.mark.anyio

SEARCH = "imap_search_messages"


@pytest.fixture(scope="module")
def dovecot_nomodseq() -> Iterator[Dovecot]:
    """A Dovecot with CONDSTORE advertised whose mailboxes answer SELECT with ``NOMODSEQ``."""
    server = Dovecot(
        extra_config="mail_location = maildir:~/Maildir:INDEX=MEMORY\n", password=SESSION_PASSWORD
    )
    with server:
        os.environ[PASSWORD_ENV] = server.password
        yield server


@pytest.fixture(params=("dovecot_rev1", "courier", "dovecot_nomodseq"))
def server(request: pytest.FixtureRequest) -> MatrixServer:
    found: MatrixServer = request.getfixturevalue(request.param)
    return found


async def wait_ready(mcp: EnvelopeClient, timeout: float = 60.0) -> str:
    state = ""
    with anyio.fail_after(timeout):
        while state != "ready":
            state = (await mcp.ok("imap_list_accounts", {}))["accounts"][0]["index"]
            if state.startswith("unavailable"):
                return state
            await anyio.sleep(0.05)
    return state


def note(number: int) -> bytes:
    return plain_message(f"note {number}", f"the text of note {number} says kiwiword\r\n")


@pytest.fixture
async def indexed(server: MatrixServer, tmp_path: Path) -> AsyncIterator[tuple[EnvelopeClient, str]]:
    user = server.new_user()
    server.seed(user, "INBOX", [note(i) for i in range(6)])
    config = make_config(
        {"default": account_settings(server, user)}, index=True, index_dir=str(tmp_path / "ix")
    )
    app = AppContext.from_config(config)
    async for mcp in open_client(config, app):
        assert await wait_ready(mcp) == "ready"
        yield mcp, user


def subjects(data: dict[str, Any]) -> set[str]:
    return {message["subject"] for message in data["messages"]}


async def test_flags_another_client_changed_are_current_without_a_modseq(
    server: MatrixServer, indexed: tuple[EnvelopeClient, str]
) -> None:
    mcp, user = indexed
    assert len((await mcp.ok(SEARCH, {"query": "kiwiword is:unread", "limit": 50}))["messages"]) == 6
    other = server.connect(user, tls=False, starttls=False)
    try:
        other.select_folder("INBOX")
        seen = other.search(["SUBJECT", "note 1"]) + other.search(["SUBJECT", "note 2"])
        other.add_flags(seen, [b"\\Seen"])
        other.add_flags(other.search(["SUBJECT", "note 3"]), [b"\\Flagged"])
    finally:
        other.logout()
    for _ in range(2):  # and again, with nothing changed since
        unread = await mcp.ok(SEARCH, {"query": "kiwiword is:unread", "limit": 50})
        assert subjects(unread) == {f"note {i}" for i in (0, 3, 4, 5)}
        assert unread["total"] == 4
        flagged = await mcp.ok(SEARCH, {"query": "kiwiword is:flagged", "limit": 50})
        assert subjects(flagged) == {"note 3"}

"""Calls to different accounts proceed in parallel; calls to one account share one connection."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import anyio
import pytest

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import Config
from tests.support.clients import AccountFactory, make_config, open_client
from tests.support.envelope_client import EnvelopeClient

pytestmark = pytest.mark.anyio


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP port that accepts connections and never says anything (a stalled IMAP server)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    yield listener.getsockname()[1]
    listener.close()


async def test_a_stalled_account_does_not_block_another_account(
    user: str, account: AccountFactory, silent_server: int
) -> None:
    config = make_config(
        {
            "good": account(user),
            "stalled": account(user, port=silent_server, connect_timeout_s=2, command_timeout_s=2),
        }
    )
    order: list[str] = []
    async for mcp in open_client(config):
        await mcp.ok("imap_list_mailboxes", {"account_id": "good"})

        async def stalled(mcp: EnvelopeClient = mcp) -> None:
            envelope = await mcp.fail("imap_list_mailboxes", {"account_id": "stalled"}, "timeout")
            assert envelope["error"]["retryable"] is True
            order.append("stalled")

        async def good(mcp: EnvelopeClient = mcp) -> None:
            await anyio.sleep(0.2)  # let the stalled call start first
            for _ in range(3):
                await mcp.ok("imap_search_messages", {"account_id": "good"})
            order.append("good")

        async with anyio.create_task_group() as group:
            group.start_soon(stalled)
            group.start_soon(good)
    assert order == ["good", "stalled"]


async def test_concurrent_calls_to_one_account_share_its_single_login(config: Config) -> None:
    app = AppContext.from_config(config)
    async for mcp in open_client(config, app):
        async with anyio.create_task_group() as group:
            for _ in range(8):
                group.start_soon(mcp.ok, "imap_list_mailboxes", {})
                group.start_soon(mcp.ok, "imap_search_messages", {})
    assert app.pool.get("default").logins == 1

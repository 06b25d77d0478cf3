"""Calls to different accounts proceed in parallel; calls to one account share one connection."""

from __future__ import annotations

import select
import socket
from collections.abc import Iterator

import anyio
import pytest

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import Config
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import AccountFactory, make_config, open_client
from tests.support.patience import eventually_async, patient

pytestmark = pytest.mark.anyio


@pytest.fixture
def silent_server() -> Iterator[socket.socket]:
    """A listening socket that never accepts nor says anything (a stalled IMAP server): the kernel
    completes a client's connect, which then waits in its backlog."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    yield listener
    listener.close()


async def test_a_stalled_account_does_not_block_another_account(
    user: str, account: AccountFactory, silent_server: socket.socket
) -> None:
    # The stalled call must still be waiting when the good ones are done: its limits scale with the load.
    limit = patient(2)
    stalled_port = silent_server.getsockname()[1]
    config = make_config(
        {
            "good": account(user),
            "stalled": account(user, port=stalled_port, connect_timeout_s=limit, command_timeout_s=limit),
        }
    )
    order: list[str] = []
    async for mcp in open_client(config):
        await mcp.ok("imap_list_mailboxes", {"account_id": "good"})

        async def stalled(mcp: EnvelopeClient = mcp) -> None:
            envelope = await mcp.fail("imap_list_mailboxes", {"account_id": "stalled"}, "timeout")
            assert envelope["error"]["retryable"] is True
            order.append("stalled")

        async def stalled_call_waits() -> bool:
            # Its connection sits in the silent server's backlog: the listener is readable then.
            return bool(select.select([silent_server], [], [], 0)[0])

        async def good(mcp: EnvelopeClient = mcp) -> None:
            # The stalled call started first, and is in progress.
            await eventually_async(stalled_call_waits, interval=0.02, what="the stalled call's connect")
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

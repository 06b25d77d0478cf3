"""A client that listed its tools before the background look at the account's ManageSieve ended is told the
list changed once the look finds none (``notifications/tools/list_changed``), in both protocol eras: on the
session (handshake versions, whose capabilities declare ``tools.listChanged``) and on a
``subscriptions/listen`` stream that asked for it (2026-07-28). Listed again, rules are gone.

The look is held where it is by the test's own port: it accepts the connection and says nothing until the
client has listed its tools, then greets in IMAP (another protocol: no ManageSieve)."""

from __future__ import annotations

import contextlib
import socket
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.subscriptions import ToolsListChanged
from mcp_types import ToolListChangedNotification

from mail_imap_mcp.mail.sieve_presence import SIEVE_PRESENCE
from mail_imap_mcp.server import build_server
from tests.support.accounts import account_settings
from tests.support.clients.in_process import make_config
from tests.support.patience import eventually_async, patient
from tests.support.servers.sieve import SieveDovecot
from tests.support.shared.rules import TOOL, rules_config

pytestmark = pytest.mark.anyio


class Told:
    """How many times the client was told its tool list changed."""

    def __init__(self) -> None:
        self.times = 0

    async def message_handler(self, message: Any) -> None:
        """For ``Client(message_handler=...)`` (handshake versions)."""
        if isinstance(message, ToolListChangedNotification):
            self.times += 1

    async def collect(self, events: Any) -> None:
        """The events of a ``Client.listen`` stream (2026-07-28)."""
        async for event in events:
            if isinstance(event, ToolsListChanged):
                self.times += 1


async def _names(client: Client) -> set[str]:
    return {tool.name for tool in (await client.list_tools()).tools}


async def _greet_in_imap(held: socket.socket) -> None:
    """Answer the look waiting on ``held`` with an IMAP greeting."""
    held.settimeout(patient(10))
    probe, _ = await anyio.to_thread.run_sync(held.accept)
    with probe:
        probe.sendall(b"* OK [CAPABILITY IMAP4rev1] ready\r\n")


@pytest.mark.parametrize("mode", ["legacy", "listen"])
async def test_rules_listed_before_the_look_ended_are_unlisted_and_the_client_is_told(
    sieve_dovecot: SieveDovecot, mode: str
) -> None:
    user = sieve_dovecot.new_user()
    told = Told()
    with socket.create_server(("127.0.0.1", 0)) as held:
        port = held.getsockname()[1]
        endpoint = ("127.0.0.1", port)
        # The look waits for a greeting as long as the connect budget: far longer than the test needs.
        account = account_settings(
            sieve_dovecot, user, rules_enabled=True, sieve={"port": port}, connect_timeout_s=300
        )
        SIEVE_PRESENCE.forget(endpoint)
        handler = told.message_handler if mode == "legacy" else None
        try:
            async with (
                Client(
                    build_server(make_config({"default": account})),
                    mode="legacy" if mode == "legacy" else "auto",
                    message_handler=handler,
                ) as client,
                anyio.create_task_group() as group,
                contextlib.AsyncExitStack() as stack,
            ):
                assert client.server_capabilities.tools is not None
                assert client.server_capabilities.tools.list_changed
                if mode == "listen":
                    stream = await stack.enter_async_context(client.listen(tools_list_changed=True))
                    group.start_soon(told.collect, stream)
                assert TOOL in await _names(client)  # not looked at yet: taken to offer ManageSieve
                assert not SIEVE_PRESENCE.known(endpoint)
                await _greet_in_imap(held)

                async def heard() -> bool:
                    return told.times > 0

                await eventually_async(heard, within=10, what="tools/list_changed")
                assert TOOL not in await _names(client)
                why = SIEVE_PRESENCE.absent(endpoint)
                assert why == f"no ManageSieve on this server (port {port} answered in another protocol)"
                assert told.times == 1
                group.cancel_scope.cancel()
        finally:
            SIEVE_PRESENCE.forget(endpoint)


async def test_a_look_that_finds_managesieve_changes_nothing_listed(sieve_dovecot: SieveDovecot) -> None:
    """Pigeonhole is what was taken: a client that listed before the look ended is not told anything."""
    user = sieve_dovecot.new_user()
    told = Told()
    endpoint = ("127.0.0.1", sieve_dovecot.managesieve_port)
    SIEVE_PRESENCE.forget(endpoint)
    try:
        config = rules_config(sieve_dovecot, user, rules_enabled=True)
        async with Client(
            build_server(config), mode="legacy", message_handler=told.message_handler
        ) as client:
            assert TOOL in await _names(client)

            async def looked() -> bool:
                return SIEVE_PRESENCE.known(endpoint)

            await eventually_async(looked, within=10, what="Pigeonhole looked at")
            assert TOOL in await _names(client)  # a request after the look: any notification came before
            assert told.times == 0
    finally:
        SIEVE_PRESENCE.forget(endpoint)

"""A client that listed its tools before the background look at the account's ManageSieve ended is told the
list changed once the look finds none (``notifications/tools/list_changed``), in both protocol eras: on the
session (handshake versions, whose capabilities declare ``tools.listChanged``) and on a
``subscriptions/listen`` stream that asked for it (2026-07-28). Listed again, rules are gone.

The look is held where it is by the test's own port: it accepts the connection and says nothing until the
client has listed its tools, then greets in IMAP (another protocol: no ManageSieve)."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.subscriptions import ToolsListChanged
from mcp_types import ToolListChangedNotification

from mail_imap_mcp.mail.sieve_presence import SIEVE_PRESENCE
from mail_imap_mcp.server import build_server
from tests.support.accounts import PASSWORD_ENV, account_settings, config_toml
from tests.support.clients.in_process import make_config
from tests.support.patience import eventually_async, patient
from tests.support.servers.http_server import http_client, http_config, new_token, start_http_server
from tests.support.servers.sieve import SieveDovecot
from tests.support.shared.rules import TOOL, rules_config

pytestmark = pytest.mark.anyio

SERVER = str(Path(sys.executable).parent / "mail-imap-mcp")


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


def _account(server: SieveDovecot, user: str, port: int) -> dict[str, Any]:
    """``user``'s account with rules on, its ManageSieve at the test's ``port``: the look waits for a
    greeting as long as the connect budget, far longer than the test needs."""
    return account_settings(server, user, rules_enabled=True, sieve={"port": port}, connect_timeout_s=300)


def _options(mode: str, told: Told) -> dict[str, Any]:
    """The client's options: the handshake era with ``told``'s message handler, or 2026-07-28."""
    return {"mode": "legacy", "message_handler": told.message_handler} if mode == "legacy" else {}


async def _told_when_the_look_ends(client: Client, mode: str, held: socket.socket, told: Told) -> None:
    """Listed before the look on ``held`` ended, rules are listed; once it found no ManageSieve, the client
    is told once (``told``: its message handler's, or here from its listen stream: ``mode``) and rules are
    listed no more."""
    async with anyio.create_task_group() as group, contextlib.AsyncExitStack() as stack:
        assert client.server_capabilities.tools is not None
        assert client.server_capabilities.tools.list_changed
        if mode == "listen":
            stream = await stack.enter_async_context(client.listen(tools_list_changed=True))
            group.start_soon(told.collect, stream)
        assert TOOL in await _names(client)  # not looked at yet: taken to offer ManageSieve
        await _greet_in_imap(held)

        async def heard() -> bool:
            return told.times > 0

        await eventually_async(heard, within=10, what="tools/list_changed")
        assert TOOL not in await _names(client)
        assert told.times == 1
        group.cancel_scope.cancel()


@pytest.mark.parametrize("mode", ["legacy", "listen"])
async def test_rules_listed_before_the_look_ended_are_unlisted_and_the_client_is_told(
    sieve_dovecot: SieveDovecot, mode: str
) -> None:
    user = sieve_dovecot.new_user()
    with socket.create_server(("127.0.0.1", 0)) as held:
        port = held.getsockname()[1]
        endpoint = ("127.0.0.1", port)
        SIEVE_PRESENCE.forget(endpoint)
        try:
            config = make_config({"default": _account(sieve_dovecot, user, port)})
            told = Told()
            async with Client(build_server(config), **_options(mode, told)) as client:
                assert not SIEVE_PRESENCE.known(endpoint)
                await _told_when_the_look_ends(client, mode, held, told)
            why = SIEVE_PRESENCE.absent(endpoint)
            assert why == f"no ManageSieve on this server (port {port} answered in another protocol)"
        finally:
            SIEVE_PRESENCE.forget(endpoint)


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", ["legacy", "listen"])
async def test_over_stdio_and_streamable_http_the_client_is_told(
    tmp_path: Path, sieve_dovecot: SieveDovecot, transport: str, mode: str
) -> None:
    """The server's own process, as a client starts it (stdio) or reaches it (streamable HTTP)."""
    user = sieve_dovecot.new_user()
    told = Told()
    with socket.create_server(("127.0.0.1", 0)) as held:
        account = _account(sieve_dovecot, user, held.getsockname()[1])
        if transport == "stdio":
            config = tmp_path / "config.toml"
            config.write_text(config_toml({"default": account}))
            env = {PASSWORD_ENV: sieve_dovecot.password, "PATH": os.environ["PATH"]}
            params = StdioServerParameters(command=SERVER, args=["serve", "--config", str(config)], env=env)
            async with Client(params, **_options(mode, told)) as client:
                await _told_when_the_look_ends(client, mode, held, told)
            return
        server = start_http_server(http_config(tmp_path, account), token=new_token())
        try:
            async with http_client(server.url, server.token, **_options(mode, told)) as mcp:
                await _told_when_the_look_ends(mcp.client, mode, held, told)
        finally:
            server.stop()


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

"""Idle connections: kept alive by NOOP, or found closed before use, so a call after a quiet spell does not
pay a failed command plus a reconnect (issue 13).

A ``LinkProxy`` between the server and Dovecot plays the NAT router or server that drops connections
idle for longer than its timeout. Intervals are scaled down (a fraction of a second instead of minutes);
the tests wait for events (a NOOP sent, a connection dropped), never assert on time.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import pytest
from mcp import Client
from pydantic import ValidationError

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import ServerSettings
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.pool import Keepalive
from mail_imap_mcp.server import build_server
from tests.support.accounts import account_settings
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config
from tests.support.mail import mailgen
from tests.support.patience import eventually_async
from tests.support.servers.imapserver import ImapServer
from tests.support.servers.linkproxy import LinkProxy
from tests.support.wire import ImapRecorder, has_news, parse_commands

pytestmark = pytest.mark.anyio


async def wait_for(condition: Callable[[], bool], what: str, within: float = 10.0) -> None:
    async def held() -> bool:
        return condition()

    await eventually_async(held, within=within, interval=0.02, what=what)


#: Keepalive threads of servers this module did not start: a test elsewhere in the same worker that
#: failed inside its server may leave one behind, which must not fail these tests too.
_FOREIGN: set[threading.Thread] = set()


@pytest.fixture(autouse=True)
def _only_this_tests_threads() -> None:
    _FOREIGN.clear()
    _FOREIGN.update(t for t in threading.enumerate() if t.name == Keepalive.THREAD_NAME)


def keepalive_threads() -> list[threading.Thread]:
    """The keepalive threads alive now that this test's servers started."""
    return [
        t
        for t in threading.enumerate()
        if t.name == Keepalive.THREAD_NAME and t.is_alive() and t not in _FOREIGN
    ]


@contextlib.asynccontextmanager
async def serving(
    settings: dict[str, Any], **server: Any
) -> AsyncIterator[tuple[EnvelopeClient, AppContext]]:
    config = make_config({"default": settings}, **server)
    app = AppContext.from_config(config)
    try:
        async with Client(build_server(config, app)) as session:
            yield EnvelopeClient(session), app
    finally:
        await anyio.to_thread.run_sync(app.close)
    assert keepalive_threads() == [], "the keepalive thread outlived the server"


def seeded_user(server: ImapServer) -> str:
    user = server.new_user("t-idle")
    server.seed(user, "INBOX", list(mailgen.corpus(6)))
    return user


async def test_keepalive_keeps_a_connection_that_a_router_would_drop(dovecot: ImapServer) -> None:
    """The link drops connections idle for 0.6 s; NOOP every 0.2 s keeps ours, so the call after a
    quiet spell three times that long runs on the same connection."""
    user = seeded_user(dovecot)
    with LinkProxy(dovecot.host, dovecot.tls_port, idle_timeout_s=0.6) as link:
        async with serving(account_settings(dovecot, user, port=link.port), keepalive_interval_s=0.2) as (
            client,
            app,
        ):
            connection = app.connection("default")
            first = await client.ok("imap_search_messages", {"limit": 3})
            await wait_for(lambda: connection.keepalives >= 6, "six keepalive NOOPs")
            again = await client.ok("imap_search_messages", {"limit": 3})
            assert again["messages"] == first["messages"]
            assert connection.logins == 1
            assert link.dropped == 0 and link.accepted == 1


async def test_without_keepalive_a_dropped_connection_is_found_before_use(dovecot: ImapServer) -> None:
    """Keepalive off, the link resets the idle connection: the next call sees the reset on the socket
    before sending anything and connects anew, without a failed command and without the retry's pause."""
    user = seeded_user(dovecot)
    with LinkProxy(dovecot.host, dovecot.tls_port, idle_timeout_s=0.3) as link:
        async with serving(account_settings(dovecot, user, port=link.port), keepalive_interval_s=0) as (
            client,
            app,
        ):
            assert keepalive_threads() == []
            connection = app.connection("default")
            first = await client.ok("imap_search_messages", {"limit": 3})
            await wait_for(lambda: link.dropped == 1, "the link to drop the idle connection")
            # The one drop the test is about: on a busy host Dovecot's answer to the next connection's
            # LOGIN took longer than 0.3 s, and the link cut that login too (CI, 2026-11-30).
            link.idle_timeout_s = None
            await wait_for(lambda: has_news(connection), "the reset to reach the client's socket")
            again = await client.ok("imap_search_messages", {"limit": 3})
            assert again["messages"] == first["messages"]
            assert connection.found_closed == 1
            assert connection.logins == 2
            assert connection.keepalives == 0


async def test_a_server_logout_while_idle_is_found_before_use(dovecot: ImapServer) -> None:
    """A connection the server ended (BYE, then FIN) while idle is replaced before the call sends on it."""
    user = seeded_user(dovecot)
    recorder = ImapRecorder(dovecot.plain_port)
    settings = account_settings(dovecot, user, port=recorder.port, security="plain", ca_file=None)
    try:
        async with serving(settings, keepalive_interval_s=0) as (client, app):
            connection = app.connection("default")
            await client.ok("imap_list_mailboxes", {})
            # The server's side of the idle connection closes (FIN), as an idle logout does.
            with recorder._lock:
                upstream = recorder._sockets[-1]
            upstream.shutdown(socket.SHUT_RDWR)
            await wait_for(lambda: has_news(connection), "the relay to pass the FIN on to the client")
            recorder.take()
            await client.ok("imap_list_mailboxes", {})
            assert connection.found_closed == 1 and connection.logins == 2
            sent = [c.verb for out, _ in recorder.take() for c in parse_commands(out)]
            # ENABLE QRESYNC rides with the new connection's first command (Dovecot offers QRESYNC).
            assert sent == ["LOGIN", "ENABLE", "LIST"], "nothing was sent on the dead connection"
    finally:
        recorder.close()


@pytest.mark.parametrize("server_name", ["dovecot", "courier"])
async def test_mail_delivered_while_keepalive_ran_is_seen_by_the_next_call(
    request: pytest.FixtureRequest, server_name: str
) -> None:
    """Courier updates a session's view only on NOOP or SELECT: the keepalive's NOOP takes the news of a
    message delivered elsewhere, and the next call must still show it (and the right total)."""
    server: ImapServer = request.getfixturevalue(server_name)
    user = seeded_user(server)
    async with serving(account_settings(server, user), keepalive_interval_s=0.1) as (client, app):
        connection: AccountConnection = app.connection("default")
        before = await client.ok("imap_search_messages", {"limit": 3})
        other = server.connect(user)
        try:
            other.append("INBOX", mailgen.plain_message("Delivered while idle", "Hello.\n"))
        finally:
            other.logout()
        noops = connection.keepalives
        await wait_for(lambda: connection.keepalives >= noops + 2, "two keepalive NOOPs")
        after = await client.ok("imap_search_messages", {"limit": 3})
        assert after["messages"][0]["subject"] == "Delivered while idle"
        assert after["total"] == before["total"] + 1
        assert connection.logins == 1


async def test_keepalive_never_runs_inside_a_call(dovecot: ImapServer) -> None:
    """With NOOPs due all the time, calls through a slow link still get well-formed answers: the keepalive
    takes the account's lock or waits for the next turn, and every command on the wire is well-formed."""
    user = seeded_user(dovecot)
    with LinkProxy(dovecot.host, dovecot.plain_port, one_way_s=0.005) as link:
        recorder = ImapRecorder(link.port)
        settings = account_settings(dovecot, user, port=recorder.port, security="plain", ca_file=None)
        try:
            async with serving(settings, keepalive_interval_s=0.01) as (client, app):
                connection = app.connection("default")
                page = await client.ok("imap_search_messages", {"limit": 6})
                for message in page["messages"] * 2:
                    data = await client.ok("imap_get_message", {"message_id": message["message_id"]})
                    assert data["message"]["subject"] == message["subject"]
                    # A NOOP in every gap between calls, however starved the keepalive thread is.
                    noops = connection.keepalives
                    await wait_for(lambda noops=noops: connection.keepalives > noops, "a keepalive NOOP")
                assert connection.keepalives > 0 and connection.logins == 1
            commands = [c.verb for out, _ in recorder.take() for c in parse_commands(out)]
            assert "NOOP" in commands and "SELECT" not in commands
        finally:
            recorder.close()


def test_keepalive_interval_is_validated() -> None:
    assert ServerSettings().keepalive_interval_s == 240
    assert ServerSettings(keepalive_interval_s=0).keepalive_interval_s == 0
    with pytest.raises(ValidationError, match="keepalive_interval_s"):
        ServerSettings(keepalive_interval_s=-1)
    with pytest.raises(ValidationError, match="keepalive_interval_s"):
        ServerSettings(keepalive_interval_s=3600)

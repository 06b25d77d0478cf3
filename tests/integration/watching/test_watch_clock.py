"""The watchers' own timing on a clock the test moves (issue 57 item 2): a polled mailbox is looked at
again once the clock passed ``watch_poll_interval_s`` (600 s here, never waited for), and a dropped
watching connection comes back once the clock passed its first reconnect pause. The same paths on the
real clock: ``test_watch.py`` (NOOP polling every 0.4 s, a reset connection reconnecting)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator

import anyio
import pytest

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import Config
from mail_imap_mcp.imap.watcher import RECONNECT_BACKOFF_S
from mail_imap_mcp.subscriptions.mailbox_resource import mailbox_uri
from tests.support.accounts import account_settings
from tests.support.clients.in_process import AccountFactory, make_config
from tests.support.clients.updates import Updates, append
from tests.support.fake_clock import FakeClock
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.faultproxy import FaultProxy
from tests.support.servers.matrix import MatrixServer
from tests.support.shared.watch import (
    CHANGER_TIMEOUT_S,
    QUIET_S,
    WATCHING,
    legacy_client,
    until_watched,
    wait_for,
)

pytestmark = WATCHING

#: The poll interval under test: far longer than any test waits on the real clock.
POLL_S = 600.0
#: Past a limit, never by exactly it.
PAST_S = 0.5


@contextlib.asynccontextmanager
async def inbox_watched(config: Config) -> AsyncIterator[tuple[AppContext, FakeClock, Updates, str]]:
    """INBOX subscribed to on a server of ``config`` whose watchers run on a clock of the test's."""
    app = AppContext.from_config(config)
    clock = FakeClock(1000.0)
    app.watches.clock, app.watches.pause = clock, clock.pause
    updates = Updates()
    uri = mailbox_uri("default", "INBOX")
    try:
        async with legacy_client(config, app, updates) as client:
            await client.subscribe_resource(uri)
            yield app, clock, updates, uri
    finally:
        await anyio.to_thread.run_sync(app.close)


@pytest.mark.parametrize("imap_server", ["courier"], indirect=True)
async def test_a_polled_mailbox_is_looked_at_again_once_its_clock_passes_the_poll_interval(
    imap_server: MatrixServer, user: str, account: AccountFactory
) -> None:
    """Courier is polled (NOOP and STATUS): a change shows at the next poll, which the clock brings."""
    imap_server.seed(user, "INBOX", [])
    config = make_config({"default": account(user)}, watch_poll_interval_s=POLL_S)
    async with inbox_watched(config) as (app, clock, updates, uri):
        await wait_for(lambda: app.watches.connections("default") == 1)
        # The first look is done, and the watcher waits on the clock for its next poll (its first pause:
        # a move of the clock before it would move the poll's deadline along).
        await until_watched(app)
        await wait_for(lambda: clock.waited, what="the watcher waiting for its next poll")
        started = time.monotonic()
        with imap_server.connect(user, within=CHANGER_TIMEOUT_S) as other:
            await anyio.to_thread.run_sync(append, other, "INBOX", "Polled")
        await anyio.sleep(QUIET_S)
        assert updates.since(started, uri) == [], "looked at again before the poll interval passed"
        clock.now += POLL_S - 1
        await anyio.sleep(QUIET_S)
        assert updates.since(started, uri) == [], "looked at again before the poll interval passed"
        clock.now += 1 + PAST_S
        assert await updates.first_after(started, uri, within=5) is not None, "no poll after the interval"


async def test_a_dropped_watching_connection_reconnects_once_its_clock_passes_the_pause(
    dovecot: Dovecot, user: str
) -> None:
    dovecot.seed(user, "INBOX", [])
    with FaultProxy(dovecot.host, dovecot.plain_port) as proxy:
        account = account_settings(dovecot, user, port=proxy.port, security="plain", ca_file=None)
        async with inbox_watched(make_config({"default": account})) as (app, clock, updates, uri):
            await wait_for(lambda: b" IDLE" in proxy.sent())
            started = time.monotonic()
            proxy.reset_connections()
            await wait_for(lambda: app.watches.reconnects("default") == 1)
            await anyio.sleep(QUIET_S)  # three first pauses of the real clock
            assert updates.since(started, uri) == [], "reconnected before its pause passed"
            clock.now += RECONNECT_BACKOFF_S[0] + PAST_S
            assert await updates.first_after(started, uri, within=5) is not None, "never reconnected"
            assert app.watches.reconnects("default") == 1

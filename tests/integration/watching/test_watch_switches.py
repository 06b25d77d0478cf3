"""Push while a watching connection switches between one mailbox and several (issue 33 item 8).

With ``max_watch_connections = 1``, a second subscription moves the account's one watching connection
from watching one mailbox (EXAMINE + IDLE, or NOOP polling) to watching several (NOTIFY, or STATUS
polling), and its end moves it back. Another client appends, flags and expunges in INBOX while that
happens: every change is reported at least once, on Dovecot (NOTIFY), Cyrus (STATUS) and Courier
(NOOP and STATUS polling), and nothing is reported after the last unsubscribe. The watching connection
reaches the server over a link of 100 ms round trips, so that a switch (logout, login, NOTIFY SET or
STATUS) takes long enough for a change to land in the middle of it.

The watchers poll on a clock the test moves (issue 57 item 2): none looks again on its own, so a change
a switch missed is never rescued by a poll that happened to come, and the test moves the clock past the
poll interval only where the connection polls (Courier, and Cyrus watching several mailboxes), until the
change is reported; the preparation's own change is then known to be in once it is reported, instead of
after a quiet wait. Told by IDLE or NOTIFY (Dovecot, Cyrus watching one mailbox), nothing waits on a
poll. One case polls on the real clock (:data:`REAL_CLOCK_CASE`), with patience.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import imapclient
import pytest

from mail_imap_mcp.app import AppContext
from tests.support.clients.in_process import AccountFactory, make_config
from tests.support.clients.updates import Updates, append, expunge_first, flag_first
from tests.support.fake_clock import FakeClock
from tests.support.patience import NotYet, eventually_async
from tests.support.servers.courier import Courier
from tests.support.servers.cyrus import Cyrus
from tests.support.servers.linkproxy import LinkProxy
from tests.support.servers.matrix import MatrixServer
from tests.support.shared.watch import (
    legacy_client,
    no_update_after,
    settled,
    until_watched,
    watch_config,
    with_work_mailbox,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.waits,
    pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed"),
]

#: How long after the switch starts the change is made: early, midway, late in a switch of ~1 s.
DELAYS_S = (0.0, 0.15, 0.4)
#: A change is reported within this (the poll interval is POLL_S; a switch takes about a second).
REPORTED_WITHIN_S = 6.0
#: The poll interval on the test's clock: no poll comes unless the test moves the clock past it.
FAKE_POLL_S = 600.0
#: Past a limit, never by exactly it.
PAST_S = 0.5
#: The case that polls on the real clock every POLL_S.
REAL_CLOCK_CASE = ("courier", 0.15)


def polls(server: MatrixServer, several: bool) -> bool:
    """Whether the watching connection polls (NOOP or STATUS) rather than being told (IDLE, NOTIFY)."""
    return isinstance(server, Courier) or (isinstance(server, Cyrus) and several)


async def reported(
    updates: Updates, started: float, uri: str, clock: FakeClock | None, polled: bool
) -> float | None:
    """Seconds from ``started`` to the first update of ``uri`` (None: none within REPORTED_WITHIN_S),
    the clock moved past a poll interval at each look where the connection polls on it."""

    async def heard() -> list[float]:
        found = updates.since(started, uri)
        if not found and clock is not None and polled:
            clock.now += FAKE_POLL_S + PAST_S
        return found

    try:
        times = await eventually_async(heard, within=REPORTED_WITHIN_S, interval=0.1)
    except NotYet:
        return None
    return times[0] - started


def changes(server: MatrixServer) -> list[tuple[str, Callable[[imapclient.IMAPClient], None]]]:
    """Append, flag and expunge in INBOX (Courier, without CONDSTORE, tells only \\Seen by STATUS)."""
    flag = b"\\Seen" if isinstance(server, Courier) else b"\\Flagged"
    return [
        ("append", lambda other: append(other, "INBOX", "During a switch")),
        ("flag", lambda other: flag_first(other, "INBOX", flag)),
        ("expunge", lambda other: expunge_first(other, "INBOX")),
    ]


def prepare(other: imapclient.IMAPClient, name: str, server: MatrixServer) -> None:
    """INBOX as the change ``name`` needs it: a message to flag or expunge, no message flagged yet."""
    if name == "append":
        return
    append(other, "INBOX", "To flag or expunge")
    other.select_folder("INBOX")
    flag = b"\\Seen" if isinstance(server, Courier) else b"\\Flagged"
    other.remove_flags(other.search(["ALL"]), [flag], silent=True)
    other.close_folder()


async def change_during(
    switch: Callable[[], Coroutine[Any, Any, object]],
    delay: float,
    change: Callable[[imapclient.IMAPClient], None],
    other: imapclient.IMAPClient,
) -> float:
    """Start ``switch`` (a subscription or its end), make ``change`` ``delay`` seconds later while it
    goes on; return when the change was started (monotonic)."""
    started = 0.0
    async with anyio.create_task_group() as group:
        group.start_soon(switch)
        await anyio.sleep(delay)
        started = time.monotonic()
        await anyio.to_thread.run_sync(change, other)
    return started


# One test per delay: each makes six changes on its own servers, so the workers share the waiting.
@pytest.mark.parametrize("delay", DELAYS_S)
@pytest.mark.parametrize("imap_server", ["dovecot", "cyrus", "courier"], indirect=True)
async def test_every_change_made_while_the_watching_connection_switches_is_reported(
    imap_server: MatrixServer,
    user: str,
    account: AccountFactory,
    delay: float,
    request: pytest.FixtureRequest,
) -> None:
    server = imap_server
    server.seed(user, "INBOX", [])
    _, inbox, work = with_work_mailbox(server, user)
    missed: list[str] = []
    clock = (
        None if (request.node.callspec.params["imap_server"], delay) == REAL_CLOCK_CASE else FakeClock(4055.1)
    )
    with LinkProxy(server.host, server.tls_port, one_way_s=0.05) as link:
        account_config = account(user, port=link.port)
        if clock is None:
            config = watch_config(account_config, max_watch_connections=1)
        else:
            config = make_config(
                {"default": account_config}, watch_poll_interval_s=FAKE_POLL_S, max_watch_connections=1
            )
        app = AppContext.from_config(config)
        if clock is not None:
            app.watches.clock, app.watches.pause = clock, clock.pause
        updates = Updates()
        async with legacy_client(config, app, updates) as client:
            await client.subscribe_resource(inbox)
            await until_watched(app)
            with server.connect(user) as other:
                for name, change in changes(server):
                    for direction, switch in (
                        ("joins", lambda: client.subscribe_resource(work)),
                        ("leaves", lambda: client.unsubscribe_resource(work)),
                    ):
                        several = direction == "leaves"  # watched before the switch
                        prepared = time.monotonic()
                        prepare(other, name, server)
                        if clock is not None and polls(server, several):
                            # Nothing looks until the clock moves: the preparation's change is in once
                            # reported (an append leaves nothing to report).
                            if name != "append":
                                assert await reported(updates, prepared, inbox, clock, True) is not None
                        else:
                            # Told at once (IDLE, NOTIFY) or polled on the real clock: the preparation's
                            # change is in once reported, and so are its later updates once quiet.
                            if name != "append":
                                assert await reported(updates, prepared, inbox, clock, False) is not None
                            await settled(updates, inbox)
                        started = await change_during(switch, delay, change, other)
                        if await reported(updates, started, inbox, clock, polls(server, not several)) is None:
                            missed.append(f"{name} {delay:g} s into a subscription that {direction}")
                        assert app.watches.connections("default") == 1
            await client.unsubscribe_resource(inbox)
            await no_update_after(updates, server, user, inbox)
        await anyio.to_thread.run_sync(app.close)
    assert not missed, f"{len(missed)} of 6 changes never reported: {missed}"

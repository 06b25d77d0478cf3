"""What tests/integration/watching/test_watch.py shares with other test modules."""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from collections import Counter
from typing import Any

import anyio
import pytest
from mcp import Client

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import Config
from mail_imap_mcp.imap.watch import Watch
from mail_imap_mcp.server import build_server
from mail_imap_mcp.subscriptions.mailbox_resource import mailbox_uri
from tests.support.clients.in_process import make_config
from tests.support.clients.updates import Updates, append
from tests.support.patience import eventually_async
from tests.support.servers.matrix import MatrixServer

#: The marks of the watching tests.
WATCHING = [
    pytest.mark.anyio,
    pytest.mark.waits,
    # The handshake-era form is what this server serves to such clients; the SDK calls it deprecated.
    pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed"),
]


#: Where the server has no IDLE, it is checked this often (the default is 10 s).
POLL_S = 0.4


#: How long "no update" is awaited: several poll intervals.
QUIET_S = 1.5


#: The changing client's read timeout: Courier's folder lock can hold its command for seconds under load.
CHANGER_TIMEOUT_S = 60.0


def watch_config(account: dict[str, Any], **server: Any) -> Config:
    return make_config({"default": account}, watch_poll_interval_s=POLL_S, **server)


def with_work_mailbox(server: MatrixServer, user: str) -> tuple[str, str, str]:
    """A second mailbox, Work: its name on ``server``, and the URIs of INBOX and of Work."""
    work_name = server.mailbox_name("Work")
    server.seed(user, work_name, [])
    return work_name, mailbox_uri("default", "INBOX"), mailbox_uri("default", work_name)


def legacy_client(config: Config, app: AppContext, updates: Updates) -> Client:
    """An in-process client on the handshake protocol whose resource updates go to ``updates``."""
    return Client(build_server(config, app), mode="legacy", message_handler=updates.message_handler)


def watches_of(app: AppContext) -> list[Watch]:
    """Every watch of ``app``'s hub now (read under the hub's lock)."""
    hub = app.watches
    with hub.lock:
        return [
            watch
            for watchers in hub._watchers.values()
            for watcher in watchers
            for joined in watcher.watches.values()
            for watch in joined
        ]


async def until_watched(app: AppContext, within: float = 10.0) -> None:
    """Until every mailbox ``app`` watches has been seen by its watching connection (``Watch.ready``):
    every change from then on is reported. The subscription's answer waits for this too, but only up to
    the account's timeouts."""

    async def ready() -> bool:
        watches = watches_of(app)
        return bool(watches) and all(watch.ready.is_set() for watch in watches)

    await eventually_async(ready, within=within, what="every watched mailbox seen by its connection")


async def settled(updates: Updates, uri: str) -> None:
    """Until no update of ``uri`` came for QUIET_S: what earlier changes bring (an expunge brings one for
    its \\Deleted flag and one for the EXPUNGE, a poll may come late) is all in, and is not counted as
    the report of the next change. A lower bound from the last update, lengthened while updates come."""

    async def quiet() -> bool:
        times = updates.since(0, uri)
        return not times or time.monotonic() - times[-1] >= QUIET_S

    await eventually_async(
        quiet, within=QUIET_S + 10, interval=0.1, what=f"no update of {uri} for {QUIET_S} s"
    )


async def no_update_after(updates: Updates, server: MatrixServer, user: str, uri: str) -> None:
    started = time.monotonic()
    with server.connect(user, within=CHANGER_TIMEOUT_S) as other:
        await anyio.to_thread.run_sync(append, other, "INBOX", "After unsubscribing")
    await anyio.sleep(QUIET_S)
    assert updates.since(started, uri) == []


async def wait_for(condition: Any, within: float = 5.0, what: str | None = None) -> None:
    async def held() -> bool:
        return bool(condition())

    await eventually_async(held, within=within, what=what)


def footprint() -> Counter[str]:
    """This process's threads by name and open descriptors by kind, digits left out of both, so that a
    thread or descriptor leaked per subscription shows as one kind growing."""
    kinds: Counter[str] = Counter(f"thread {_kind(thread.name)}" for thread in threading.enumerate())
    for descriptor in os.listdir("/proc/self/fd"):
        with contextlib.suppress(FileNotFoundError):  # the listing's own descriptor is gone by now
            kinds[f"descriptor {_kind(os.readlink(f'/proc/self/fd/{descriptor}'))}"] += 1
    return kinds


def grown(before: Counter[str], now: Counter[str] | None = None) -> Counter[str]:
    """The kinds there are more of than ``before`` (fewer is a thread of an earlier test ending)."""
    return (now if now is not None else footprint()) - before


def _kind(name: str) -> str:
    return re.sub(r"\d+", "N", name)


async def nothing_grown_since(before: Counter[str]) -> bool:
    """True once no kind of thread or descriptor outnumbers ``before``; else raises naming what grew."""
    more = grown(before)
    assert not more, f"more than before: {dict(more)}"
    return True

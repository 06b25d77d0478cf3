"""Mailbox resources and their subscriptions (issue 23): a change by another IMAP client brings
``notifications/resources/updated`` within 2 s, on every server of the matrix and the IMAP4rev1-only
Dovecot (no IDLE: NOOP polling), in both wire forms (``resources/subscribe`` and the 2026-07-28
``subscriptions/listen``), in process, over stdio and over streamable HTTP; none after unsubscribing;
a reset watching connection comes back and says so; watching leaks no thread or descriptor."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from mail_imap_mcp.config import Config
from mail_imap_mcp.server import build_server
from mail_imap_mcp.subscriptions import mailbox_uri
from mail_imap_mcp.tools.context import AppContext
from tests.support.accounts import PASSWORD_ENV, account_settings, config_toml
from tests.support.clients import AccountFactory, make_config
from tests.support.dovecot import Dovecot
from tests.support.faultproxy import FaultProxy
from tests.support.http_server import http_client, http_config, new_token, start_http_server
from tests.support.matrix import SESSION_PASSWORD, MatrixServer
from tests.support.updates import Updates, append, expunge_first, flag_first

pytestmark = pytest.mark.anyio

#: The 2 s of issue 23: a change is reported within this.
WITHIN_S = 2.0
#: Where the server has no IDLE, it is checked this often (the default is 10 s).
POLL_S = 0.4
#: How long "no update" is awaited: several poll intervals.
QUIET_S = 1.5
SERVER = str(Path(os.sys.executable).parent / "mail-imap-mcp")  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def dovecot_rev1() -> Iterator[Dovecot]:
    """A Dovecot that offers nothing beyond IMAP4rev1: no IDLE, so watching polls."""
    with Dovecot(capabilities="IMAP4rev1", password=SESSION_PASSWORD) as server:
        os.environ[PASSWORD_ENV] = server.password
        yield server


def watch_config(account: dict[str, Any], **server: Any) -> Config:
    return make_config({"default": account}, watch_poll_interval_s=POLL_S, **server)


async def changes_are_reported(updates: Updates, server: MatrixServer, user: str, uri: str) -> None:
    """Another client appends, flags and expunges in INBOX: each brings an update within 2 s."""
    with server.connect(user) as other:
        for change in (
            lambda: append(other, "INBOX", "New mail"),
            lambda: flag_first(other, "INBOX"),
            lambda: expunge_first(other, "INBOX"),
        ):
            await anyio.sleep(QUIET_S)  # the previous change's updates are all in
            await anyio.to_thread.run_sync(change)
            started = time.monotonic()
            delay = await updates.first_after(started, uri, timeout=WITHIN_S + 3)
            assert delay is not None, f"no update after {change}"
            assert delay <= WITHIN_S, delay


async def no_update_after(updates: Updates, server: MatrixServer, user: str, uri: str) -> None:
    with server.connect(user) as other:
        await anyio.to_thread.run_sync(append, other, "INBOX", "After unsubscribing")
    started = time.monotonic()
    await anyio.sleep(QUIET_S)
    assert updates.since(started, uri) == []


@pytest.mark.parametrize(
    "imap_server", ["dovecot", "cyrus", "cyrus_altns", "courier", "dovecot_rev1"], indirect=True
)
async def test_a_subscribed_mailbox_reports_each_change_by_another_client_within_2_s(
    imap_server: MatrixServer, user: str, account: AccountFactory
) -> None:
    imap_server.seed(user, "INBOX", [])
    config = watch_config(account(user))
    app = AppContext.from_config(config)
    updates = Updates()
    uri = mailbox_uri("default", "INBOX")
    async with Client(
        build_server(config, app), mode="legacy", message_handler=updates.message_handler
    ) as client:
        await client.subscribe_resource(uri)
        assert app.watches.connections("default") == 1
        await changes_are_reported(updates, imap_server, user, uri)
        await client.unsubscribe_resource(uri)
        assert app.watches.connections("default") == 0
        await no_update_after(updates, imap_server, user, uri)
    await anyio.to_thread.run_sync(app.close)

"""Listen streams of an instance sharing Redis hear the writes of every instance (subscriptions.py):
the announcements arrive on a Redis thread while the event loop opens and closes subscriptions."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

import mail_imap_mcp.server
import mail_imap_mcp.subscriptions
import mail_imap_mcp.subscriptions.tool_list
from mail_imap_mcp.app import AppContext
from mail_imap_mcp.app.changes import CHANGES_CHANNEL
from mail_imap_mcp.config import Config
from mail_imap_mcp.server import build_server
from mail_imap_mcp.state import ANONYMOUS
from mail_imap_mcp.state.redis import RedisStore
from mail_imap_mcp.subscriptions import MailboxSubscriptions
from mail_imap_mcp.subscriptions.mailbox_resource import mailbox_uri
from tests.support.clients.in_process import AccountFactory
from tests.support.clients.updates import Updates, append
from tests.support.patience import patient
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.redis_server import RedisServer

pytestmark = pytest.mark.anyio

BOXES = [f"Box{number}" for number in range(5)]


class ThreadsOfIteration(dict[Any, Any]):
    """The subscriptions' table, noting every thread that walks it."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: set[int] = set()

    def __iter__(self) -> Iterator[Any]:
        self.threads.add(threading.get_ident())
        return super().__iter__()


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisServer]:
    with RedisServer(tmp_path / "redis") as server:
        yield server


async def test_changes_announced_through_redis_are_read_on_the_event_loop_while_streams_come_and_go(
    redis: RedisServer,
    dovecot: Dovecot,
    user: str,
    account: AccountFactory,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Regression: the Redis thread walked the table of listened mailboxes while the event loop added
    and removed streams in it ("dictionary changed size during iteration": the change was lost)."""
    for box in BOXES:
        dovecot.seed(user, box, [])
    made: list[MailboxSubscriptions] = []

    class Recorded(MailboxSubscriptions):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._shared = ThreadsOfIteration()
            made.append(self)

    monkeypatch.setattr(mail_imap_mcp.server, "MailboxSubscriptions", Recorded)
    config = Config.model_validate(
        {
            "accounts": {"default": account(user)},
            "server": {"watch_poll_interval_s": 3600},
            "state": {"redis_url": redis.url},
        }
    )
    app = AppContext.from_config(config)
    inbox = mailbox_uri("default", "INBOX")
    updates = Updates()
    announcer = RedisStore(redis.url)
    announced = threading.Event()

    def announce() -> None:
        while not announced.is_set():
            announcer.publish(CHANGES_CHANNEL, json.dumps({"account": "default", "user": "-"}).encode())
            time.sleep(0.001)

    try:
        with caplog.at_level(logging.WARNING):
            async with Client(build_server(config, app)) as client, anyio.create_task_group() as group:
                loop_thread = threading.get_ident()
                stream = await group.start(_listening, client, [inbox], updates)
                started = time.monotonic()
                thread = threading.Thread(target=announce, daemon=True)
                thread.start()
                for _ in range(8):  # streams come and go meanwhile
                    async with client.listen(
                        resource_subscriptions=[mailbox_uri("default", b) for b in BOXES]
                    ):
                        await anyio.sleep(0.05)
                announced.set()
                await anyio.to_thread.run_sync(thread.join)
                assert await updates.first_after(started, inbox, 5) is not None
                stream.cancel()
        table = made[0]._shared
        assert isinstance(table, ThreadsOfIteration)
        assert table.threads == {loop_thread}
        assert not [record for record in caplog.records if "subscriber of" in record.getMessage()]
    finally:
        announcer.close()
        await anyio.to_thread.run_sync(app.close)


async def _listening(
    client: Client, uris: list[str], updates: Updates, *, task_status: Any = anyio.TASK_STATUS_IGNORED
) -> None:
    with anyio.CancelScope() as scope:
        async with client.listen(resource_subscriptions=uris) as events:
            task_status.started(scope)
            await updates.collect(events)


async def test_a_team_users_bus_goes_with_their_last_listen_stream(
    dovecot: Dovecot, user: str, account: AccountFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: each team user's bus (and its listen handler) was kept for the life of the process
    once they had listened: a long-running server with many users grew without bound. So was what the
    tools/list_changed notifications keep of each user (subscriptions/tool_list.py)."""
    users = [f"user{number}@corp.example" for number in range(6)]
    made: list[MailboxSubscriptions] = []

    class Recorded(MailboxSubscriptions):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    caller = {"user": users[0]}
    monkeypatch.setattr(mail_imap_mcp.server, "MailboxSubscriptions", Recorded)
    for module in (mail_imap_mcp.subscriptions, mail_imap_mcp.server, mail_imap_mcp.subscriptions.tool_list):
        monkeypatch.setattr(module, "user_of", lambda context: caller["user"])
    config = Config.model_validate({"accounts": {"support": {**account(user), "users": users}}})
    app = AppContext.from_config(config)
    inbox = mailbox_uri("support", "INBOX")
    updates = Updates()
    try:
        server = build_server(config, app)
        tool_changes = server.tool_changes
        assert tool_changes is not None
        async with Client(server) as client:
            for who in users:
                caller["user"] = who
                async with client.listen(resource_subscriptions=[inbox]):
                    await client.list_tools()
                    async with client.listen(resource_subscriptions=[inbox]):
                        pass
                    assert who in made[0]._buses  # one stream of theirs still open
                    assert tool_changes.followed >= 1  # theirs (an earlier user's may still be ending)
            await _until_only_the_servers_own(made[0])
            assert tool_changes.followed == 0
            caller["user"] = users[0]  # back after their bus went: a new one, and it is told of changes
            async with anyio.create_task_group() as group:
                stream = await group.start(_listening, client, [inbox], updates)
                started = time.monotonic()
                with dovecot.connect(user) as other:
                    await anyio.to_thread.run_sync(append, other, "INBOX", "news")
                assert await updates.first_after(started, inbox, 10) is not None
                stream.cancel()
            await _until_only_the_servers_own(made[0])
    finally:
        await anyio.to_thread.run_sync(app.close)


async def _until_only_the_servers_own(subscriptions: MailboxSubscriptions) -> None:
    """Wait for the server to end the streams the client left (it learns of it a moment later)."""
    with anyio.fail_after(patient(5)):
        while list(subscriptions._buses) != [ANONYMOUS]:
            await anyio.sleep(0.02)

"""A shared index in PostgreSQL through faults mid-sync (issue 50): an instance killed (a real process,
SIGKILL) while it builds hands its lease over within twice its time to live, and PostgreSQL stopped while
an index is built, then started again, lets the build resume; either way the index ends with each of the
server's messages once (its rows counted, and a search that the index answers finds what the server
does). A FaultProxy's latency in front of Dovecot makes the build last long enough to be cut."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis as redis_client

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import StateSettings
from mail_imap_mcp.index import runtime
from mail_imap_mcp.index.lease import LEASE_TTL_S
from tests.support.accounts import PASSWORD_ENV, account_settings
from tests.support.clients.in_process import make_config, open_client
from tests.support.patience import eventually, patient
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.faultproxy import FaultProxy
from tests.support.servers.http_server import (
    HttpServer,
    http_client,
    http_config,
    new_token,
    start_http_server,
)
from tests.support.servers.postgres import PostgresServer, index_table, on_engine
from tests.support.servers.postgres_index import FOLDERS, LATENCY_S, PER_FOLDER, WORD, Schema, seed, until
from tests.support.servers.redis_server import RedisServer
from tests.support.shared.team_shared_index import FETCH_COUNTS, fetch_counts, sessions

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def server_count(dovecot: Dovecot, user: str) -> int:
    """The messages holding ``WORD`` as Dovecot's own search finds them, every folder."""
    found = dovecot.doveadm("search", "-u", user, "mailbox", "Box*", "text", WORD).stdout.splitlines()
    return len([line for line in found if line.strip()])


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisServer]:
    with RedisServer(tmp_path / "redis") as server:
        yield server


def lease_holder(server: RedisServer) -> int | None:
    """The process holding the index's lease, as its value says (``host:pid:random``)."""
    client = redis_client.Redis.from_url(server.url)
    try:
        keys = list(client.scan_iter("*index-sync:*"))
        if not keys:
            return None
        (key,) = keys
        value = client.get(key)
        return int(value.split(b":")[1]) if value else None
    finally:
        client.close()


@pytest.fixture
def counting_dovecot(monkeypatch: pytest.MonkeyPatch) -> Iterator[Dovecot]:
    """A Dovecot of this test alone that logs each session's FETCH counts when it ends."""
    with Dovecot(extra_config=FETCH_COUNTS) as server:
        monkeypatch.setenv(PASSWORD_ENV, server.password)
        yield server


async def test_an_instance_killed_mid_sync_hands_its_lease_over_and_nothing_is_lost_or_doubled(
    counting_dovecot: Dovecot, postgres: PostgresServer, redis: RedisServer, tmp_path: Path
) -> None:
    """...and what the killed instance had fetched but not stored is fetched again by the survivor:
    Dovecot's own count of bodies fetched, every session's (the killed one's too), less the messages
    (docs/index.md quotes it: run with -s)."""
    dovecot = counting_dovecot
    user = dovecot.new_user()
    total = seed(dovecot, user)
    table = index_table(postgres)
    # In plain text: the proxy holds back a command it reads (below).
    with FaultProxy(dovecot.host, dovecot.plain_port) as proxy:
        proxy.set_latency(LATENCY_S)
        account = account_settings(
            dovecot, user, index=True, port=proxy.port, command_timeout_s=30, security="plain", ca_file=None
        )
        extra = f'[state]\nredis_url = "{redis.url}"\n[index]\n' + "".join(
            f'{key} = "{value}"\n' for key, value in table.items()
        )
        config = http_config(tmp_path, account, extra)
        token = new_token()
        instances: list[HttpServer] = []
        # The holder is stopped as it opens the fourth folder to fetch its mail (the second EXAMINE of it:
        # the first compares the flags of every folder), that command held back by the proxy: a poll of
        # the built folders, then the kill, let the whole build end first in a doubly loaded run.
        reached, release = threading.Event(), threading.Event()

        def held_back() -> None:
            reached.set()
            release.wait(patient(120))

        proxy.before_sent(b'EXAMINE "%s"' % FOLDERS[3].encode(), held_back, times=2)
        try:
            instances = [start_http_server(config, token=token) for _ in range(2)]
            schema = Schema(table["index_url"], postgres.password, "mimx_default")
            until(lambda: lease_holder(redis) in {i.proc.pid for i in instances}, 30, "a lease taken")
            holder = next(i for i in instances if i.proc.pid == lease_holder(redis))
            survivor = next(i for i in instances if i is not holder)
            until(reached.is_set, 60, "the build reached the fourth folder")
            built_then = schema.complete()
            assert 3 <= built_then < len(FOLDERS), built_then
            holder.proc.send_signal(signal.SIGKILL)
            holder.proc.wait(timeout=patient(10))
            release.set()
            proxy.set_latency(0)  # the rest of the build at full speed
            took = until(
                lambda: lease_holder(redis) == survivor.proc.pid, 2 * LEASE_TTL_S, "lease taken over"
            )
            # Redis's own expiry, in real time, with patience: within two TTLs on a moved clock is
            # test_index_lease_clock.py's (no test asserts a duration from above).
            print(f"killed after {built_then} of {len(FOLDERS)} folders; lease taken over in {took:.1f} s")
            until(lambda: schema.complete() == len(FOLDERS), 90, "the build finished by the survivor")
            assert schema.rows() == (total, total), schema.folders()
            async with http_client(survivor.url, token) as mcp:
                ask = {"account_id": "default", "query": WORD, "mailbox": "*", "sort": "relevance"}
                found = await mcp.call("imap_search_messages", ask)
            assert found["success"] and found["summary"].endswith("best match first"), found
            assert found["data"]["total"] == server_count(dovecot, user) == total
        finally:
            release.set()
            for instance in instances:
                instance.stop()
    eventually(lambda: not sessions(dovecot), within=30, what="every session ended")
    bodies = fetch_counts(dovecot)[user]["bodies"]
    print(f"bodies fetched: {bodies} for {total} messages; fetched again after the kill: {bodies - total}")
    assert total <= bodies <= total + PER_FOLDER  # a folder's messages are fetched and stored together


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL of this test alone, stopped and started again (durable, as a deployment's)."""
    with PostgresServer(durable=True) as server:
        yield server


async def test_postgresql_stopped_mid_sync_then_started_again_the_build_resumes_with_nothing_lost_or_doubled(
    dovecot: Dovecot, own_postgres: PostgresServer, redis: RedisServer, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setattr(runtime, "RETRY_S", 0.5)  # the sync's wait before it tries again (30 s)
    user = dovecot.new_user()
    total = seed(dovecot, user)
    with FaultProxy(dovecot.host, dovecot.tls_port) as proxy:
        proxy.set_latency(LATENCY_S)
        account = account_settings(dovecot, user, index=True, port=proxy.port, command_timeout_s=30)
        config = on_engine(
            make_config({"default": account}, state_dir=str(tmp_path / "st")), "postgresql", own_postgres
        )
        config = config.model_copy(update={"state": StateSettings(redis_url=redis.url)})
        schema = Schema(config.index.index_url, own_postgres.password, "mimx_default")
        app = AppContext.from_config(config)
        index = app.indexes["default"]
        await anyio.to_thread.run_sync(lambda: until(lambda: schema.complete() >= 2, 60, "two folders built"))
        built_then = schema.complete()
        assert built_then < len(FOLDERS), "the build ended before PostgreSQL stopped: more latency"
        own_postgres.stop()
        proxy.set_latency(0)
        await anyio.to_thread.run_sync(
            lambda: until(lambda: index.status.state == "unavailable", 30, "the index said unavailable")
        )
        own_postgres.start()
        await anyio.to_thread.run_sync(
            lambda: until(lambda: schema.complete() == len(FOLDERS), 90, "the build resumed and finished")
        )
        print(f"PostgreSQL stopped after {built_then} of {len(FOLDERS)} folders; the build resumed")
        assert schema.rows() == (total, total), schema.folders()
        async for mcp in open_client(config, app):
            with anyio.fail_after(patient(30)):
                while index.status.state != "ready":
                    await anyio.sleep(0.05)
            ask = {"account_id": "default", "query": WORD, "mailbox": "*", "sort": "relevance"}
            found = await mcp.call("imap_search_messages", ask)
            assert found["success"] and found["summary"].endswith("best match first"), found
            assert found["data"]["total"] == server_count(dovecot, user) == total

"""The IMAP plan of a call: the commands it sends (seen through the wire recorder) and how many times
it waits for the server (``AccountConnection.round_trips``), for tests that pin plans."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import Config
from mail_imap_mcp.server import build_server
from tests.support.accounts import account_settings
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config
from tests.support.servers.dovecot import Dovecot
from tests.support.wire import ImapRecorder, parse_commands


@dataclass(frozen=True)
class Plan:
    """What one call sends (IMAP verbs in order) and how many times it waits for the server."""

    commands: tuple[str, ...]
    round_trips: int


@dataclass
class Rig:
    client: EnvelopeClient
    app: AppContext
    recorder: ImapRecorder | None
    #: The bytes the last :meth:`call` sent (empty without a recorder).
    last_sent: bytes = b""

    @property
    def connection(self) -> Any:
        return self.app.connection("default")

    async def call(self, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], Plan]:
        """Call ``tool``; its data and the plan it ran (commands from the recorder, waits from the socket)."""
        if self.recorder is not None:
            self.recorder.take()
        before = self.connection.round_trips
        data = await self.client.ok(tool, arguments)
        trips = self.connection.round_trips - before
        sent = b"".join(out for out, _ in self.recorder.take()) if self.recorder is not None else b""
        self.last_sent = sent
        return data, Plan(tuple(command.verb for command in parse_commands(sent)), trips)


@contextlib.asynccontextmanager
async def rig(settings: dict[str, Any], recorder: ImapRecorder | None = None) -> AsyncIterator[Rig]:
    config = make_config({"default": settings})
    app = AppContext.from_config(config)
    try:
        async with Client(build_server(config, app)) as session:
            yield Rig(EnvelopeClient(session), app, recorder)
    finally:
        await anyio.to_thread.run_sync(app.close)


@contextlib.contextmanager
def recording(dovecot: Dovecot) -> Iterator[ImapRecorder]:
    recorder = ImapRecorder(dovecot.plain_port)
    try:
        yield recorder
    finally:
        recorder.close()


def plain_settings(dovecot: Dovecot, user: str, port: int) -> dict[str, Any]:
    return account_settings(dovecot, user, port=port, security="plain", ca_file=None)


#: The connection's debug line after each call's IMAP work (``mail_imap_mcp.imap`` logger).
ROUND_TRIPS = re.compile(r"imap_commands=(\d+) round_trips=(\d+)")


def logged_cost(caplog: pytest.LogCaptureFixture) -> tuple[int, int]:
    """IMAP commands and round trips of the calls logged since ``caplog.clear()`` (on any server of the
    matrix: read from the connection's debug line, not the wire; set the logger to DEBUG first)."""
    found = [ROUND_TRIPS.search(r.getMessage()) for r in caplog.records]
    counted = [(int(m.group(1)), int(m.group(2))) for m in found if m]
    return sum(c for c, _ in counted), sum(t for _, t in counted)


@contextlib.contextmanager
def recorded_index(
    dovecot: Dovecot, index_dir: Path, folders: dict[str, list[bytes]]
) -> Iterator[tuple[Config, ImapRecorder, str]]:
    """A new user of ``dovecot`` with ``folders`` seeded, and a config with the index on (in
    ``index_dir``) whose account reaches the server through a recording relay: the config, the relay
    and the user."""
    user = dovecot.new_user()
    for folder, messages in folders.items():
        dovecot.seed(user, folder, messages)
    with recording(dovecot) as recorder:
        yield (
            make_config(
                {"default": plain_settings(dovecot, user, recorder.port)},
                index=True,
                index_dir=str(index_dir),
            ),
            recorder,
            user,
        )

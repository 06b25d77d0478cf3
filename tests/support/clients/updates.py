"""What a subscribing MCP client receives: ``notifications/resources/updated`` (handshake versions,
through the client's ``message_handler``) or listen events (2026-07-28, ``Client.listen``), each with
the monotonic time it arrived; and a second IMAP client that changes a mailbox behind the server."""

from __future__ import annotations

import time
from collections.abc import AsyncIterable, Callable
from typing import Any

import anyio
import imapclient
from mcp.shared.subscriptions import ResourceUpdated
from mcp_types import ResourceUpdatedNotification

from tests.support.mail import mailgen
from tests.support.patience import NotYet, eventually_async


class Updates:
    """Resource updates received, in order: ``(monotonic time, uri)``."""

    def __init__(self) -> None:
        self.received: list[tuple[float, str]] = []

    async def message_handler(self, message: Any) -> None:
        """For ``Client(message_handler=...)`` (handshake versions)."""
        if isinstance(message, ResourceUpdatedNotification):
            self.received.append((time.monotonic(), str(message.params.uri)))

    async def collect(self, events: AsyncIterable[Any]) -> None:
        """Record the events of a ``Client.listen`` subscription until it ends (2026-07-28)."""
        async for event in events:
            if isinstance(event, ResourceUpdated):
                self.received.append((time.monotonic(), event.uri))

    def since(self, started: float, uri: str) -> list[float]:
        return [at for at, got in self.received if got == uri and at >= started]

    async def first_after(self, started: float, uri: str, within: float) -> float | None:
        """Seconds from ``started`` to the first update of ``uri`` after it; None if none came ``within``
        seconds from now (with the run's patience: the seconds returned are what is asserted)."""

        async def heard() -> list[float]:
            return self.since(started, uri)

        try:
            times = await eventually_async(heard, within=within, interval=0.02)
        except NotYet:
            return None
        return times[0] - started

    async def delay_after(self, change: Callable[[], None], uri: str, within: float) -> float | None:
        """Run ``change`` (another client's command, in a thread) and return how long after its OK the first
        update of ``uri`` came (0 where it came before: a server may tell the watching session before the
        changing client reads its own OK); None if none came ``within`` seconds of that OK.

        Measured from the OK, not from the command's start: on a busy machine Courier's own folder lock can
        hold an APPEND for seconds while the watching session scans the folder (IMAP_USELOCKS), and the
        server cannot report a change before it has made it."""
        started = time.monotonic()
        await anyio.to_thread.run_sync(change)
        done = time.monotonic()
        first = await self.first_after(started, uri, within=within)
        return None if first is None else max(0.0, started + first - done)


def append(client: imapclient.IMAPClient, mailbox: str, subject: str) -> None:
    client.append(mailbox, mailgen.plain_message(subject, "body"))


def flag_first(client: imapclient.IMAPClient, mailbox: str, flag: bytes = b"\\Flagged") -> None:
    client.select_folder(mailbox)
    client.add_flags(client.search(["ALL"])[:1], [flag], silent=True)
    client.close_folder()  # no message is marked \\Deleted here: CLOSE expunges nothing


def expunge_first(client: imapclient.IMAPClient, mailbox: str) -> None:
    client.select_folder(mailbox)
    client.delete_messages(client.search(["ALL"])[:1], silent=True)
    client.expunge()
    client.close_folder()

"""What tests/integration/writes/test_write_by_search.py shares with other test modules."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest

from mail_imap_mcp.config import Config
from mail_imap_mcp.operations import Progress, background
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.mail.mail_state import MessageIdCounts
from tests.support.mail.mailgen import plain_message
from tests.support.patience import eventually_async, patient
from tests.support.servers.matrix import MatrixServer
from tests.support.servers.redis_server import RedisServer

APPLY = "imap_apply_to_messages"


FLAGS = "imap_update_message_flags"


NEWS = "Weekly News <news@lists.example>"


QUERY = "from:news@lists.example"


MATCHING, OTHERS = 300, 200


DELIVERED = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)


def news(n: int) -> bytes:
    return plain_message(f"News {n}", "issue", from_=NEWS, message_id=f"<news-{n}@lists.example>")


def seed(server: MatrixServer, user: str) -> None:
    """INBOX: the newsletters and the others interleaved (every third message is another's), each
    delivered a minute after the one before."""
    messages = [news(n) for n in range(MATCHING)] + [
        plain_message(f"Other {n}", "x", message_id=f"<other-{n}@t>") for n in range(OTHERS)
    ]
    order = sorted(range(len(messages)), key=lambda i: (i % MATCHING, i))
    server.seed(
        user,
        "INBOX",
        [messages[i] for i in order],
        flags=lambda i: "\\Seen" if i % 7 == 0 else "",
        internaldates=lambda i: DELIVERED + timedelta(minutes=i),
    )
    server.seed(user, server.mailbox_name("Trash"), [])
    server.seed(user, server.mailbox_name("Archive"), [])


def clean(found: MessageIdCounts) -> dict[str, Counter[str]]:
    return {name: +ids for name, ids in found.items() if +ids}


def matching_ids(count: int = MATCHING) -> Counter[str]:
    return Counter(f"<news-{n}@lists.example>" for n in range(count))


def shared_config(account: dict[str, Any], redis: RedisServer) -> Config:
    """Writes on, bulk writes answered inline, the state in ``redis`` (every instance's)."""
    return Config.model_validate(
        {
            "accounts": {"default": account},
            "server": {"write_enabled": True, "background_after_s": 60},
            "state": {"redis_url": redis.url},
        }
    )


def paused_once_done(monkeypatch: pytest.MonkeyPatch, at: int) -> tuple[threading.Event, threading.Event]:
    """The run held (``reached`` set) once ``at`` messages are done, until the test sets ``released``."""
    reached, released = threading.Event(), threading.Event()
    advance = Progress.advance

    def pausing(self: Progress, count: int, message: str = "") -> None:
        advance(self, count, message)
        if self._operation.done >= at and not reached.is_set():
            reached.set()
            released.wait(patient(60))

    monkeypatch.setattr(background.Progress, "advance", pausing)
    return reached, released


async def cancelled_once_reached(
    mcp: EnvelopeClient, reached: threading.Event, released: threading.Event
) -> dict[str, Any]:
    """Delete the search's matches in the background, cancel once the run is held (``reached``), let it
    go on, and poll the operation until it ended: its last view."""
    started = await mcp.ok(APPLY, {"query": QUERY, "mailbox": "INBOX", "action": "delete"})
    operation = started["background"]["operation_id"]
    assert await anyio.to_thread.run_sync(reached.wait, patient(60))
    await mcp.ok("imap_cancel_operation", {"operation_id": operation})
    released.set()

    async def finished() -> dict[str, Any] | None:
        polled = await mcp.ok("imap_get_operation", {"operation_id": operation})
        return None if polled["operation"]["state"] in {"accepted", "running"} else polled

    ended: dict[str, Any] = await eventually_async(finished, within=120)
    return ended

"""What ``ToolListChanges`` (subscriptions/tool_list.py) keeps of each user goes with their last listen
stream (``MailboxSubscriptions.follow``): a team server with many users coming and going keeps only those
still listening, and those are still told when what they would be listed changes. The streams here are
the subscriptions' own count of them, each held open by the test (no client, no server)."""

from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.subscriptions import ServerEvent, ToolsListChanged

import mail_imap_mcp.subscriptions
from mail_imap_mcp.subscriptions import MailboxSubscriptions
from mail_imap_mcp.subscriptions.tool_list import Names, Send, ToolListChanges

USERS = 500


class Streams(MailboxSubscriptions):
    """The subscriptions, whose listen streams stay open until the test ends them (a user's oldest first)."""

    def __init__(self) -> None:
        super().__init__(app=Any, bus=InMemorySubscriptionBus())  # type: ignore[arg-type]  # never used here
        self.open: dict[str, list[anyio.Event]] = {}

    async def _listen(self, ctx: Any, params: Any, user: str, uris: list[str]) -> Any:
        ended = anyio.Event()
        self.open.setdefault(user, []).append(ended)
        await ended.wait()

    async def stream(self, user: str, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        await self.listen(user, SimpleNamespace(notifications=SimpleNamespace(resource_subscriptions=None)))  # type: ignore[arg-type]

    async def end(self, user: str) -> None:
        self.open[user].pop(0).set()
        if not self.open[user]:
            del self.open[user]
        await anyio.wait_all_tasks_blocked()  # the stream's end is seen


class Listings:
    """What each user would be listed (the same for all), and the events told to each."""

    def __init__(self) -> None:
        self.names: Names = frozenset({"imap_search", "imap_rules"})
        self.told: list[tuple[str, ServerEvent]] = []
        self.queued: list[Send] = []

    async def tell(self, user: str, event: ServerEvent) -> None:
        self.told.append((user, event))

    async def deliver_all(self) -> None:
        for send in self.queued:
            await send()
        self.queued.clear()


Wired = tuple[Listings, ToolListChanges, Streams]


@pytest.fixture
def wired(monkeypatch: pytest.MonkeyPatch) -> Wired:
    """The listings, the notifications of their changes and the streams, wired as the server does; the
    request context the test passes is the caller's user."""
    monkeypatch.setattr(mail_imap_mcp.subscriptions, "user_of", lambda ctx: ctx)
    listings = Listings()
    changes = ToolListChanges(lambda user: listings.names, listings.tell, listings.queued.append)
    streams = Streams()
    streams.follow(changes.listening, changes.forget)
    return listings, changes, streams


def test_users_who_came_and_went_are_forgotten_and_one_still_listening_is_told(wired: Wired) -> None:
    """Regression: every user who ever listed their tools was kept for the life of the process."""
    listings, changes, streams = wired

    async def run() -> None:
        async with anyio.create_task_group() as group:
            await group.start(streams.stream, "stays@corp.example")
            for number in range(USERS):
                user = f"user{number}@corp.example"
                await group.start(streams.stream, user)
                await group.start(streams.stream, user)
                await streams.end(user)
                assert changes.followed == 2  # their second stream is still open
                await streams.end(user)
            assert changes.followed == 1  # the one still listening
            listings.names = frozenset({"imap_search"})  # rules unlisted: the look found no ManageSieve
            changes.check()
            await listings.deliver_all()
            assert listings.told == [("stays@corp.example", ToolsListChanged())]
            changes.check()  # told already: not again
            assert not listings.queued
            await streams.end("stays@corp.example")
        assert changes.followed == 0

    anyio.run(run)


def test_a_user_back_after_their_streams_ended_is_told_of_changes_again(wired: Wired) -> None:
    listings, changes, streams = wired

    async def run() -> None:
        async with anyio.create_task_group() as group:
            await group.start(streams.stream, "back@corp.example")
            await streams.end("back@corp.example")
            listings.names = frozenset({"imap_search"})
            changes.check()  # gone: nothing to tell, nothing kept
            assert (changes.followed, listings.queued) == (0, [])
            await group.start(streams.stream, "back@corp.example")
            listings.names = frozenset({"imap_search", "imap_rules"})
            changes.check()
            await listings.deliver_all()
            assert listings.told == [("back@corp.example", ToolsListChanged())]
            await streams.end("back@corp.example")

    anyio.run(run)


def test_a_stream_that_fails_to_open_is_forgotten_too(wired: Wired, monkeypatch: pytest.MonkeyPatch) -> None:
    _, changes, streams = wired

    async def refused(*args: Any) -> Any:
        raise RuntimeError("a mailbox that cannot be resolved")

    monkeypatch.setattr(streams, "_listen", refused)
    with pytest.raises(RuntimeError):
        anyio.run(functools.partial(streams.stream, "refused@corp.example"))
    assert changes.followed == 0

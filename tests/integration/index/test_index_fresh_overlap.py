"""A ranked page's store search runs beside the index's freshness round trip (issue 80), through a real
MCP client on Dovecot, Cyrus and Courier: begun before the server is asked what changed, taken as it is when nothing did,
and made again on what the sync stored when mail arrived or left while the server was asked (the first
answer never shown, nor its kept places)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from mail_imap_mcp.index import answer as answer_module
from mail_imap_mcp.index.engines.sqlite.store import SqliteStore
from mail_imap_mcp.index.engines.tantivy.store import TantivyStore
from mail_imap_mcp.index.freshness import Freshness, refresh
from mail_imap_mcp.services.search_meaning import RankedStore
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.index_clients import indexed_client
from tests.support.mail.mailgen import plain_message
from tests.support.servers.matrix import MatrixServer
from tests.support.shared.search_meaning import every_message_has_vectors

pytestmark = pytest.mark.anyio

SEARCH = "imap_search_messages"
RANKED = {"query": "kiwiword", "sort": "relevance", "mailbox": "*"}
#: The store of each engine whose ranked searches are watched (Tantivy's begins its own).
STORES: dict[str, type[SqliteStore]] = {"sqlite": SqliteStore, "sqlite+tantivy": TantivyStore}
#: The runs, (server, engine): each engine on Dovecot, and each server of the matrix (how it answers
#: another client's APPEND and EXPUNGE in the round trip) on one engine. INBOX only: Cyrus's second
#: namespace names no other folder differently.
RUNS = [("dovecot", "sqlite"), ("dovecot", "sqlite+tantivy"), ("cyrus", "sqlite"), ("courier", "sqlite")]


def note(number: int) -> bytes:
    return plain_message(f"note {number}", f"the text of note {number} says kiwiword\r\n")


class Watched:
    """The store's searches begun and the freshness check, in the order they happen (``events``);
    ``during``: what another client does to the mail once the check has begun (the search already under
    way), before the server is asked."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, store: type[SqliteStore]) -> None:
        self.events: list[str] = []
        self.during: Callable[[], None] | None = None
        start_search = store.start_search

        def recorded_search(self_store: SqliteStore, query: Any, **ask: Any) -> Any:
            self.events.append("search")
            return start_search(self_store, query, **ask)

        def recorded_check(*args: Any, **kwargs: Any) -> Freshness:
            self.events.append("check")
            if self.during is not None:
                self.during()
                self.during = None
            fresh = refresh(*args, **kwargs)
            self.events.append("checked")
            return fresh

        monkeypatch.setattr(store, "start_search", recorded_search)
        monkeypatch.setattr(answer_module, "refresh", recorded_check)


@pytest.fixture(params=RUNS, ids="-".join)
async def watched(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[EnvelopeClient, MatrixServer, str, Watched]]:
    name, store = request.param
    server: MatrixServer = request.getfixturevalue(name)
    user = server.new_user()
    server.seed(user, "INBOX", [note(i) for i in range(6)])
    watch = Watched(monkeypatch, STORES[store])
    # A budget no loaded machine runs out of: the check always ends in a sync where mail changed.
    async for mcp, _app, _config in indexed_client(
        server, user, tmp_path, (store, None), index_fresh_budget_ms=60_000
    ):
        yield mcp, server, user, watch


async def every_page(mcp: EnvelopeClient, limit: int) -> tuple[list[str], int]:
    """The subjects of every page of the ranked search, in order, and the first page's total."""
    first = await mcp.ok(SEARCH, {**RANKED, "limit": limit})
    subjects, cursor = [m["subject"] for m in first["messages"]], first.get("next_cursor")
    while cursor:
        page = await mcp.ok(SEARCH, {**RANKED, "cursor": cursor})
        subjects += [m["subject"] for m in page["messages"]]
        cursor = page.get("next_cursor")
    return subjects, int(first["total"])


async def test_the_store_searches_while_the_server_is_asked_and_once_when_nothing_changed(
    watched: tuple[EnvelopeClient, MatrixServer, str, Watched],
) -> None:
    mcp, _server, _user, watch = watched
    await mcp.ok(SEARCH, {**RANKED, "limit": 50})  # whatever the background sync left is caught up
    watch.events.clear()
    page = await mcp.ok(SEARCH, {**RANKED, "limit": 50})
    assert {m["subject"] for m in page["messages"]} == {f"note {i}" for i in range(6)}
    # Searched before the round trip was asked for, not again after it: the page costs the longer of
    # the two, not their sum.
    assert watch.events == ["search", "check", "checked"]


@pytest.mark.parametrize("change", ["arrives", "leaves"])
async def test_mail_that_changes_while_the_server_is_asked_is_answered_by_the_synced_index(
    watched: tuple[EnvelopeClient, MatrixServer, str, Watched], change: str
) -> None:
    mcp, server, user, watch = watched
    await mcp.ok(SEARCH, {**RANKED, "limit": 50})

    def another_client() -> None:
        with server.connect(user, tls=False, starttls=False) as other:
            if change == "arrives":
                other.append("INBOX", note(6))
                return
            other.select_folder("INBOX")
            other.delete_messages(other.search(["SUBJECT", "note 2"]))
            other.expunge()

    notes = {f"note {i}" for i in range(6)}
    expected = notes | {"note 6"} if change == "arrives" else notes - {"note 2"}
    watch.events.clear()
    watch.during = another_client
    # Pages of 2 go on from the places the first page kept: those of the index it answered from.
    subjects, total = await every_page(mcp, 2)
    assert total == len(expected)
    assert sorted(subjects) == sorted(expected)
    # The search begun before the check was dropped: the first page searched the synced index again.
    assert watch.events[:4] == ["search", "check", "checked", "search"]


class Taken:
    """A search begun before the check (:class:`RankedStore`'s), what became of it said in ``events``:
    ``taken`` as it was, or ``cancelled`` for a search made again."""

    def __init__(self, pending: Any, events: list[str]) -> None:
        self.pending, self.events = pending, events

    def result(self) -> Any:
        self.events.append("taken")
        return self.pending.result()

    def cancel(self) -> None:
        self.events.append("cancelled")
        self.pending.cancel()


@pytest.mark.parametrize("imap_server", ["cyrus"], indirect=True)
async def test_a_search_by_meaning_of_every_mailbox_is_taken_as_begun_where_nothing_changed(
    imap_server: MatrixServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On Cyrus, whose accounts have Trash and Junk, which a search of every mailbox leaves out: the search
    by meaning begun before the check covers what the last listing said it would, so it is taken as it
    is, not made again (a copy of the account's indexer ranks it, which keeps that listing for the next)."""
    user = imap_server.new_user()
    imap_server.seed(user, "INBOX", [note(i) for i in range(6)])
    events: list[str] = []
    start = RankedStore.start_search
    monkeypatch.setattr(
        RankedStore, "start_search", lambda self, query, **ask: Taken(start(self, query, **ask), events)
    )
    async for mcp, _app, _config in indexed_client(imap_server, user, tmp_path):
        await every_message_has_vectors(mcp)
        await mcp.ok(SEARCH, {"about": "the notes", "mailbox": "*"})
        events.clear()
        page = await mcp.ok(SEARCH, {"about": "the notes", "mailbox": "*"})
        assert page["status"] == "ok" and len(page["messages"]) == 6, page
        assert events == ["taken"]

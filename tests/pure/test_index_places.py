"""The places a first page of the index keeps, found after the page is handed over (issue 51 item 3): a
later page that comes first waits for them, here by the store's future, on another instance by the mark
the key holds in the shared state meanwhile; places that could not be found leave later pages to their
offsets."""

from __future__ import annotations

import threading
import zlib
from concurrent.futures import Future

import pytest

import mail_imap_mcp.services.index_places as index_places
from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import Config
from mail_imap_mcp.index.store import Place, done
from mail_imap_mcp.services.index_places import keep_places, kept_places
from mail_imap_mcp.state.store import MemoryStore

PLACES: list[Place] = [Place("INBOX", 7, 1_700_000_000, 420), Place("Archive", 3), Place("INBOX", 2)]
ACCOUNTS = {"a": {"host": "imap.example.org", "username": "u", "password_env": "X"}}


class SharedMemory(MemoryStore):
    """A memory store that says other processes see it (as Redis does)."""

    shared = True


def app(store: MemoryStore | None = None) -> AppContext:
    context = AppContext.from_config(Config.model_validate({"accounts": ACCOUNTS}))
    if store is not None:
        context.store = store
    return context


def later(
    future: Future[list[Place]], outcome: list[Place] | Exception, seconds: float = 0.2
) -> threading.Timer:
    """Resolve ``future`` after ``seconds`` on a thread of its own: once it has ended, the future's
    callbacks (the state written) have run too; a waiter on the future is woken before them."""

    def resolve() -> None:
        if isinstance(outcome, Exception):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)

    timer = threading.Timer(seconds, resolve)
    timer.start()
    return timer


def test_places_found_with_the_page_are_kept_at_once() -> None:
    context = app()
    key = keep_places(context, "a", done(PLACES))
    assert key and kept_places(context, "a", key) == PLACES


def test_a_later_page_on_this_process_waits_for_places_still_being_found() -> None:
    context = app()
    finding: Future[list[Place]] = Future()
    key = keep_places(context, "a", finding)
    assert key
    later(finding, PLACES)
    assert kept_places(context, "a", key) == PLACES
    assert kept_places(context, "a", key) == PLACES  # and from the state once found


def test_a_later_page_on_another_instance_waits_for_the_state_to_hold_them() -> None:
    state = SharedMemory()
    first, other = app(state), app(state)
    finding: Future[list[Place]] = Future()
    key = keep_places(first, "a", finding)
    later(finding, PLACES)
    with index_places._finding_guard:  # as another process sees it: no future of its own
        own = index_places._finding.copy()
        index_places._finding.clear()
    try:
        assert kept_places(other, "a", key) == PLACES
    finally:
        with index_places._finding_guard:
            index_places._finding.update({k: v for k, v in own.items() if not v.done()})


def test_places_that_could_not_be_found_leave_later_pages_to_their_offsets() -> None:
    state = SharedMemory()
    context = app(state)
    finding: Future[list[Place]] = Future()
    key = keep_places(context, "a", finding)
    resolving = later(finding, RuntimeError("the index was closed"), 0.05)
    assert kept_places(context, "a", key) is None
    # The state is cleared by the future's callback, which runs after the waiter above was woken (1 in
    # about 8 pure-tier runs read it before).
    resolving.join()
    assert state.get(context.caller.key("places", "a", str(key))) is None


def test_the_places_of_one_search_asked_again_are_packed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The store hands a search asked again on the same snapshot the places it found for it before (the
    same future): each first page keeps them under a key of its own, packed once, not again in its
    handler, on the answer's way."""
    packings: list[bytes] = []
    compress = zlib.compress

    def counted(data: bytes, /, level: int = -1, wbits: int = 15) -> bytes:
        packings.append(data)
        return compress(data, level, wbits)

    monkeypatch.setattr(zlib, "compress", counted)
    context, found = app(), done(PLACES)
    keys = [keep_places(context, "a", found) for _ in range(3)]
    assert len(set(keys)) == 3 and all(kept_places(context, "a", key) == PLACES for key in keys)
    assert len(packings) == 1

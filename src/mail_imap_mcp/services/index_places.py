"""The places a first page of the local index kept for its later pages, in the shared state.

A first page keeps where its first :data:`KEPT_PLACES` matches are, in its order (folder and UID, and
each one's INTERNALDATE and size); a later page lists the next of them that the query still matches, a
message moved meanwhile at its new place (found by its INTERNALDATE and size, which a move keeps). So the pages of one search are exact
for the messages the first page found, in its order, whatever arrives or is ranked otherwise meanwhile
(a rank follows word counts over every message: mail that does not match moves it). Past them, and
where the state cannot be reached or has forgotten them, pages go on by their offset.

The store finds the places after it hands the first page over (on the page's own snapshot: they are
those the page was ranked among), so the first page does not wait for them: its cursor carries their
key at once, and they are put in the state when found. A later page that comes first waits for them
(:data:`PLACES_WAIT_S`): on this process by the store's own future, on another by the mark the key holds
in the shared state meanwhile. An index engine that pages by key keeps none (:class:`~mail_imap_mcp.index.store.Keyed`).
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
import weakref
import zlib
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout

from mail_imap_mcp.app.mailbox_lists import MAILBOX_LIST_TTL_S
from mail_imap_mcp.call import Call
from mail_imap_mcp.index.store import Place
from mail_imap_mcp.state import StateUnavailable

log = logging.getLogger(__name__)

#: Matches whose places a first page keeps (a few bytes each in the shared state).
KEPT_PLACES = 2_000


#: How long a later page waits for the places its first page is still finding, at most.
PLACES_WAIT_S = 5.0
#: What the state holds under a key whose places are still being found (by another process).
_FINDING = b"finding"
#: Places still being found by this process, by their key in the state.
_finding: dict[str, Future[list[Place]]] = {}
_finding_guard = threading.Lock()


def keep_places(app: Call, account_id: str, places: Future[list[Place]]) -> int:
    """Keep ``places`` (found now, or later by the store) for the search's later pages; the key their
    cursor carries (0: not kept)."""
    key = secrets.randbits(31) | 1
    state_key = app.caller.key("places", account_id, str(key))
    if places.done():
        return key if _put(app, state_key, places) else 0
    try:
        if app.store.shared:  # a later page on another instance waits for them
            app.store.set(state_key, _FINDING, MAILBOX_LIST_TTL_S)
    except StateUnavailable as exc:  # later pages go on by their offset, and say when mail changed
        log.warning("a search's places not kept in the shared state: %s", exc.detail)
        return 0
    with _finding_guard:
        _finding[state_key] = places

    def found(done: Future[list[Place]]) -> None:
        _put(app, state_key, done)
        with _finding_guard:
            _finding.pop(state_key, None)

    places.add_done_callback(found)
    return key


def _put(app: Call, state_key: str, places: Future[list[Place]]) -> bool:
    """Put the places found in the state under ``state_key``; whether they are there."""
    packed = _packed(places)
    try:
        if packed is None:
            app.store.delete(state_key)
            return False
        app.store.set(state_key, packed, MAILBOX_LIST_TTL_S)
    except StateUnavailable as exc:
        log.warning("a search's places not kept in the shared state: %s", exc.detail)
        return False
    return True


#: The places packed for the state, by the store's future of them (None: not found). The store hands the
#: same search on the same snapshot the same future (an agent asking twice, first pages back to back):
#: its 2,000 places are packed once, not again in the handler of each first page (about 5 ms of processor
#: time each, most of it zlib's default level, which saves a tenth of the bytes over its fastest).
_packings: weakref.WeakKeyDictionary[Future[list[Place]], bytes | None] = weakref.WeakKeyDictionary()
_packings_guard = threading.Lock()


def _packed(places: Future[list[Place]]) -> bytes | None:
    with _packings_guard:
        if places in _packings:
            return _packings[places]
    try:
        found = places.result()
    except Exception as exc:  # the store could not find them (a closed index): later pages go by offset
        log.warning("a search's places not found: %s", exc)
        found = None
    packed = None
    if found is not None:
        folders = list(dict.fromkeys(place.folder for place in found))
        at = {name: index for index, name in enumerate(folders)}
        rows = [[at[place.folder], place.uid, place.arrival, place.size] for place in found]
        packed = zlib.compress(json.dumps([folders, rows]).encode(), 1)
    with _packings_guard:
        _packings[places] = packed
    return packed


def kept_places(app: Call, account_id: str, key: int) -> list[Place] | None:
    """The places a first page kept under ``key`` (waiting for them while they are being found); None
    when they are not known (any more)."""
    if not key:
        return None
    state_key = app.caller.key("places", account_id, str(key))
    with _finding_guard:
        finding = _finding.get(state_key)
    if finding is not None:
        try:
            return finding.result(timeout=PLACES_WAIT_S)
        except (FutureTimeout, Exception) as exc:
            log.warning("a search's places not found in time: %s", exc)
            return None
    deadline = time.monotonic() + PLACES_WAIT_S
    while True:
        try:
            packed = app.store.get(state_key)
        except StateUnavailable as exc:
            log.warning("a search's places not read from the shared state: %s", exc.detail)
            return None
        if packed != _FINDING:
            break
        if time.monotonic() > deadline:
            return None
        time.sleep(0.01)
    if packed is None:
        return None
    folders, rows = json.loads(zlib.decompress(packed))
    return [Place(folders[row[0]], *row[1:]) for row in rows]

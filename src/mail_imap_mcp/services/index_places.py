"""The places a first page of the local index kept for its later pages, in the shared state.

A first page keeps where its first :data:`KEPT_PLACES` matches are, in its order (folder and UID); a
later page lists the next of them that the query still matches. So the pages of one search are exact
for the messages the first page found, in its order, whatever arrives or is ranked otherwise meanwhile
(a rank follows word counts over every message: mail that does not match moves it). Past them, and
where the state cannot be reached or has forgotten them, pages go on by their offset.
"""

from __future__ import annotations

import json
import logging
import secrets
import zlib
from collections.abc import Sequence

from mail_imap_mcp.app import MAILBOX_LIST_TTL_S, AppContext
from mail_imap_mcp.index.store import Place
from mail_imap_mcp.state import StateUnavailable

log = logging.getLogger(__name__)

#: Matches whose places a first page keeps (a few bytes each in the shared state).
KEPT_PLACES = 2_000


def keep_places(app: AppContext, account_id: str, places: Sequence[Place]) -> int:
    """Keep ``places`` for the search's later pages; the key their cursor carries (0: not kept)."""
    folders = list(dict.fromkeys(name for name, _ in places))
    at = {name: index for index, name in enumerate(folders)}
    packed = zlib.compress(json.dumps([folders, [[at[name], uid] for name, uid in places]]).encode())
    key = secrets.randbits(31) | 1
    try:
        app.store.set(app.caller.key("places", account_id, str(key)), packed, MAILBOX_LIST_TTL_S)
    except StateUnavailable as exc:  # later pages go on by their offset, and say when mail changed
        log.warning("a search's places not kept in the shared state: %s", exc.detail)
        return 0
    return key


def kept_places(app: AppContext, account_id: str, key: int) -> list[Place] | None:
    """The places a first page kept under ``key``; None when they are not known (any more)."""
    if not key:
        return None
    try:
        packed = app.store.get(app.caller.key("places", account_id, str(key)))
    except StateUnavailable as exc:
        log.warning("a search's places not read from the shared state: %s", exc.detail)
        return None
    if packed is None:
        return None
    folders, rows = json.loads(zlib.decompress(packed))
    return [(folders[index], uid) for index, uid in rows]

"""State several server instances share: one small :class:`Store` interface, kept in this process
(:class:`MemoryStore`, the default) or in Redis (``[state] redis_url``, :mod:`.redis`).

What lives here: confirmation tokens already used, background operations (status, cancel, result),
the signing secret of cursors and tokens, and the mailbox lists of position cursors, each keyed per
user (:func:`user_key`) and with a time to live. A request's caller is a :class:`Caller`
(:mod:`.caller`).
"""

from __future__ import annotations

from mail_imap_mcp.state.caller import ANONYMOUS_CALLER, Caller, fold_user
from mail_imap_mcp.state.principal import (
    ANONYMOUS,
    USER_AS_GIVEN_CLAIM,
    USER_CLAIM,
    user_as_given,
    user_key,
    user_of,
    user_tag,
)
from mail_imap_mcp.state.store import (
    MemoryStore,
    StateUnavailable,
    Store,
    Subscription,
    UsedMarkersFull,
    shared_secret,
)

__all__ = [
    "ANONYMOUS",
    "ANONYMOUS_CALLER",
    "USER_AS_GIVEN_CLAIM",
    "USER_CLAIM",
    "Caller",
    "MemoryStore",
    "StateUnavailable",
    "Store",
    "Subscription",
    "UsedMarkersFull",
    "fold_user",
    "open_store",
    "shared_secret",
    "user_as_given",
    "user_key",
    "user_of",
    "user_tag",
]


def open_store(redis_url: str | None) -> Store:
    """The store of ``[state]``: Redis at ``redis_url``, else this process's memory."""
    if redis_url is None:
        return MemoryStore()
    from mail_imap_mcp.state.redis import RedisStore

    return RedisStore(redis_url)

"""State several server instances share: one small :class:`Store` interface, kept in this process
(:class:`MemoryStore`, the default) or in Redis (``[state] redis_url``, :mod:`.redis`); what must outlive
the process (a send's record) in Redis, else in a file of the state directory every process of the
machine shares (:class:`FileStore`, :func:`lasting_store`).

What lives here: confirmation tokens already used, background operations (status, cancel, result),
the signing secret of cursors and tokens, and the mailbox lists of position cursors, each keyed per
user (:func:`user_key`) and with a time to live. A request's caller is a :class:`Caller`
(:mod:`.caller`).
"""

from __future__ import annotations

from pathlib import Path

from mail_imap_mcp.state.caller import ANONYMOUS_CALLER, Caller, fold_user
from mail_imap_mcp.state.file_store import FILE_NAME, FileStore
from mail_imap_mcp.state.request_user import (
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
    "FileStore",
    "MemoryStore",
    "StateUnavailable",
    "Store",
    "Subscription",
    "UsedMarkersFull",
    "fold_user",
    "lasting_store",
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


def lasting_store(store: Store, state_dir: Path) -> Store:
    """Where records that must outlive the process and reach every process live: ``store`` where every
    instance shares it (Redis), else the file of ``state_dir`` (opened on first use)."""
    return store if store.shared else FileStore(state_dir.expanduser() / FILE_NAME)

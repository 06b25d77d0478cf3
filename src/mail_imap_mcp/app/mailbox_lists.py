"""The mailbox list cache: the mailboxes a position cursor's first page listed, kept in the shared store
for its next pages (any instance's), per user; where the store cannot be reached, a page lists again."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

from mail_imap_mcp.state import Caller, StateUnavailable, Store

log = logging.getLogger("mail_imap_mcp")

#: How long a position cursor's mailbox list is kept for its next pages (then they list again).
MAILBOX_LIST_TTL_S = 3600.0


def kept_mailbox_list(store: Store, caller: Caller, account_id: str, digest: str) -> tuple[str, ...] | None:
    """The mailbox list a position cursor's first page made (``digest``), where any instance sharing
    ``store`` made it for ``caller``; None when none did (the next page lists again)."""
    try:
        raw = store.get(caller.key("mailboxes", account_id, digest))
    except StateUnavailable as exc:  # the page lists the mailboxes again: a read needs no store
        log.warning("mailbox list not read from the shared state: %s", exc.detail)
        return None
    return None if raw is None else tuple(json.loads(raw))


def keep_mailbox_list(
    store: Store, caller: Caller, account_id: str, digest: str, names: Sequence[str]
) -> None:
    """Keep a first page's mailbox list for its cursor's next pages (:data:`MAILBOX_LIST_TTL_S`)."""
    try:
        store.set(
            caller.key("mailboxes", account_id, digest),
            json.dumps(list(names), ensure_ascii=False).encode(),
            MAILBOX_LIST_TTL_S,
        )
    except StateUnavailable as exc:
        log.warning("mailbox list not kept in the shared state: %s", exc.detail)

"""The change announcement: a write tells every instance sharing the store which account it changed, so
that their listen streams of its mailboxes hear of it at once (``subscriptions/``)."""

from __future__ import annotations

import json
import logging

from mail_imap_mcp.config import Config
from mail_imap_mcp.state import Caller, StateUnavailable, Store

log = logging.getLogger("mail_imap_mcp")

#: The store's channel on which writes announce the accounts they changed.
CHANGES_CHANNEL = "mim:changes"


def announce(store: Store, config: Config, caller: Caller, account_id: str) -> None:
    """Publish that a write of ``caller`` changed mail of ``account_id`` (of ``config``, the accounts as
    the caller reaches them); nothing without a shared store (the watches of this process see it)."""
    if not store.shared or account_id not in config.accounts:
        return
    mine = config.accounts[account_id].per_user
    event = {"account": account_id, "user": caller.tag if mine else "-"}
    try:
        store.publish(CHANGES_CHANNEL, json.dumps(event).encode())
    except StateUnavailable as exc:  # the watches still see it, later
        log.warning("change of account %s not announced: %s", account_id, exc.detail)

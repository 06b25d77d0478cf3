"""A page of the index, fresh: ranked while the server is asked whether the index is current.

:func:`fresh_page` starts the store's search, then runs the freshness round trip
(:func:`~mail_imap_mcp.index.freshness.refresh`) while the store works; when the round trip synced no
folder (the common case) the page is taken as it is, else it is searched again on what the sync stored.
So a search costs the longer of the two, not their sum.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mail_imap_mcp.imap.mailboxes import MailboxInfo
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.index.freshness import Freshness, refresh
from mail_imap_mcp.index.store import CompiledQuery, HitPage, Order
from mail_imap_mcp.index.sync import Indexer


@dataclass
class FreshPage:
    """The page, the folders it covers, and what the freshness check found."""

    page: HitPage
    folders: list[str]
    fresh: Freshness


def fresh_page(
    session: ImapSession,
    indexer: Indexer,
    query: CompiledQuery,
    *,
    folders: Sequence[str] | None,
    order: Order,
    limit: int,
    offset: int,
    deadline: float,
    flags_tested: bool,
    scope: Callable[[list[MailboxInfo]], list[str]] | None = None,
) -> FreshPage:
    """The page of ``query`` over ``folders`` (None: every folder ``scope`` picks from the listing, as
    :func:`~mail_imap_mcp.index.freshness.refresh` does), brought up to date until ``deadline``."""
    store = indexer.store
    with indexer.lock:
        before = store.folders()
        guess = list(before) if folders is None else list(folders)
        early = store.start_search(query, folders=guess, order=order, limit=limit, offset=offset)
        try:
            fresh = refresh(
                session, indexer, folders, deadline=deadline, flags_tested=flags_tested, scope=scope
            )
        except BaseException:
            early.cancel()
            raise
        covered = guess
        if folders is None:
            listed = fresh.boxes or []
            covered = scope(listed) if scope is not None else [box.name for box in listed]
        # A sync may change flags alone, which no folder state shows (a folder without MODSEQ): any
        # folder synced means searching again.
        if not fresh.synced and store.folders() == before and set(covered) >= set(guess):
            return FreshPage(early.result(), covered, fresh)
        early.cancel()
        page = store.search(query, folders=covered, order=order, limit=limit, offset=offset)
        return FreshPage(page, covered, fresh)

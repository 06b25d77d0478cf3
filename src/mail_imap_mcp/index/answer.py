"""A page of the index, fresh: ranked while the server is asked whether the index is current.

:func:`fresh_page` starts the store's search, then runs the freshness round trip
(:func:`~mail_imap_mcp.index.freshness.refresh`) while the store works; when the round trip changed no
folder of the index (the common case) the page is taken as it is, else it is searched again on what the
sync stored.
So a search costs the longer of the two, not their sum.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from mail_imap_mcp.imap.mailboxes import list_mailboxes
from mail_imap_mcp.imap.pages import imap_session
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.index.flag_check import FlagTest
from mail_imap_mcp.index.freshness import Freshness, refresh
from mail_imap_mcp.index.store import HitPage, Order, PageAsk, Place
from mail_imap_mcp.index.sync import Indexer, plan_of
from mail_imap_mcp.mail.directory import MailboxDirectory
from mail_imap_mcp.mail.mailboxes import MailboxInfo
from mail_imap_mcp.mail.pages import PageReads
from mail_imap_mcp.query.tree import Query


@dataclass
class FreshPage:
    """The page, the folders it covers, and what the freshness check found."""

    page: HitPage
    folders: list[str]
    fresh: Freshness


def fresh_page(
    reads: PageReads,
    indexer: Indexer,
    query: Query,
    *,
    folders: Sequence[str] | None,
    order: Order,
    limit: int,
    offset: int,
    deadline: float,
    flags_tested: bool,
    scope: Callable[[list[MailboxInfo]], list[str]] | None = None,
    keep: int = 0,
    places: Sequence[Place] | None = None,
    after: bytes | None = None,
    flag_tests: Sequence[FlagTest] = (),
    also: Sequence[str] = (),
) -> FreshPage:
    """The page of ``query`` over ``folders`` (None: every folder ``scope`` picks from the listing, as
    :func:`~mail_imap_mcp.index.freshness.refresh` does), brought up to date until ``deadline``;
    ``flag_tests`` as :func:`~mail_imap_mcp.index.freshness.refresh` takes them, ``keep``, ``places`` and ``after`` as
    :meth:`~mail_imap_mcp.index.store.IndexStore.search` takes them; ``also``: folders brought up to date
    though not searched (the refresh's). ``reads``: a search page's run on
    the account, whose IMAP session the sync runs on."""
    session = imap_session(reads)
    store = indexer.store

    def ask(searched: Sequence[str]) -> PageAsk:
        return PageAsk(
            folders=searched, order=order, limit=limit, offset=offset, keep=keep, places=places, after=after
        )

    if not indexer.lock.acquire(timeout=max(deadline - time.monotonic(), 0)):
        return _as_it_is(session, indexer, query, folders, scope, ask, also)
    try:
        before = store.folders()
        guess = _guess(indexer, folders, scope, before)
        early = store.start_search(query, **ask(guess))
        try:
            fresh = refresh(
                session,
                indexer,
                folders,
                deadline=deadline,
                flags_tested=flags_tested,
                scope=scope,
                flag_tests=flag_tests,
                also=also,
            )
        except BaseException:
            early.cancel()
            raise
        covered = guess
        if folders is None:
            listed = fresh.boxes or []
            covered = scope(listed) if scope is not None else [box.name for box in listed]
        covered = [name for name in covered if name not in fresh.gone]
        # A sync may change flags alone, which no folder state shows (a folder without MODSEQ): any
        # folder whose copy a sync changed means searching again; the folders searched early must be
        # those covered, as far as the index holds them.
        if (
            not fresh.altered
            and store.folders() == before
            and set(covered) & before.keys() == set(guess) & before.keys()
        ):
            return FreshPage(early.result(), covered, fresh)
        early.cancel()
        page = store.search(query, **ask(covered))
        return FreshPage(page, covered, fresh)
    finally:
        indexer.lock.release()


def _guess(
    indexer: Indexer,
    folders: Sequence[str] | None,
    scope: Callable[[list[MailboxInfo]], list[str]] | None,
    stored: Mapping[str, object],
) -> list[str]:
    """The folders a page is searched in before the check says which it covers: ``folders``, else those
    ``scope`` picks from the last listing (a search of every mailbox leaves out Trash and Junk), else
    every folder the index holds."""
    if folders is not None:
        return list(folders)
    if scope is not None and indexer.listed:
        return scope(indexer.listed)
    return list(stored)


def _as_it_is(
    session: ImapSession,
    indexer: Indexer,
    query: Query,
    folders: Sequence[str] | None,
    scope: Callable[[list[MailboxInfo]], list[str]] | None,
    ask: Callable[[Sequence[str]], PageAsk],
    also: Sequence[str],
) -> FreshPage:
    """The page from the index as it is, every folder searched said to be possibly behind (and ``also``
    not known fresh): another sync
    held the index's lock until the deadline, so the folders' state was not asked (a search of every
    mailbox still lists them, one round trip, to leave out those it does not cover: Trash, Junk)."""
    fresh = Freshness(held_by_sync=True)
    if folders is None:
        fresh.boxes = list_mailboxes(session)
        covered = (
            scope(fresh.boxes)
            if scope is not None
            else plan_of(session, MailboxDirectory(fresh.boxes, {})).always
        )
    else:
        covered = list(folders)
    fresh.stale = dict.fromkeys(covered, 0)
    fresh.unsure = list(also)
    page = indexer.store.search(query, **ask(covered))
    return FreshPage(page, covered, fresh)

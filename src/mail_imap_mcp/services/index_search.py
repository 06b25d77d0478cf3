"""A page of imap_search_messages answered by the local index: ranked (or newest first), fresh.

Asked first for every search with a query (:func:`index_page`); it answers when the account keeps an
index, the first build is done, and the query is one the index can answer (:mod:`.search_backend`
decides). Before answering, :func:`~mail_imap_mcp.index.freshness.refresh` asks the server about every
folder searched in one round trip and syncs the ones that changed, within ``index_fresh_budget_ms``;
what is left behind is said in the page's warnings. The page's messages are read from the server as
any page's (the same summaries and message ids, flags as they are now); each snippet shows where the
query's words are in what the sender wrote. When the index does not answer, the caller asks the server
and adds :attr:`IndexAnswer.warnings` (a build still running, the index unavailable).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

from mail_imap_mcp.call import Call
from mail_imap_mcp.index.freshness import Freshness
from mail_imap_mcp.index.snippets import matched_words
from mail_imap_mcp.index.store import Keyed
from mail_imap_mcp.index.sync import Indexer
from mail_imap_mcp.mail.cursors import DIGEST_CHARS, CursorMismatch, IndexCursor
from mail_imap_mcp.mail.freshness import CHECKED_RECENTLY_S, RECHECK_S
from mail_imap_mcp.mail.ids import user_tag
from mail_imap_mcp.mail.records import SearchPage
from mail_imap_mcp.query import Query
from mail_imap_mcp.services.index_places import keep_places, kept_places
from mail_imap_mcp.services.index_read import IndexPlan, IndexRead, read_index_page
from mail_imap_mcp.services.search_args import ALL_MAILBOXES, SearchArgs
from mail_imap_mcp.services.search_backend import IndexChoice, choose_index


@dataclass
class IndexAnswer:
    """The index's page (None: the server answers) and what the page must say either way."""

    page: SearchPage | None
    warnings: list[str] = field(default_factory=list)
    #: The argument the index cannot answer as asked, and why (:attr:`.index_read.IndexRead.unanswerable`).
    unanswerable: tuple[str, str] | None = None
    #: The folders whose messages the page's freshness check did not find to be the server's (left
    #: behind, not asked about): searched or not (:attr:`~mail_imap_mcp.index.freshness.Freshness.unsure`).
    unsure: frozenset[str] = frozenset()
    #: Why the index did not answer, as a clause (None: it answered, or nothing was asked of it).
    why_not: str | None = None


def _digest(args: SearchArgs, filter_digest: str, order: str) -> str:
    spec = json.dumps(["index", filter_digest, args.mailbox, args.mailboxes, order], ensure_ascii=False)
    return hashlib.sha256(spec.encode()).hexdigest()[:DIGEST_CHARS]


def index_page(
    app: Call,
    args: SearchArgs,
    search: Query,
    filter_digest: str,
    *,
    order: Literal["relevance", "date", "arrival"] | None,
    adds_roles: tuple[str, ...] = (),
    ranked_by: Callable[[Indexer], Indexer] | None = None,
    also_fresh: tuple[str, ...] = (),
) -> IndexAnswer:
    """The page of ``args`` from the index, ``order`` (None: no query, the server answers): its plan, the
    store's answer with the summaries of its hits (:func:`~.index_read.read_index_page`), and the page.
    ``ranked_by``: the index whose searches rank otherwise (by meaning, :mod:`.search_meaning`);
    ``also_fresh``: folders brought up to date though not searched (the mailbox of the message it ranks by)."""
    plan = _plan(app, args, search, filter_digest, order, adds_roles)
    if isinstance(plan, IndexAnswer):
        return plan
    if ranked_by is not None:
        plan.choice = replace(plan.choice, indexer=ranked_by(plan.choice.indexer))
    plan.also_fresh = also_fresh
    read = app.mail(plan.account_id).pages(lambda reads: read_index_page(reads, plan, search))
    if read.declined is not None:
        if plan.cursor is not None:
            raise CursorMismatch()
        declined = read.declined
        return IndexAnswer(
            None, [*plan.choice.warnings, *declined.warnings], read.unanswerable, why_not=declined.why
        )
    return IndexAnswer(_page(app, plan, read), unsure=frozenset([*read.fresh.stale, *read.fresh.unsure]))


def _plan(
    app: Call,
    args: SearchArgs,
    search: Query,
    filter_digest: str,
    order: Literal["relevance", "date", "arrival"] | None,
    adds_roles: tuple[str, ...],
) -> IndexPlan | IndexAnswer:
    """What the index is asked for this page; the answer without it where the server answers (a page it
    began, no index to answer: :class:`CursorMismatch` where the index answered the first page)."""
    account_id = app.resolve_account(args.account_id)  # known: the search reached its mail first
    cursor = IndexCursor.decode(args.cursor, app.caller.user) if args.cursor else None
    if args.cursor and cursor is None:
        return IndexAnswer(None)  # a page the server began (before the index was ready): it goes on
    choice = choose_index(
        app, account_id, search, order if order is not None or cursor is None else "relevance"
    )
    if not isinstance(choice, IndexChoice):
        if cursor is not None:
            raise CursorMismatch()  # the index answered the first page and no longer can: start again
        return IndexAnswer(None, choice.warnings, why_not=choice.why)
    digest = _digest(args, filter_digest, choice.order)
    if cursor is not None and (cursor.account_id, cursor.digest) != (account_id, digest):
        raise CursorMismatch()
    offset = cursor.returned if cursor else 0
    # A later page lists the places its first page kept, in their order (item 16 of issue 47), or goes
    # on by key where the engine pages so (the cursor carries the engine's own place).
    resume = cursor.resume if cursor is not None and cursor.resume else None
    kept = kept_places(app, account_id, cursor.places) if cursor is not None and resume is None else None
    limit = min(args.limit, app.config.server.max_search_limit)
    listed = kept[offset : offset + limit] if kept is not None and offset < len(kept) else None
    # A place gone is looked for at a new place (a move): never one the first page kept elsewhere.
    elsewhere = {place[:2] for place in kept or ()} - {place[:2] for place in listed or ()}
    names = list(dict.fromkeys(args.mailboxes if args.mailboxes is not None else [args.mailbox]))
    server = app.config.server
    return IndexPlan(
        args=args,
        account_id=account_id,
        account=app.config.accounts[account_id],
        choice=choice,
        cursor=cursor,
        digest=digest,
        limit=limit,
        snippet_chars=min(args.snippet_chars, server.max_snippet_chars),
        offset=offset,
        resume=resume,
        listed=listed,
        elsewhere=elsewhere,
        budget_s=server.index_fresh_budget_ms / 1000,
        named=[name for name in names if name != ALL_MAILBOXES],
        everything=ALL_MAILBOXES in names,
        adds_roles=adds_roles,
        words=matched_words(search),
        tag=user_tag(app.caller, account_id),
        raw_window_bytes=server.max_text_part_bytes,
    )


def _page(app: Call, plan: IndexPlan, read: IndexRead) -> SearchPage:
    """The page of the index's answer: its cursor (by key, by the places the first page kept, or by
    offset) and what it must say of mail that changed since its first page or is not yet indexed."""
    cursor, offset, listed, choice = plan.cursor, plan.offset, plan.listed, plan.choice
    warnings = [*choice.warnings, *_stale_words(read.fresh), *_push_words(read.fresh)]
    next_cursor = None
    if read.keyed is not None:
        next_cursor = _keyed_cursor(app, read, read.keyed, cursor, plan.account_id, plan.digest, offset)
        if cursor is not None and (read.keyed.newer or read.total != cursor.total):
            now = read.total + read.keyed.newer
            warnings.append(_KEYED_ORDER.format(then=cursor.total, now=now, newer=read.keyed.newer))
        if cursor is not None:
            read.total = cursor.total
    elif listed is not None and cursor is not None:
        returned = offset + len(listed)
        if returned < cursor.total:
            next_cursor = replace(cursor, returned=returned).encode(app.caller.user)
        if (cursor.total, cursor.mark) != (read.total, read.mark):
            warnings.append(_KEPT_ORDER.format(then=cursor.total, now=read.total))
        read.total = cursor.total
    else:
        returned = offset + len(read.hits)
        if returned < read.total and read.hits:
            places = keep_places(app, plan.account_id, read.places) if cursor is None and read.places else 0
            key = cursor.places if cursor is not None else places
            after = IndexCursor(plan.account_id, plan.digest, read.total, returned, read.mark, key)
            next_cursor = after.encode(app.caller.user)
    if listed is None and read.keyed is None and cursor is not None and cursor.total != read.total:
        warnings.append(
            f"The matches changed since the first page of this search ({cursor.total:,} then, {read.total:,} "
            "now: the index caught up with the server or another client changed mail), so this page may "
            "repeat or skip a message; search again without the cursor for a consistent list."
        )
    if read.unweighted:
        warnings.append(
            f"Every word of this query is in more than half the messages, which relevance ranking weighs at "
            f"nothing: its {read.total:,} matches are listed newest first. Add a rarer word to rank them."
        )
    if (
        listed is None
        and read.keyed is None
        and cursor is not None
        and cursor.total == read.total
        and cursor.mark
        and cursor.mark != read.mark
        and choice.order == "relevance"
    ):
        warnings.append(
            "The index took in changes since the first page of this search (same number of matches): "
            "ranks follow word counts over every message, so this page may repeat or skip a message; "
            "search again without the cursor for a consistent list."
        )
    args = plan.args
    page = SearchPage(
        account_id=plan.account_id,
        label=args.mailbox if args.mailboxes is None else ", ".join(args.mailboxes),
        strict=args.mailboxes is None and args.mailbox != ALL_MAILBOXES,
        mailboxes=read.folders,
        total=read.total,
        returned_before=offset,
        attempted=len(read.hits),
        messages=read.messages,
        next_cursor=next_cursor,
        listed_issues=[],
        failed=list(read.fresh.gone.items()),
        fetch_issues=read.issues,
        windowed=False,
    )
    page.warnings = warnings
    page.ranked = choice.order == "relevance" and not read.unweighted
    page.total_approximate = bool(read.fresh.stale)
    return page


_KEPT_ORDER = (
    "Mail changed since the first page of this search ({then:,} matches then, {now:,} now): its later "
    "pages list the messages the first page found, in its order, so none is repeated or skipped; mail "
    "that arrived or came to match since is left out (search again without the cursor to see it), one "
    "moved is listed at its new place, and one deleted since is not listed."
)

_KEYED_ORDER = (
    "Mail changed since the first page of this search ({then:,} matches then, {now:,} now): its later "
    "pages go on in the first page's order over the messages the index held then, so none is repeated or "
    "skipped; {newer:,} that arrived since are left out (search again without the cursor to see them), "
    "one moved is listed at its new place if the walk has not passed it, and one deleted since is not listed."
)


def _keyed_cursor(
    app: Call,
    read: IndexRead,
    keyed: Keyed,
    cursor: IndexCursor | None,
    account_id: str,
    digest: str,
    offset: int,
) -> str | None:
    """The next page's cursor of a store that pages by key (None: no row follows): the first page's total
    and mark, and the store's own place."""
    if keyed.resume is None or not read.hits:
        return None
    total, mark = (cursor.total, cursor.mark) if cursor is not None else (read.total, read.mark)
    following = IndexCursor(account_id, digest, total, offset + len(read.hits), mark, 0, keyed.resume)
    return following.encode(app.caller.user)


#: What a page says where the push view's counts stood in for the server's, its last check of every folder
#: over :data:`~mail_imap_mcp.mail.freshness.CHECKED_RECENTLY_S` old (``index_fresh_from_push``).
PUSHED_UNCHECKED = (
    f"Folder counts came from the server's change notices, last checked folder by folder over "
    f"{CHECKED_RECENTLY_S:g} s ago: a change the server did not announce can be missing for up to "
    f"{RECHECK_S:g} s."
)


def _push_words(fresh: Freshness) -> list[str]:
    checked = fresh.pushed_checked_s_ago
    return [PUSHED_UNCHECKED] if checked is not None and checked > CHECKED_RECENTLY_S else []


#: Mailboxes a staleness warning names at most (the rest are counted).
_STALE_NAMED = 20


def _stale_words(fresh: Freshness) -> list[str]:
    if not fresh.stale:
        return []
    behind = sum(fresh.stale.values())
    names = sorted(fresh.stale)
    named = ", ".join(repr(name) for name in names[:_STALE_NAMED])
    if len(names) > _STALE_NAMED:
        named += f" and {len(names) - _STALE_NAMED} more"
    why = "within its time budget"
    if fresh.held_elsewhere:
        why = (
            f"within its time budget: another instance was bringing {len(fresh.held_elsewhere)} of them up to "
            "date (it holds their lease)"
        )
    if fresh.held_by_sync:  # not a write refused: the next search, once the sync let go, catches up
        why = "within its time budget: the index's background sync was writing it"
    if fresh.write_failure is not None:
        why = f"because it could not be written ({fresh.write_failure}; another process may be writing it)"
    return [
        f"The index was not fully brought up to date {why}: {len(names)} mailbox(es) are behind the "
        f"server ({f'by about {behind} message(s)' if behind else 'their flags not compared'}), and were "
        "answered as the index holds them: "
        f"{named}. The total counts the index as it is (about: matches among those changes are not in it), "
        "and the next page goes on from it; the background sync catches up, search again in a moment for "
        "a complete answer."
    ]

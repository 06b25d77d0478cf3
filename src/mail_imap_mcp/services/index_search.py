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
import time
import zlib
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Literal

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.envelope import Issue
from mail_imap_mcp.imap.across import summaries_each
from mail_imap_mcp.imap.directory import MailboxDirectory, configured_roles
from mail_imap_mcp.imap.ids import user_tag
from mail_imap_mcp.imap.mailboxes import MailboxInfo
from mail_imap_mcp.imap.records import SearchPage, SummaryRecord
from mail_imap_mcp.imap.search.cursors import DIGEST_CHARS, CursorMismatch, IndexCursor
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.index.answer import fresh_page
from mail_imap_mcp.index.freshness import Freshness
from mail_imap_mcp.index.snippets import matched_words, snippet_around
from mail_imap_mcp.index.store import (
    FolderState,
    Hit,
    IndexUnusable,
    IndexWriteFailed,
    Keyed,
    Order,
    Place,
    StaleResume,
)
from mail_imap_mcp.index.summaries import summary_of
from mail_imap_mcp.query import Query
from mail_imap_mcp.query.tree import AllOf, AnyOf, Label, nodes
from mail_imap_mcp.services.index_places import KEPT_PLACES, keep_places, kept_places
from mail_imap_mcp.services.search_args import ALL_MAILBOXES, SearchArgs
from mail_imap_mcp.services.search_backend import IndexChoice, choose_index


@dataclass
class IndexAnswer:
    """The index's page (None: the server answers) and what the page must say either way."""

    page: SearchPage | None
    warnings: list[str] = field(default_factory=list)


def _digest(args: SearchArgs, filter_digest: str, order: str) -> str:
    spec = json.dumps(["index", filter_digest, args.mailbox, args.mailboxes, order], ensure_ascii=False)
    return hashlib.sha256(spec.encode()).hexdigest()[:DIGEST_CHARS]


def index_page(
    app: AppContext,
    args: SearchArgs,
    search: Query,
    filter_digest: str,
    *,
    order: Literal["relevance", "date", "arrival"] | None,
    adds_roles: tuple[str, ...] = (),
) -> IndexAnswer:
    """The page of ``args`` from the index, ``order`` (None: no query, the server answers)."""
    account_id = app.connection(args.account_id).account_id
    cursor = IndexCursor.decode(args.cursor, app.caller.user) if args.cursor else None
    if args.cursor and cursor is None:
        return IndexAnswer(None)  # a page the server began (before the index was ready): it goes on
    choice = choose_index(
        app, account_id, search, order if order is not None or cursor is None else "relevance"
    )
    if not isinstance(choice, IndexChoice):
        if cursor is not None:
            raise CursorMismatch()  # the index answered the first page and no longer can: start again
        return IndexAnswer(None, choice)
    digest = _digest(args, filter_digest, choice.order)
    if cursor is not None and (cursor.account_id, cursor.digest) != (account_id, digest):
        raise CursorMismatch()
    limit = min(args.limit, app.config.server.max_search_limit)
    snippet_chars = min(args.snippet_chars, app.config.server.max_snippet_chars)
    offset = cursor.returned if cursor else 0
    # A later page lists the places its first page kept, in their order (item 16 of issue 47), or goes
    # on by key where the engine pages so (the cursor carries the engine's own place).
    resume = cursor.resume if cursor is not None and cursor.resume else None
    kept = kept_places(app, account_id, cursor.places) if cursor is not None and resume is None else None
    listed = kept[offset : offset + limit] if kept is not None and offset < len(kept) else None
    # A place gone is looked for at a new place (a move): never one the first page kept elsewhere.
    elsewhere = {place[:2] for place in kept or ()} - {place[:2] for place in listed or ()}
    budget_s = app.config.server.index_fresh_budget_ms / 1000
    names = list(dict.fromkeys(args.mailboxes if args.mailboxes is not None else [args.mailbox]))
    everything = ALL_MAILBOXES in names
    named = [name for name in names if name != ALL_MAILBOXES]
    account = app.config.accounts[account_id]

    def work(session: ImapSession) -> _Read:
        deadline = time.monotonic() + budget_s
        personality = session.personality
        listing: list[MailboxDirectory] = []

        def directory() -> MailboxDirectory:
            if not listing:
                listing.append(MailboxDirectory.load(session, account))
            return listing[0]

        if not personality.has_labels and any(isinstance(node, Label) for node in nodes(search)):
            return _Read([], 0, [], [], [], Freshness(), declined=_NO_LABELS)
        views = [personality.index_view(name, directory) for name in named]
        asked = _with_labels(choice.query, [view.label for view in views])
        if asked is None or (everything and asked is not choice.query):
            return _Read([], 0, [], [], [], Freshness(), declined=_MIXED_VIEWS)
        folders = list(dict.fromkeys(view.folder for view in views))

        def scope(boxes: list[MailboxInfo]) -> list[str]:
            known = MailboxDirectory(boxes, configured_roles(account))
            added = [name for role in adds_roles for name in known.with_role(role)]
            return list(dict.fromkeys([*personality.every_mailbox(known), *folders, *added]))

        try:
            answer = fresh_page(
                session,
                choice.indexer,
                asked,
                folders=None if everything else folders,
                order=_store_order(choice.order, args, personality.every_mailbox_is_one and not adds_roles),
                limit=limit,
                offset=offset,
                deadline=deadline,
                flags_tested=choice.flags_tested,
                flag_tests=choice.flag_tests,
                scope=scope,
                keep=KEPT_PLACES if cursor is None else 0,
                places=listed,
                after=resume,
            )
            # The folders' states as the page was read (a store that cannot be read: the server answers).
            stored = choice.indexer.store.folders()
        except (IndexUnusable, IndexWriteFailed) as exc:  # damaged, or its database out of reach
            return _Read([], 0, [], [], [], Freshness(), declined=_UNUSABLE.format(why=exc))
        except StaleResume as exc:  # a cursor of another engine: the search starts again
            return _Read([], 0, [], [], [], Freshness(), declined=str(exc))
        page, fresh, folders = answer.page, answer.fresh, answer.folders
        page.hits = [hit for hit in page.hits if (hit.folder, hit.uid) not in elsewhere]
        # The stored flags are the server's now where every folder of the page keeps MODSEQs (a flag
        # change shows in HIGHESTMODSEQ) and none was left behind; a NOMODSEQ folder's are read again.
        current = all(stored[hit.folder].highestmodseq > 0 for hit in page.hits if hit.folder in stored)
        if session.profile.condstore and not fresh.stale and current:
            own = session.own_addresses
            summaries = [
                summary_of(
                    account_id,
                    hit,
                    tag=user_tag(app.caller, account_id),
                    own=own,
                    snippet_chars=snippet_chars,
                    words=words,
                    labels=personality.labels_of({b"X-GM-LABELS": hit.labels}),
                )
                for hit in page.hits
            ]
            return _Read(
                folders,
                page.total,
                page.hits,
                summaries,
                [],
                fresh,
                _mark(stored),
                page.unweighted,
                page.places,
                page.keyed,
            )
        bodies = {(hit.folder, hit.uid): hit.body for hit in page.hits}
        messages, issues = _summaries(session, account_id, page.hits, snippet_chars, app)
        messages = [_with_snippet(m, bodies.get((m.mailbox, m.uid)), words, snippet_chars) for m in messages]
        return _Read(
            folders,
            page.total,
            page.hits,
            messages,
            issues,
            fresh,
            _mark(stored),
            page.unweighted,
            page.places,
            page.keyed,
        )

    words = matched_words(search)
    read = app.connection(account_id).run(work)
    if read.declined is not None:
        if cursor is not None:
            raise CursorMismatch()
        return IndexAnswer(None, [*choice.warnings, read.declined])
    messages = read.messages
    warnings = [*choice.warnings, *_stale_words(read.fresh)]
    next_cursor = None
    if read.keyed is not None:
        next_cursor = _keyed_cursor(app, read, read.keyed, cursor, account_id, digest, offset)
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
            places = keep_places(app, account_id, read.places) if cursor is None and read.places else 0
            key = cursor.places if cursor is not None else places
            after = IndexCursor(account_id, digest, read.total, returned, read.mark, key)
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
    page = SearchPage(
        account_id=account_id,
        label=args.mailbox if args.mailboxes is None else ", ".join(args.mailboxes),
        strict=args.mailboxes is None and args.mailbox != ALL_MAILBOXES,
        mailboxes=read.folders,
        total=read.total,
        returned_before=offset,
        attempted=len(read.hits),
        messages=messages,
        next_cursor=next_cursor,
        listed_issues=[],
        failed=list(read.fresh.gone.items()),
        fetch_issues=read.issues,
        windowed=False,
    )
    page.warnings = warnings
    page.ranked = choice.order == "relevance" and not read.unweighted
    page.total_approximate = bool(read.fresh.stale)
    return IndexAnswer(page)


def _store_order(order: Order, args: SearchArgs, every_mailbox_is_one: bool) -> Order:
    """The store's order of the page: arrival order is the server's, which reads one mailbox (named
    alone, or Gmail's All Mail for every mailbox) by UID, and several by INTERNALDATE."""
    named = args.mailboxes if args.mailboxes is not None else [args.mailbox]
    alone = args.mailboxes is None and args.mailbox != ALL_MAILBOXES
    one = alone or (every_mailbox_is_one and set(named) == {ALL_MAILBOXES})
    return "uid" if order == "arrival" and one else order


@dataclass
class _Read:
    folders: list[str]
    total: int
    hits: list[Hit]
    messages: list[SummaryRecord]
    issues: list[Issue]
    fresh: Freshness
    #: A mark of the index's contents when the page was read (:func:`_mark`).
    mark: int = 0
    #: Every word of the query is in more than half the messages: listed newest first (HitPage).
    unweighted: bool = False
    #: Where the first matches are, in the page's order (a first page: kept for the later ones).
    places: Future[list[Place]] | None = None
    #: The store pages by key: where the next page goes on (HitPage).
    keyed: Keyed | None = None
    #: Why the index did not answer after all (the server answers, and the page says this).
    declined: str | None = None


_MIXED_VIEWS = (
    "The local index keeps label folders as All Mail's messages with the label and cannot search them beside "
    "other folders in one search: the server answered it, unranked."
)


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
    app: AppContext,
    read: _Read,
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


_NO_LABELS = "This server has no labels: the server answered this search."

_UNUSABLE = "The local index could not be read ({why}): the server answered this search, unranked."


def _with_labels(search: Query, labels: list[str | None]) -> Query | None:
    """The query limited to messages with one of ``labels`` (the views of label folders); as it is where
    no view is a label's; None where label views and folders are mixed."""
    wanted = [label for label in labels if label is not None]
    if not wanted:
        return search
    if len(wanted) != len(labels):
        return None
    within = AnyOf(tuple(Label(label) for label in dict.fromkeys(wanted)))
    return AllOf((search, within))


def _summaries(
    session: ImapSession, account_id: str, hits: list[Hit], snippet_chars: int, app: AppContext
) -> tuple[list[SummaryRecord], list[Issue]]:
    """The summaries of the hits, in rank order, every folder read in one round trip."""
    by_folder: dict[str, tuple[int, list[int]]] = {}
    for hit in hits:
        by_folder.setdefault(hit.folder, (hit.uidvalidity, []))[1].append(hit.uid)
    wanted = [(folder, uidvalidity, uids) for folder, (uidvalidity, uids) in by_folder.items()]
    batches = summaries_each(
        session,
        account_id,
        wanted,
        tag=user_tag(app.caller, account_id),
        snippet_chars=snippet_chars,
        raw_window_bytes=app.config.server.max_text_part_bytes,
    )
    found: dict[tuple[str, int], SummaryRecord] = {}
    issues: list[Issue] = []
    for (folder, _, uids), batch in zip(wanted, batches, strict=True):
        if isinstance(batch, Exception):
            issues.append(
                Issue(
                    code="fetch_failed",
                    stage="fetch_headers",
                    message=f"Mailbox {folder!r} changed or failed while its {len(uids)} message(s) of this "
                    "page were read; search it again.",
                    retryable=True,
                )
            )
            continue
        issues += batch.issues
        found.update({(m.mailbox, m.uid): m for m in batch.messages})
    return [found[(h.folder, h.uid)] for h in hits if (h.folder, h.uid) in found], issues


def _with_snippet(summary: SummaryRecord, body: str | None, words: list[str], chars: int) -> SummaryRecord:
    if not body or not words or chars <= 0:
        return summary
    snippet = snippet_around(body, words, chars)
    return replace(summary, snippet=snippet) if snippet else summary


#: Mailboxes a staleness warning names at most (the rest are counted).
_STALE_NAMED = 20


def _mark(folders: dict[str, FolderState]) -> int:
    """A 32-bit mark of what the index holds (every folder's sync state): another mark on a later page
    means messages came or went since the first, which moves ranks even where the total is the same."""
    states = sorted(
        (state.name, state.uidvalidity, state.uidnext, state.highestmodseq, state.messages)
        for state in folders.values()
    )
    return zlib.crc32(repr(states).encode()) or 1


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

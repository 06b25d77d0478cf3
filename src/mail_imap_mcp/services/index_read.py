"""The local index's answer to a page of imap_search_messages (:mod:`.index_search` plans it and makes the
page): in one run of the account's page reads (:class:`~mail_imap_mcp.mail.pages.PageReads`), the folders
searched brought up to date within the time budget and the store's hits
(:func:`~mail_imap_mcp.index.answer.fresh_page`), then their summaries: from the store where its flags
are the server's now, else read from the server, each snippet around the query's words."""

from __future__ import annotations

import time
import zlib
from concurrent.futures import Future
from dataclasses import dataclass, replace

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.envelope import Issue
from mail_imap_mcp.index.answer import fresh_page
from mail_imap_mcp.index.freshness import Freshness
from mail_imap_mcp.index.snippets import snippet_around
from mail_imap_mcp.index.store import (
    FolderState,
    Hit,
    HitPage,
    IndexUnusable,
    IndexWriteFailed,
    Keyed,
    Order,
    Place,
    StaleResume,
)
from mail_imap_mcp.index.summaries import summary_of
from mail_imap_mcp.mail.cursors import IndexCursor
from mail_imap_mcp.mail.directory import MailboxDirectory, configured_roles, directory_of
from mail_imap_mcp.mail.mailboxes import MailboxInfo
from mail_imap_mcp.mail.pages import PageReads
from mail_imap_mcp.mail.records import SummaryRecord
from mail_imap_mcp.query import Query
from mail_imap_mcp.query.tree import AllOf, AnyOf, Label, nodes
from mail_imap_mcp.services.index_places import KEPT_PLACES
from mail_imap_mcp.services.search_args import ALL_MAILBOXES, SearchArgs
from mail_imap_mcp.services.search_backend import IndexChoice, ServerAnswers, server_answers


@dataclass
class IndexPlan:
    """What a page asks of the index, settled before the round trip: the search and its order, the
    window (``offset``, ``limit``), where a later page goes on (the places its first page kept,
    ``listed``, or the engine's own place, ``resume``), and how its summaries are made."""

    args: SearchArgs
    account_id: str
    account: AccountConfig
    choice: IndexChoice
    #: Where the search began: None on a first page.
    cursor: IndexCursor | None
    digest: str
    limit: int
    snippet_chars: int
    offset: int
    resume: bytes | None
    #: The places the first page kept, when a later page lists them (None: it goes on by offset or key).
    listed: list[Place] | None
    #: Folder and UID of the places the first page kept elsewhere: never listed at a new place.
    elsewhere: set[tuple[str, int]]
    budget_s: float
    #: The mailboxes named, and whether every mailbox (``*``) was.
    named: list[str]
    everything: bool
    #: The roles a search of every mailbox adds to it (Trash, Junk: ``mailboxes``).
    adds_roles: tuple[str, ...]
    #: The query's words, for the snippets.
    words: list[str]
    #: The user's tag of the message ids (``mail/ids.user_tag``) and how much of a text part is read.
    tag: str
    raw_window_bytes: int
    #: Folders brought up to date though not searched (the mailbox of the message ``like`` names).
    also_fresh: tuple[str, ...] = ()


@dataclass
class IndexRead:
    """The store's answer with the summaries of its hits, or why the index declined after all."""

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
    declined: ServerAnswers | None = None
    #: Where the index declines the search as asked, whenever asked: the argument and why (a search
    #: only the index answers, by meaning, is refused so).
    unanswerable: tuple[str, str] | None = None


def _declined(why: ServerAnswers, unanswerable: tuple[str, str] | None = None) -> IndexRead:
    return IndexRead([], 0, [], [], [], Freshness(), declined=why, unanswerable=unanswerable)


_MIXED_VIEWS = server_answers(
    "the local index keeps label folders as All Mail's messages with the label and cannot search them "
    "beside other folders in one search",
    "the server answered it, unranked",
)

_MIXED_VIEWS_WHY = "it keeps a label folder as All Mail's messages with the label, not beside other folders; search them apart"

_NO_LABELS = server_answers("this server has no labels", "the server answered this search")


def read_index_page(reads: PageReads, plan: IndexPlan, search: Query) -> IndexRead:
    """The store's answer to ``plan`` (the folders searched brought up to date first), with summaries."""
    deadline = time.monotonic() + plan.budget_s
    listing: list[MailboxDirectory] = []

    def directory() -> MailboxDirectory:
        if not listing:
            listing.append(directory_of(reads.mailboxes(), plan.account))
        return listing[0]

    if not reads.has_labels and any(isinstance(node, Label) for node in nodes(search)):
        return _declined(_NO_LABELS, ("query", "this server has no labels (label: is Gmail's); leave it out"))
    views = [reads.index_view(name, directory) for name in plan.named]
    choice = plan.choice
    asked = _with_labels(choice.query, [view.label for view in views])
    if asked is None or (plan.everything and asked is not choice.query):
        given = "mailboxes" if plan.args.mailboxes is not None else "mailbox"
        return _declined(_MIXED_VIEWS, (given, _MIXED_VIEWS_WHY))
    folders = list(dict.fromkeys(view.folder for view in views))

    def scope(boxes: list[MailboxInfo]) -> list[str]:
        known = MailboxDirectory(boxes, configured_roles(plan.account))
        added = [name for role in plan.adds_roles for name in known.with_role(role)]
        return list(dict.fromkeys([*reads.every_mailbox(known), *folders, *added]))

    try:
        answer = fresh_page(
            reads,
            choice.indexer,
            asked,
            folders=None if plan.everything else folders,
            order=_store_order(choice.order, plan.args, reads.every_mailbox_is_one and not plan.adds_roles),
            limit=plan.limit,
            offset=plan.offset,
            deadline=deadline,
            flags_tested=choice.flags_tested,
            flag_tests=choice.flag_tests,
            scope=scope,
            keep=KEPT_PLACES if plan.cursor is None else 0,
            places=plan.listed,
            after=plan.resume,
            also=plan.also_fresh,
        )
        # The folders' states as the page was read (a store that cannot be read: the server answers).
        stored = choice.indexer.store.folders()
    except (IndexUnusable, IndexWriteFailed) as exc:  # damaged, or its database out of reach
        return _declined(server_answers(f"the local index could not be read ({exc})"))
    except StaleResume as exc:  # a cursor of another engine: the search starts again
        return _declined(ServerAnswers(str(exc).rstrip("."), str(exc)))
    page, fresh = answer.page, answer.fresh
    page.hits = [hit for hit in page.hits if (hit.folder, hit.uid) not in plan.elsewhere]
    messages, issues = _summaries(reads, plan, page, fresh, stored)
    return IndexRead(
        answer.folders,
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


def _summaries(
    reads: PageReads, plan: IndexPlan, page: HitPage, fresh: Freshness, stored: dict[str, FolderState]
) -> tuple[list[SummaryRecord], list[Issue]]:
    """The summaries of the page's hits, in its order: the store's, whose flags are the server's now where
    every folder of the page keeps MODSEQs (a flag change shows in HIGHESTMODSEQ) and none was left behind;
    else read from the server (a NOMODSEQ folder's flags are read again; a row indexed before the store
    kept Reply-To and Sender cannot give a summary their warnings)."""
    current = all(stored[hit.folder].highestmodseq > 0 for hit in page.hits if hit.folder in stored)
    complete = all(hit.kept is not None for hit in page.hits)
    if reads.keeps_modseqs and not fresh.stale and current and complete:
        own = reads.own_addresses
        summaries = [
            summary_of(
                plan.account_id,
                hit,
                tag=plan.tag,
                own=own,
                snippet_chars=plan.snippet_chars,
                words=plan.words,
                labels=reads.shown_labels(hit.labels),
            )
            for hit in page.hits
        ]
        return summaries, []
    bodies = {(hit.folder, hit.uid): hit.body for hit in page.hits}
    messages, issues = _server_summaries(reads, plan, page.hits)
    chars = plan.snippet_chars
    return [_with_snippet(m, bodies.get((m.mailbox, m.uid)), plan.words, chars) for m in messages], issues


def _store_order(order: Order, args: SearchArgs, every_mailbox_is_one: bool) -> Order:
    """The store's order of the page: arrival order is the server's, which reads one mailbox (named
    alone, or Gmail's All Mail for every mailbox) by UID, and several by INTERNALDATE."""
    named = args.mailboxes if args.mailboxes is not None else [args.mailbox]
    alone = args.mailboxes is None and args.mailbox != ALL_MAILBOXES
    one = alone or (every_mailbox_is_one and set(named) == {ALL_MAILBOXES})
    return "uid" if order == "arrival" and one else order


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


def _server_summaries(
    reads: PageReads, plan: IndexPlan, hits: list[Hit]
) -> tuple[list[SummaryRecord], list[Issue]]:
    """The summaries of the hits, in rank order, every folder read in one round trip."""
    by_folder: dict[str, tuple[int, list[int]]] = {}
    for hit in hits:
        by_folder.setdefault(hit.folder, (hit.uidvalidity, []))[1].append(hit.uid)
    wanted = [(folder, uidvalidity, uids) for folder, (uidvalidity, uids) in by_folder.items()]
    batches = reads.summaries_each(
        wanted, tag=plan.tag, snippet_chars=plan.snippet_chars, window=plan.raw_window_bytes
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


def _mark(folders: dict[str, FolderState]) -> int:
    """A 32-bit mark of what the index holds (every folder's sync state): another mark on a later page
    means messages came or went since the first, which moves ranks even where the total is the same."""
    states = sorted(
        (state.name, state.uidvalidity, state.uidnext, state.highestmodseq, state.messages)
        for state in folders.values()
    )
    return zlib.crc32(repr(states).encode()) or 1

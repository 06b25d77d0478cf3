"""The search service: one page of imap_search_messages, whatever it searches and in whichever order.

Every read of a page runs together on the account's backend (:class:`~mail_imap_mcp.mail.pages.PageReads`;
IMAP's: one session). A page of one mailbox (arrival or sent-date order; Gmail's All Mail for every
folder) is read as a stream and continues with a :class:`~mail_imap_mcp.mail.cursors.StreamCursor`; a
page of several mailboxes (``mailbox: "*"`` or ``mailboxes``) is read by one position
(:mod:`.search_position`) and continues with a :class:`~mail_imap_mcp.mail.cursors.PositionCursor`. The
query dialect is chosen by :mod:`.search_backend`; the summaries of every mailbox are read at once. The
page is data (:class:`~mail_imap_mcp.mail.records.SearchPage`); ``presentation/search_page.py`` words it for
the model.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from mail_imap_mcp.call import Call
from mail_imap_mcp.envelope import Issue
from mail_imap_mcp.mail.cursors import (
    DIGEST_CHARS,
    CursorMismatch,
    PositionCursor,
    StreamCursor,
    StreamState,
    decode_search_cursor,
)
from mail_imap_mcp.mail.directory import MailboxDirectory, configured_roles
from mail_imap_mcp.mail.ids import user_tag
from mail_imap_mcp.mail.pages import GONE_MEANWHILE, PageOrder, PageReads, StreamAsk, Summaries
from mail_imap_mcp.mail.records import OrderedPage, SearchPage
from mail_imap_mcp.query import DIALECTS, GmailOnly, Query, all_of, search_keys
from mail_imap_mcp.query.structure import split
from mail_imap_mcp.services.index_search import index_page
from mail_imap_mcp.services.search_args import ALL_MAILBOXES, MAX_MAILBOXES, SearchArgs
from mail_imap_mcp.services.search_backend import choose_backend
from mail_imap_mcp.services.search_position import (
    position_page,
    reads_by_position,
)
from mail_imap_mcp.services.search_structure import PageRead, judged
from mail_imap_mcp.services.search_summaries import ReadEach, learn_keys, once_each, page_summaries


def wanted_mailboxes(args: SearchArgs) -> tuple[list[str], bool]:
    """The names asked for (without ``*``) and whether ``*`` (every mailbox) was asked for."""
    names = args.mailboxes if args.mailboxes is not None else [args.mailbox]
    return list(dict.fromkeys(n for n in names if n != ALL_MAILBOXES)), ALL_MAILBOXES in names


def searched_label(args: SearchArgs) -> str:
    """The mailbox searched, as given: ``*``, a name, or the names joined by ", "."""
    return args.mailbox if args.mailboxes is None else ", ".join(args.mailboxes)


def _stream_digest(args: SearchArgs, filter_digest: str) -> str:
    spec = json.dumps([filter_digest, args.mailbox, args.mailboxes, args.sort], ensure_ascii=False)
    return hashlib.sha256(spec.encode()).hexdigest()[:DIGEST_CHARS]


@dataclass
class _Mailboxes:
    """The mailboxes a first page searches."""

    #: To open, in order.
    opened: list[str]
    #: Every mailbox of the search, in order (``opened`` and ``empty`` together).
    chosen: list[str] = field(default_factory=list)
    #: Known to hold nothing (LIST-STATUS): searched without being opened.
    empty: list[str] = field(default_factory=list)
    #: Mailboxes cut by MAX_MAILBOXES.
    issues: list[Issue] = field(default_factory=list)
    #: Every selectable mailbox the LIST showed (empty when none was run).
    listed: frozenset[str] = frozenset()


def _resolve(
    reads: PageReads,
    app: Call,
    account_id: str,
    args: SearchArgs,
    *,
    adds_roles: tuple[str, ...] = (),
) -> _Mailboxes:
    """The mailboxes of a first page: the names given, or every searchable one of the account (and
    those of ``adds_roles``, from the same LIST)."""
    names, everything = wanted_mailboxes(args)
    if not everything:
        return _Mailboxes(opened=names, chosen=names)
    account = app.config.accounts[account_id]
    boxes = reads.listing()
    directory = MailboxDirectory(boxes, configured_roles(account))
    found = reads.every_mailbox(directory)
    added = [name for role in adds_roles for name in directory.with_role(role)]
    chosen = list(dict.fromkeys([*found, *names, *added]))
    issues = []
    if len(chosen) > MAX_MAILBOXES:
        issues.append(
            Issue(
                code="mailboxes_cut",
                stage="list",
                message=f"The account has {len(chosen)} mailboxes to search; this search covers the first "
                f"{MAX_MAILBOXES} (INBOX first, then by name). Name the others in a list to search them.",
                retryable=False,
            )
        )
        chosen = chosen[:MAX_MAILBOXES]
    # The selected mailbox's STATUS may come from the session's older view: it is always opened.
    empty = {
        box.name
        for box in boxes
        if box.counts is not None and box.counts.messages == 0 and box.name != reads.selected_mailbox
    }
    return _Mailboxes(
        chosen=chosen,
        opened=[n for n in chosen if n not in empty],
        empty=[n for n in chosen if n in empty],
        issues=issues,
        listed=frozenset(box.name for box in boxes if box.selectable),
    )


#: Reads of a page of several mailboxes at most: a message expunged between the page's search and its
#: FETCH may have been moved to another mailbox searched, at the same place in the order (MOVE and COPY
#: keep INTERNALDATE), behind the next cursor: the page is read again from the same position, so such a
#: message is listed once, in its new place, rather than reported gone and never listed (issue 47 item 22).
PAGE_READS = 3


def _by_position(
    reads: PageReads,
    app: Call,
    account_id: str,
    args: SearchArgs,
    search: Query,
    digest: str,
    cursor: PositionCursor | None,
    limit: int,
    adds_roles: tuple[str, ...],
    summaries: ReadEach,
) -> PageRead:
    """A page of several mailboxes by one position (:mod:`.search_position`), its summaries read by
    ``summaries``."""
    issues: list[Issue] = []
    if cursor is None:
        first = _resolve(reads, app, account_id, args, adds_roles=adds_roles)
        names, issues = first.chosen, first.issues
        skipped = sum(1 << i for i, name in enumerate(names) if name in set(first.empty))
    else:
        names = list(
            app.mailbox_list(account_id, cursor.mailboxes_digest)
            or _resolve(reads, app, account_id, args, adds_roles=adds_roles).chosen
        )
        skipped = cursor.skipped
    for _ in range(PAGE_READS):
        page = position_page(
            reads,
            account_id=account_id,
            names=names,
            skipped=skipped,
            search=search,
            sort=server_sort(args),
            limit=limit,
            filter_digest=digest,
            cursor=cursor,
            dialect=choose_backend(reads),
        )
        ordered = OrderedPage(page.picks, page.total, None)
        messages, fetch_issues = page_summaries(summaries, ordered, False, reads.mailbox_failure)
        if not any(issue.code == GONE_MEANWHILE for issue in fetch_issues):
            break
    if page.filed_behind:
        issues.append(
            Issue(
                code="filed_meanwhile",
                stage="search",
                message=f"{page.filed_behind} message(s) were filed into a searched mailbox since the last "
                "page with the same time as its last message, at a place this walk had passed: one moved "
                "from a place not reached yet is not listed. Search again from the first page to see them.",
                retryable=True,
            )
        )
    if page.next_cursor is not None:
        # Its next pages, on any instance sharing the state, list no mailbox again.
        app.remember_mailbox_list(account_id, page.next_cursor.mailboxes_digest, names)
    page.mailboxes += [name for i, name in enumerate(names) if skipped >> i & 1 and cursor is None]
    messages, doubles = once_each(messages)
    attempted = len(page.picks) - doubles if doubles else None
    return PageRead(page, messages, issues, fetch_issues, page.next_cursor, attempted=attempted)


def server_sort(args: SearchArgs) -> PageOrder:
    """The order the server gives the page in: relevance (the local index's) is newest first."""
    return "date" if args.sort == "date" else "arrival"


def searchable(search: Query) -> tuple[Query, Query | None]:
    """The part of ``search`` the server's SEARCH answers and the part judged from the candidates'
    structures (None: none); :class:`~mail_imap_mcp.query.structure.MixedStructure` or
    :class:`~mail_imap_mcp.query.QueryTooComplex` when the server cannot answer it, before any round trip."""
    server, structure = split(search)
    with contextlib.suppress(GmailOnly):  # Gmail's own tests: the server's search dialect decides
        search_keys(server)
    return server, structure


def search_page(
    app: Call,
    args: SearchArgs,
    search: Query,
    filter_digest: str,
    *,
    ranked_query: bool = False,
    adds_roles: tuple[str, ...] = (),
) -> SearchPage:
    """A page of the search ``args`` ask for, matching ``search`` (``filter_digest``: the filters'
    fingerprint); ``ranked_query``: a ``query`` was given, which the local index answers where the
    account keeps one (:mod:`.index_search`). On the server, its tests of attachments
    (``has:attachment``, ``filename:``) are split off (:func:`mail_imap_mcp.query.structure.split`) and
    judged from each candidate's structure, the server's matches read page by page until ``limit`` pass
    or :data:`MAX_STRUCTURE_CANDIDATES` were judged. ``adds_roles``: special-use roles whose mailboxes a
    search of every mailbox covers too (``in:anywhere``: Trash and Junk). A garbled cursor or one of
    another search raises :class:`CursorError` or :class:`CursorMismatch`, a refused charset
    :class:`~mail_imap_mcp.imap.errors.CharsetRejected`, a query the server cannot answer
    :class:`~mail_imap_mcp.query.structure.MixedStructure` or :class:`~mail_imap_mcp.query.QueryTooComplex`
    (before any round trip)."""
    mail = app.mail(args.account_id)  # AccountUnknown before anything is asked
    account_id = app.resolve_account(args.account_id)
    order = args.sort if ranked_query else None
    answer = index_page(app, args, search, filter_digest, order=order, adds_roles=adds_roles)
    if answer.page is not None:
        return answer.page
    sort = server_sort(args)
    search, structure = searchable(search)
    # One mailbox named alone: its errors are the call's; any other search goes on past a failed mailbox.
    strict = args.mailboxes is None and args.mailbox != ALL_MAILBOXES
    # A cursor binds the search that made it. One mailbox in arrival order binds the filters (the mailbox
    # and order are in the cursor itself), as its cursors always have; any other binds filters,
    # mailboxes and order in one digest.
    one_by_arrival = strict and sort == "arrival"
    digest = filter_digest if one_by_arrival else _stream_digest(args, filter_digest)

    def fits(cursor: StreamCursor | PositionCursor) -> bool:
        if (cursor.account_id, cursor.filter_digest) != (account_id, digest):
            return False
        if isinstance(cursor, PositionCursor):
            return not strict
        if one_by_arrival:
            return cursor.sort == "arrival" and cursor.stream.mailbox == args.mailbox
        return True

    cursor = None
    if args.cursor is not None:
        cursor = decode_search_cursor(
            args.cursor, app.caller.user
        )  # CursorError: the registry names the argument
        if not fits(cursor):
            raise CursorMismatch()
    limit = min(args.limit, app.config.server.max_search_limit)
    snippet_chars = min(args.snippet_chars, app.config.server.max_snippet_chars)
    window = app.config.server.max_text_part_bytes
    tag = user_tag(app.caller, account_id)

    def read_page(
        reads: PageReads,
        cursor: StreamCursor | PositionCursor | None,
        limit: int,
        query: Query = search,
    ) -> PageRead:
        def summaries(wanted: Sequence[tuple[str, int, list[int]]]) -> Sequence[Summaries | Exception]:
            return reads.summaries_each(wanted, tag=tag, snippet_chars=snippet_chars, window=window)

        # Where a search of every mailbox is one mailbox (Gmail: All Mail), it is read as one mailbox is.
        one_for_all = reads.every_mailbox_is_one and wanted_mailboxes(args) == ([], True) and not adds_roles
        by_position = reads_by_position(merged=not strict) and not one_for_all
        if isinstance(cursor, PositionCursor) or (cursor is None and by_position):
            return _by_position(
                reads, app, account_id, args, query, digest, cursor, limit, adds_roles, summaries
            )
        assert not isinstance(cursor, PositionCursor)
        first = _Mailboxes(opened=[])
        if cursor is None:
            first = _resolve(reads, app, account_id, args, adds_roles=adds_roles)
        # A copy per attempt: a page moves its stream on, and a read run again (a lost connection) must
        # start where the cursor stood, not where the failed attempt left it.
        stream: StreamState | None = None
        if cursor is not None:
            stream = replace(cursor.stream, after=list(cursor.stream.after))
        elif first.opened:
            (name,) = first.opened  # one mailbox: named alone, or Gmail's All Mail for every folder
            stream = StreamState(name)
        # Else the one mailbox is empty (LIST-STATUS said so): nothing to read.
        page = OrderedPage(picks=[], total=0, next_stream=None)
        if stream is not None:
            dialect = choose_backend(reads)  # IMAP's SEARCH keys, or Gmail's
            total = cursor.total if cursor else None
            ask = StreamAsk(
                query, dialect, sort, limit, stream=stream, strict=strict, total=total, listed=first.listed
            )
            page = reads.ordered_page(ask)
        page.mailboxes += first.empty  # searched too: LIST-STATUS said they hold nothing
        messages, fetch_issues = page_summaries(summaries, page, strict, reads.mailbox_failure)
        messages, doubles = once_each(messages)
        learn_keys(page, messages, sort)
        returned = cursor.returned if cursor else 0
        next_cursor = _next_cursor(page, account_id, digest, sort, returned)
        attempted = len(page.picks) - doubles if doubles else None
        return PageRead(page, messages, first.issues, fetch_issues, next_cursor, attempted=attempted)

    def work(reads: PageReads) -> PageRead:
        dialect = choose_backend(reads)
        # A test this server's search cannot say (GmailOnly: label: on a server without Gmail's search) is
        # refused before the search sends a command of its own (the pool settles the view's revalidation).
        DIALECTS[dialect](search)
        if structure is not None and dialect == "gmail":
            # Gmail's search answers has:attachment and filename: itself (X-GM-RAW): nothing to judge here.
            return read_page(reads, cursor, limit, all_of(search, structure))
        read = read_page(reads, cursor, limit)
        if structure is None:
            return read
        return judged(read, structure, limit, lambda cursor, wanted: read_page(reads, cursor, wanted))

    # A recreated mailbox (UidValidityChanged): the registry's conflict reruns the search; a refused
    # charset (CharsetRejected) is the caller's to say.
    read = mail.pages(work)
    page = read.page
    return SearchPage(
        account_id=account_id,
        label=searched_label(args),
        strict=strict,
        mailboxes=page.mailboxes,
        total=page.total,
        returned_before=cursor.returned if cursor else 0,
        attempted=read.attempted if read.attempted is not None else len(page.picks),
        messages=read.messages,
        next_cursor=read.next_cursor.encode(app.caller.user) if read.next_cursor is not None else None,
        listed_issues=read.listed_issues,
        failed=list(page.failed),
        fetch_issues=read.fetch_issues,
        windowed=isinstance(page, OrderedPage) and page.windowed,
        warnings=answer.warnings,
        structure_cut=read.structure_cut,
    )


def _next_cursor(
    page: OrderedPage, account_id: str, digest: str, sort: PageOrder, returned_before: int
) -> StreamCursor | None:
    """The cursor continuing an ordered page (None: it was the last)."""
    if page.next_stream is None:
        return None
    return StreamCursor(
        account_id=account_id,
        filter_digest=digest,
        sort=sort,
        total=page.total,
        returned=returned_before + len(page.picks),
        stream=page.next_stream,
    )

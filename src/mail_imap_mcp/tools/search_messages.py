"""imap_search_messages: filtered, paged message summaries, newest first."""

from __future__ import annotations

from typing import Any, TypeGuard

from mail_imap_mcp.call import Call
from mail_imap_mcp.capabilities import SEARCHING_BY_MEANING
from mail_imap_mcp.envelope import ToolFailure, ToolResult
from mail_imap_mcp.imap.sort import DATE_WINDOW
from mail_imap_mcp.presentation.arguments import SHAPE_DETAILS
from mail_imap_mcp.presentation.search_page import TOOL_NAME, CompactSearchData, SearchMessagesData
from mail_imap_mcp.presentation.sender_shapes import HIT_WARNINGS_CHANGE, HIT_WARNINGS_DETAILS
from mail_imap_mcp.services.search_structure import MAX_STRUCTURE_CANDIDATES
from mail_imap_mcp.tools.search_messages_models import SearchMessagesInput
from mail_imap_mcp.tools.spec import ToolSpec

NAME = TOOL_NAME
TITLE = "Search messages"
DESCRIPTION = (
    "Search mail: summaries newest first, each with a snippet of what the sender wrote, often enough "
    "without opening it. Filters combine with AND; none lists the newest. Next page: the same call plus "
    "cursor=data.next_cursor."
)
DETAILS = (
    "Each summary has the sender, subject, date, flags and a snippet of what the sender wrote (quoted "
    "replies and signatures left out): the snippet usually answers 'what did X say' without reading the "
    f"message. Non-ASCII search text works (sent as UTF-8, normalised to NFC). {HIT_WARNINGS_DETAILS}\n\n"
    '- `mailbox: "*"` searches every mailbox except Trash and Junk/Spam and virtual ones such as '
    'Gmail\'s All Mail, which are searched only when named in `mailboxes` (`["*", "Trash"]` adds '
    "Trash). The pages of several mailboxes are merged newest first and each summary names its mailbox "
    "([search.md](search.md)). On Gmail (X-GM-EXT-1) it searches All Mail alone: each message once, "
    "archived mail included, each summary with its `labels`.\n"
    '- `sort: "arrival"` (the default, with or without `query`) lists the newest received first (one '
    "mailbox: UID order; several: INTERNALDATE, then mailbox, then UID), the same page whether the "
    'server or the local index answers; `"date"` the newest Date header first, through the server\'s SORT '
    f"where it has one, else sorted here in blocks of the {DATE_WINDOW} newest matches (a warning says "
    "when a search spans several).\n"
    '- `sort: "relevance"` lists the best match first where the account keeps a local index (`index = '
    "true`, [index.md](index.md)): ranked by BM25, a word in the subject or sender counting most and one "
    "in quoted replies least, after one round trip that brings the index up to date; each snippet shows "
    "where the words are. A query of words alone that matches 20,000 messages or more, over half of all, "
    "is listed newest first: BM25 weighs its words at nothing, and `meta.warnings` says so. Without an "
    "index (or while it is being built) the server answers in arrival order and `meta.warnings` says so. "
    "Later pages from the index list what the first page found, in its order: mail that arrived since "
    "is left out (said).\n"
    "- `about` (a description of the mail wanted) and `like` (a `message_id`: the mail closest in meaning "
    "to it) rank by words and meaning together where the account's index keeps vectors "
    "([search.md](search.md#by-meaning-about-and-like)); each summary's `why` says why it is listed. "
    "Every filter bounds them; one the index cannot answer (`needs_reply`, `bcc:`, `label:` on a server "
    "without labels, text without a word) is `invalid_input` naming it, and so is an `about` without a "
    "word.\n"
    "- `needs_reply: true` lists only mail that awaits the user's answer: not `\\Answered`, not from the "
    "account's own addresses (imap_list_accounts), not automated (List-Id, Auto-Submitted, Precedence "
    "bulk/list/junk, no-reply and mailer-daemon senders), and not answered by a message in the Sent "
    "mailbox (special-use `\\Sent`, else the `sent_mailbox` setting or a usual name) that names it, is "
    "addressed to its sender and is not older. `total` counts the messages before the Sent check, so a "
    "page may list fewer than `limit`.\n"
    "- `query` is the Gmail-style query language ([search.md](search.md#the-query-language)): plain "
    'words must all match (each anywhere in the headers or body), `"a phrase"` as written; `from:`, `to:`, '
    "`cc:`, `bcc:`, `subject:` (a word, a phrase or a group: `from:(ann OR bob)`), `has:attachment`, "
    "`filename:pdf`, `is:unread|read|flagged|starred|answered|unanswered`, `after:2024/01/31` (on or "
    "after), `before:2024-02-01`, `newer_than:7d` and `older_than:3m` (d, m, y; arrival dates), "
    "`larger:5M` and `smaller:100K`; `OR` (binds tighter than the implicit AND), `-` for not, parentheses, "
    "`{a b}` for `(a OR b)`. `in:<mailbox>` (a name, its last level, or a role: `sent`, `drafts`, "
    "`trash`, `spam`, `archive`) or `in:anywhere` (every mailbox with Trash and Junk) says where to search "
    "and cannot be combined with `mailbox`/`mailboxes`. Without a mailbox, a search with `query` covers "
    'every mailbox (as `mailbox: "*"`), one without covers INBOX. A malformed query is `invalid_input` '
    "naming the character and what was expected there. Without a local index, `has:attachment` and "
    "`filename:` are judged from the structure of the server's matches, page by page (at most "
    f"{MAX_STRUCTURE_CANDIDATES} a call; a page cut short says so and its cursor continues; `total` then "
    "counts the server's matches); they combine with the rest only by AND.\n"
    "- Text filters (`query`'s terms, `from`, `to`, `cc`, `subject`, `body`) match substrings, "
    "case-insensitively as the server does; every filter argument combines with `query` by AND; `since` "
    "and `before` are dates in the server's calendar; `last_days` cannot be combined with `since`.\n"
    "- A cursor belongs to its search: pass the same filters with it (a cursor of other filters is "
    "`invalid_input`).\n"
    f"- {SHAPE_DETAILS}"
)

FILTER_FIELDS = (
    "query",
    "from",
    "to",
    "cc",
    "subject",
    "body",
    "since",
    "before",
    "last_days",
    "unread_only",
    "flagged",
    "has_keyword",
    "larger_than_bytes",
    "smaller_than_bytes",
    "needs_reply",
)
ERRORS = {
    "invalid_input": "An argument is malformed, filters contradict each other, or the cursor is garbled or belongs to other filters.",
    "not_found": "The account_id is not configured or the mailbox does not exist.",
    "conflict": "The mailbox's UIDVALIDITY changed since the cursor was issued; next_action reruns the search.",
    "auth_failed": "The server rejected the credentials.",
    "unavailable": "The server cannot be reached.",
    "timeout": "A command exceeded its time budget.",
}


def _same_search(args: SearchMessagesInput, account_id: str) -> dict[str, Any]:
    arguments = args.model_dump(by_alias=True, exclude_none=True, exclude_defaults=True)
    arguments.pop("cursor", None)
    arguments["account_id"] = account_id
    return arguments


Page = ToolResult[SearchMessagesData] | ToolResult[CompactSearchData]


def handle(app: Call, args: SearchMessagesInput) -> Page:
    """``services.search`` (scope, backend, ``needs_reply``), worded by ``presentation.search_page``."""
    from mail_imap_mcp.presentation.search_page import compact_page, without_answered
    from mail_imap_mcp.services.needs_reply import answered_from_sent

    compact = args.fields == "compact"
    # needs_reply looks at the full page first; otherwise one mailbox's page is built compact directly.
    result = _handle(app, args, compact=compact and not args.needs_reply)
    if _is_full(result):
        if args.needs_reply:
            answered = answered_from_sent(app, result.data.account_id, result.data.messages)
            result = without_answered(result, answered.message_ids, answered.issues, answered.warnings)
        return compact_page(result) if compact else result
    return result


def _is_full(result: Page) -> TypeGuard[ToolResult[SearchMessagesData]]:
    return isinstance(result.data, SearchMessagesData)


def _handle(app: Call, args: SearchMessagesInput, *, compact: bool) -> Page:
    from mail_imap_mcp.mail.errors import CharsetRejected
    from mail_imap_mcp.presentation.search_filters import (
        by_meaning_checked,
        filters_digest,
        filters_query,
        index_answers_filters,
    )
    from mail_imap_mcp.presentation.search_page import charset_refused, page_result
    from mail_imap_mcp.query import Anywhere
    from mail_imap_mcp.services.search import search_page, searchable, searched_label
    from mail_imap_mcp.services.search_scope import ANYWHERE_ROLES, searched_where

    account_id = app.connection(args.account_id).account_id
    search = filters_query(args, app.config.accounts[account_id].user_addresses)
    if args.mailboxes is not None and "mailbox" in args.model_fields_set:
        raise ToolFailure.invalid_input(
            "mailboxes", "give either 'mailbox' or 'mailboxes', not both.", conflicts_with="mailbox"
        )
    if search.scope is not None and (args.mailbox is not None or args.mailboxes is not None):
        given = "mailbox" if args.mailbox is not None else "mailboxes"
        raise ToolFailure.invalid_input(
            "query",
            f"its in: and '{given}' both say where to search; give one of them.",
            conflicts_with=given,
        )
    sort_given = args.sort if "sort" in args.model_fields_set else None
    by_meaning = by_meaning_checked(args.about, args.like, sort_given)
    if app.index_of(account_id) is None and not by_meaning:
        # The server answers: a query it cannot answer is refused before in: asks it anything.
        searchable(search.tree)
    searched = searched_where(app, account_id, args, search.scope)
    adds_roles = ANYWHERE_ROLES if isinstance(search.scope, Anywhere) else ()
    if by_meaning:  # its modules (numpy's among them) load with the first search by meaning
        from mail_imap_mcp.services.search_meaning import MeaningAsk, meaning_page

        index_answers_filters(search, "about" if args.about is not None else "like", app.index_engine.check)
        digest = filters_digest(args, (*FILTER_FIELDS, "about", "like"))
        asked = MeaningAsk(args.about, args.like)
        page = meaning_page(app, searched, search.tree, digest, asked, adds_roles=adds_roles)
        return page_result(page, _same_search(args, account_id), by_date=False, compact=compact)
    digest = filters_digest(args, FILTER_FIELDS)
    try:
        page = search_page(
            app, searched, search.tree, digest, ranked_query=args.query is not None, adds_roles=adds_roles
        )
    except CharsetRejected:  # said in the page, never a silent empty one
        return charset_refused(account_id, searched_label(searched))
    return page_result(page, _same_search(args, account_id), by_date=args.sort == "date", compact=compact)


TOOL = ToolSpec(
    name=NAME,
    title=TITLE,
    description=DESCRIPTION,
    details=DETAILS,
    changes=(
        HIT_WARNINGS_CHANGE,
        "`query` is a query language now, not one substring: its plain words must each match (anywhere), so "
        '`query: "budget meeting"` finds a message with both words apart, and `"budget meeting"` in quotes '
        "finds the phrase; operators such as `from:`, `has:attachment`, `in:`, `is:unread`, `newer_than:` "
        "and `OR`/`-` are understood. `mailbox` has no default any more: a search with `query` and no "
        'mailbox covers every mailbox (as `mailbox: "*"`), where it covered INBOX; a search without `query` '
        "still covers INBOX.",
        'A search with `query` and no `sort` is `sort: "arrival"` (newest received first), also where the '
        'account keeps a local index: ask `sort: "relevance"` for the best match first. The index lists a '
        "page in the server's order, so a page is the same whichever answers.",
        "A search of several mailboxes continues from one position, on every server: its cursor is "
        "about 54 characters whatever the number of mailboxes (it grew by about 30 a mailbox), in arrival "
        "and in date order. A mailbox deleted or recreated since the first page (or, after a server "
        "restart, one created) makes the next page a `conflict` whose `next_action` runs the search "
        "again; mail filed meanwhile with an earlier date comes once, at its place.",
        "On a server without SORT (Gmail, Microsoft 365) a search of several mailboxes is in true arrival "
        "(or sent-date) order across them, also where a mailbox's arrival times do not follow its UIDs; in "
        "date order it is exact over every match (it was exact within blocks of 1,000, with a warning).",
        'On Gmail (X-GM-EXT-1), `mailbox: "*"` searches All Mail alone (each message once, archived mail '
        "included, where it skipped All Mail and found a labelled message once per label), and every "
        "summary carries the message's `labels` (X-GM-LABELS). Other servers answer as before.",
    ),
    input_model=SearchMessagesInput,
    data_model=SearchMessagesData,
    other_data_models=(CompactSearchData,),
    handle=handle,
    errors=ERRORS,
    summaries="messages",
    gated_arguments={"about": SEARCHING_BY_MEANING, "like": SEARCHING_BY_MEANING},
)

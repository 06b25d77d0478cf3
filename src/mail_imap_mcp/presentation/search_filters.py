"""The filter arguments of imap_search_messages as one query (``query`` parsed in the query language,
the other filters ANDed to it), and their fingerprint bound into cursors."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable
from datetime import UTC, date, datetime, timedelta
from typing import Protocol

from pydantic import BaseModel

from mail_imap_mcp.envelope import ToolFailure
from mail_imap_mcp.index.store import Unsupported
from mail_imap_mcp.mail.cursors import DIGEST_CHARS
from mail_imap_mcp.presentation.query_failures import meaning_filter_refused
from mail_imap_mcp.query import (
    EVERYTHING,
    Contains,
    DateBound,
    HasFlag,
    HasKeyword,
    NeedsReply,
    ParsedQuery,
    Query,
    SizeBound,
    TextField,
    all_of,
    is_everything,
    parse,
)


class SearchFilters(Protocol):
    """The filter arguments as the tool declares them."""

    @property
    def query(self) -> str | None: ...
    @property
    def from_(self) -> str | None: ...
    @property
    def to(self) -> str | None: ...
    @property
    def cc(self) -> str | None: ...
    @property
    def subject(self) -> str | None: ...
    @property
    def body(self) -> str | None: ...
    @property
    def since(self) -> date | None: ...
    @property
    def before(self) -> date | None: ...
    @property
    def last_days(self) -> int | None: ...
    @property
    def unread_only(self) -> bool: ...
    @property
    def flagged(self) -> bool | None: ...
    @property
    def has_keyword(self) -> str | None: ...
    @property
    def larger_than_bytes(self) -> int | None: ...
    @property
    def smaller_than_bytes(self) -> int | None: ...
    @property
    def needs_reply(self) -> bool: ...


def filters_query(args: SearchFilters, own_addresses: frozenset[str] = frozenset()) -> ParsedQuery:
    """The filter arguments as one query: ``query`` parsed (its ``in:`` the scope; a malformed one raises
    :class:`~mail_imap_mcp.query.QuerySyntaxError`), and every other filter given must match too."""
    for name, day in (("since", args.since), ("before", args.before)):
        if day is not None and day.year < 1000:
            # IMAP dates have a four-digit year; "01-Jan-1" would be a protocol error (BAD).
            raise ToolFailure.invalid_input(name, "the year must have four digits (1000 or later).")
    if args.last_days is not None and args.since is not None:
        raise ToolFailure.invalid_input(
            "last_days",
            "it cannot be combined with 'since'; use one of them.",
            conflicts_with="since",
        )
    today = datetime.now(UTC).date()
    parsed = parse(args.query, today=today) if args.query is not None else ParsedQuery(EVERYTHING)
    since = args.since
    if args.last_days is not None:
        since = today - timedelta(days=args.last_days)
    if since and args.before and since >= args.before:
        raise ToolFailure.invalid_input(
            "before",
            "it must be later than 'since' (or last_days), otherwise nothing can match.",
            conflicts_with="since",
        )
    low, high = args.larger_than_bytes, args.smaller_than_bytes
    if low is not None and high is not None and high <= low + 1:
        raise ToolFailure.invalid_input(
            "smaller_than_bytes",
            "it must exceed larger_than_bytes by more than 1.",
            conflicts_with="larger_than_bytes",
        )
    texts: dict[TextField, str | None] = {"from": args.from_, "to": args.to}
    texts |= {"cc": args.cc, "subject": args.subject, "body": args.body}
    parts: list[tuple[str, Query | None]] = [
        ("query", parsed.tree),
        *((field, Contains(field, value) if value else None) for field, value in texts.items()),
        (
            "last_days" if args.last_days is not None else "since",
            DateBound("since", since) if since else None,
        ),
        ("before", DateBound("before", args.before) if args.before else None),
        ("unread_only", HasFlag("seen", present=False) if args.unread_only else None),
        ("flagged", HasFlag("flagged", present=args.flagged) if args.flagged is not None else None),
        ("has_keyword", HasKeyword(args.has_keyword) if args.has_keyword else None),
        ("larger_than_bytes", SizeBound("larger", low) if low is not None else None),
        ("smaller_than_bytes", SizeBound("smaller", high) if high is not None else None),
        ("needs_reply", NeedsReply(own_addresses) if args.needs_reply else None),
    ]
    given = tuple((name, part) for name, part in parts if part is not None and not is_everything(part))
    return ParsedQuery(all_of(*(part for _, part in given)), parsed.scope, given)


def index_answers_filters(parsed: ParsedQuery, ranked_by: str, check: Callable[[Query], None]) -> None:
    """Refuse (``invalid_input`` naming the argument) a filter the local index cannot answer (``check``:
    the index engine's) in a search ``ranked_by`` meaning (``about`` or ``like``), which only the index
    answers: the server would answer it in any other search."""
    for name, part in parsed.arguments:
        try:
            check(part)
        except Unsupported as exc:
            why = f"{exc}; without '{ranked_by}' the server answers it"
            raise meaning_filter_refused(name, ranked_by, why) from exc


#: A word of a description (any letter or digit, in any script).
_WORD = re.compile(r"[^\W_]")


def by_meaning_checked(about: str | None, like: str | None, sort: str | None) -> bool:
    """Whether the search ranks by meaning (``about`` or ``like``): one of them, in relevance order
    (``sort`` as given, None: not given); ``invalid_input`` naming the argument otherwise."""
    if about is None and like is None:
        return False
    if about is not None and like is not None:
        raise ToolFailure.invalid_input(
            "like", "give either 'about' or 'like', not both.", conflicts_with="about"
        )
    if about is not None and not _WORD.search(about):
        raise ToolFailure.invalid_input(
            "about", "it has no word to rank by: describe the mail wanted in a few words."
        )
    given = "about" if about is not None else "like"
    if sort not in (None, "relevance"):
        raise ToolFailure.invalid_input(
            "sort",
            f"'{given}' ranks by meaning, best match first: leave sort out or give 'relevance'.",
            conflicts_with=given,
        )
    return True


def filters_digest(args: BaseModel, names: Iterable[str]) -> str:
    """Fingerprint of the filters as given (last_days stays relative), bound into the cursor."""
    filters = args.model_dump(by_alias=True, include={"from_"} | set(names) - {"from"}, mode="json")
    payload = json.dumps(filters, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:DIGEST_CHARS]

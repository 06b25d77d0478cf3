"""A query as IMAP SEARCH keys (RFC 3501 6.4.4, RFC 9051 6.4.4).

IMAP's top level is an implicit AND and its ``OR`` and ``NOT`` take one key each, so a conjunction
inside an ``OR`` would need parentheses. The tree is turned into a conjunction of disjunctions instead
(negations pushed down to single keys, ``OR`` of ``AND`` distributed), the shape IMAP states without
any: a flat query compiles to its keys in the order given, and each disjunction to a balanced ``OR``
tree (depth log2 of its keys, where a chain would nest as deep as there are keys).

User text stays ``str`` so the sender quotes it (or sends a literal); keywords, dates and atoms are bytes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mail_imap_mcp.query.tree import (
    GMAIL_TESTS,
    STRUCTURE_TESTS,
    AllOf,
    AnyOf,
    Contains,
    DateBound,
    HasFlag,
    HasKeyword,
    Header,
    NeedsReply,
    Not,
    Query,
    SizeBound,
)

Key = bytes | str | int
#: The most clauses a query may multiply out to (an OR of ANDs distributes into their product).
MAX_CLAUSES = 256

_FIELDS = {
    "text": b"TEXT",
    "from": b"FROM",
    "to": b"TO",
    "cc": b"CC",
    "bcc": b"BCC",
    "subject": b"SUBJECT",
    "body": b"BODY",
}
_FLAGS = {
    "seen": (b"SEEN", b"UNSEEN"),
    "answered": (b"ANSWERED", b"UNANSWERED"),
    "flagged": (b"FLAGGED", b"UNFLAGGED"),
    "deleted": (b"DELETED", b"UNDELETED"),
    "draft": (b"DRAFT", b"UNDRAFT"),
}
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_ATOM = re.compile(r"[A-Za-z0-9-]+")

#: A single test, and whether it is negated.
_Literal = tuple[Query, bool]
_Clause = tuple[_Literal, ...]


class QueryTooComplex(ValueError):
    """The query multiplies out to more than :data:`MAX_CLAUSES` IMAP clauses."""


class NotSearchable(ValueError):
    """The query holds a test IMAP SEARCH has no key for (:data:`~mail_imap_mcp.query.tree.STRUCTURE_TESTS`:
    the caller answers those from the messages' structure, :func:`mail_imap_mcp.query.structure.split`)."""


class GmailOnly(ValueError):
    """The query holds a test only Gmail's own search answers (a label or a category:
    :data:`~mail_imap_mcp.query.tree.GMAIL_TESTS`), on a server without it."""


def search_keys(query: Query) -> list[Key]:
    """The SEARCH keys of ``query``; an empty list matches every message."""
    keys: list[Key] = []
    for clause in _clauses(query, negated=False):
        if not clause:  # a disjunction of nothing: the query matches no message
            return [b"NOT", b"ALL"]
        keys += _any_of([_literal_keys(node, negated) for node, negated in clause])
    return keys


def _clauses(query: Query, *, negated: bool) -> list[_Clause]:
    """``query`` (negated or not) as a conjunction of disjunctions of single tests."""
    if isinstance(query, NeedsReply):
        return _clauses(query.expanded(), negated=negated)
    if isinstance(query, Not):
        return _clauses(query.part, negated=not negated)
    if isinstance(query, AllOf | AnyOf):
        conjunction = isinstance(query, AllOf) != negated
        parts = [_clauses(part, negated=negated) for part in query.parts]
        if conjunction:
            return [clause for part in parts for clause in part]
        return _distributed(parts)
    return [((query, negated),)]


def _distributed(parts: Sequence[list[_Clause]]) -> list[_Clause]:
    """The disjunction of conjunctions ``parts`` as one conjunction: a clause per choice of one clause
    from each part. A part with no clause always matches, and so does the disjunction."""
    if any(not part for part in parts):
        return []
    product: list[_Clause] = [()]
    for part in parts:
        if len(product) * len(part) > MAX_CLAUSES:
            raise QueryTooComplex(f"the query's OR of ANDs makes more than {MAX_CLAUSES} IMAP clauses")
        product = [done + clause for done in product for clause in part]
    return product


def _literal_keys(node: Query, negated: bool) -> list[Key]:
    if isinstance(node, HasFlag):
        return [_FLAGS[node.flag][node.present == negated]]
    if isinstance(node, HasKeyword):
        return [b"UNKEYWORD" if node.present == negated else b"KEYWORD", node.keyword.encode("ascii")]
    keys = _positive_keys(node)
    return [b"NOT", *keys] if negated else keys


def _positive_keys(node: Query) -> list[Key]:
    if isinstance(node, Contains):
        return [_FIELDS[node.field], node.value]
    if isinstance(node, Header):
        name: Key = node.name.upper().encode() if _ATOM.fullmatch(node.name) else node.name
        return [b"HEADER", name, node.value]
    if isinstance(node, DateBound):
        day = f"{node.day.day:02d}-{_MONTHS[node.day.month - 1]}-{node.day.year:04d}".encode()
        return [b"SINCE" if node.bound == "since" else b"BEFORE", day]
    if isinstance(node, SizeBound):
        return [b"LARGER" if node.bound == "larger" else b"SMALLER", node.octets]
    if isinstance(node, STRUCTURE_TESTS):
        raise NotSearchable(f"IMAP SEARCH has no key for {node!r}")
    if isinstance(node, GMAIL_TESTS):
        raise GmailOnly(f"only Gmail's search (X-GM-EXT-1) answers {node!r}")
    raise TypeError(f"not a single test: {node!r}")


def _any_of(keys: Sequence[list[Key]]) -> list[Key]:
    if len(keys) == 1:
        return list(keys[0])
    middle = len(keys) // 2
    return [b"OR", *_any_of(keys[:middle]), *_any_of(keys[middle:])]

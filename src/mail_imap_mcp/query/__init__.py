"""What to search for, as data: a query tree and its compilers (pure: imports nothing else of the server).

:mod:`.tree` holds the nodes (text in a field, a header, a flag, a keyword, a date or size bound, an
attachment or its file name, ``needs_reply``, and their AND, OR and NOT); :mod:`.parse` reads the
Gmail-style query language into a tree and a mailbox scope (:func:`parse`); :mod:`.imap` compiles a
tree into IMAP ``SEARCH`` keys, :mod:`.gmail` into Gmail's ``X-GM-RAW`` with IMAP keys beside it,
:mod:`.sieve` into a rule's Sieve test (what a rule cannot test refused naming the part), and
each local index engine into its own (``index/engines/sqlite/query.py``), each reading the same tree.
"""

from collections.abc import Callable, Sequence
from typing import Literal

from mail_imap_mcp.query.gmail import gmail_search_keys
from mail_imap_mcp.query.imap import GmailOnly, Key, QueryTooComplex, search_keys
from mail_imap_mcp.query.parse import (
    OPERATORS,
    Anywhere,
    InMailbox,
    ParsedQuery,
    QuerySyntaxError,
    Scope,
    parse,
)
from mail_imap_mcp.query.tree import (
    EVERYTHING,
    STRUCTURE_TESTS,
    AllOf,
    AnyOf,
    Category,
    Contains,
    DateBound,
    Filename,
    HasAttachment,
    HasFlag,
    HasKeyword,
    Header,
    Label,
    NeedsReply,
    Not,
    Query,
    SizeBound,
    TextField,
    all_of,
    is_everything,
    needs_utf8,
)

#: A query language a server's own search answers; ``imap``: RFC 9051 SEARCH keys (query.search_keys).
Dialect = Literal["imap", "gmail"]

#: Every query compiler, by the dialect it writes (which one a search uses: services/search_backend.py).
DIALECTS: dict[str, Callable[[Query], list[Key]]] = {"imap": search_keys, "gmail": gmail_search_keys}


def best_dialect(dialects: Sequence[Dialect], server: str) -> Dialect:
    """The first of ``dialects`` (a ``server``'s, best first) that a compiler of :data:`DIALECTS` writes."""
    for dialect in dialects:
        if dialect in DIALECTS:
            return dialect
    raise LookupError(f"no query compiler for the dialects of the {server} personality")


__all__ = [
    "DIALECTS",
    "EVERYTHING",
    "OPERATORS",
    "STRUCTURE_TESTS",
    "AllOf",
    "AnyOf",
    "Anywhere",
    "Category",
    "Contains",
    "DateBound",
    "Dialect",
    "Filename",
    "GmailOnly",
    "HasAttachment",
    "HasFlag",
    "HasKeyword",
    "Header",
    "InMailbox",
    "Key",
    "Label",
    "NeedsReply",
    "Not",
    "ParsedQuery",
    "Query",
    "QuerySyntaxError",
    "QueryTooComplex",
    "Scope",
    "SizeBound",
    "TextField",
    "all_of",
    "best_dialect",
    "gmail_search_keys",
    "is_everything",
    "needs_utf8",
    "parse",
    "search_keys",
]

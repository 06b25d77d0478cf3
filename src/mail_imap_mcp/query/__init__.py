"""What to search for, as data: a query tree and its compilers (pure: imports nothing else of the server).

:mod:`.tree` holds the nodes (text in a field, a header, a flag, a keyword, a date or size bound,
``needs_reply``, and their AND, OR and NOT); :mod:`.imap` compiles a tree into IMAP ``SEARCH`` keys.
The query language's parser and the compilers for a local index (FTS5) and Gmail (``X-GM-RAW``) go
beside them, each reading the same tree.
"""

from collections.abc import Callable

from mail_imap_mcp.query.imap import QueryTooComplex, search_keys
from mail_imap_mcp.query.tree import (
    EVERYTHING,
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
    TextField,
    all_of,
    is_everything,
    needs_utf8,
)

#: Every query compiler, by the dialect it writes (which one a search uses: services/search_backend.py).
DIALECTS: dict[str, Callable[[Query], object]] = {"imap": search_keys}

__all__ = [
    "DIALECTS",
    "EVERYTHING",
    "AllOf",
    "AnyOf",
    "Contains",
    "DateBound",
    "HasFlag",
    "HasKeyword",
    "Header",
    "NeedsReply",
    "Not",
    "Query",
    "QueryTooComplex",
    "SizeBound",
    "TextField",
    "all_of",
    "is_everything",
    "needs_utf8",
    "search_keys",
]

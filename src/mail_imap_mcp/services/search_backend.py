"""Which backend answers a search, chosen in one place for every search the tools run.

A backend is a query dialect and the engine that answers it: ``imap``, the server's own ``UID SEARCH``
with the query compiled by :func:`mail_imap_mcp.query.search_keys`. The server's personality says which
dialects its search understands, best first; the first one this server can compile a query to wins.
The local index and Gmail's own search are further dialects that join here (and their compilers in
``query/``), so no tool and no IMAP module chooses.
"""

from __future__ import annotations

from mail_imap_mcp.imap.personality import Personality
from mail_imap_mcp.imap.personality.standard import Dialect
from mail_imap_mcp.query import DIALECTS


def choose_backend(personality: Personality) -> Dialect:
    """The dialect a search of this server is answered in: its personality's best one with a compiler."""
    for dialect in personality.search_dialects:
        if dialect in DIALECTS:
            return dialect
    raise LookupError(f"no query compiler for the dialects of the {personality.name} personality")

"""Search: what a page of matches reads and how it continues.

:mod:`.plan` holds the window rules as data (no session); :mod:`.pages` reads one mailbox's page with
them; :mod:`.cursors` holds every cursor a search hands out (stateless, checksummed).
"""

from mail_imap_mcp.imap.search.cursors import (
    CURSOR_VERSION,
    PACKED_TAG,
    CursorError,
    CursorState,
    StreamCursor,
    StreamState,
    seal,
    seal_packed,
    unseal,
    unseal_packed,
)
from mail_imap_mcp.imap.search.pages import SearchPage, newest_matches, newest_of, search_page
from mail_imap_mcp.imap.search.plan import (
    MIN_FILTERED_WINDOW,
    WINDOW_GROWTH,
    UidWindows,
    first_window,
    reads_at_once,
)

__all__ = [
    "CURSOR_VERSION",
    "MIN_FILTERED_WINDOW",
    "PACKED_TAG",
    "WINDOW_GROWTH",
    "CursorError",
    "CursorState",
    "SearchPage",
    "StreamCursor",
    "StreamState",
    "UidWindows",
    "first_window",
    "newest_matches",
    "newest_of",
    "reads_at_once",
    "seal",
    "seal_packed",
    "search_page",
    "unseal",
    "unseal_packed",
]

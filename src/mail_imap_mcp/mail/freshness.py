"""How long a watched view of an account's mailboxes vouches for its counts, whatever tells it of changes
(IMAP's NOTIFY in ``imap/push_view.py``): past :data:`RECHECK_S` it lists and asks them again; a search
that took counts older than :data:`CHECKED_RECENTLY_S` says so (``services/index_search.py``)."""

from __future__ import annotations

#: Seconds the view vouches for its counts after a LIST and STATUS of every folder: past them, the next
#: listing asks them again (the server's silence alone proves no folder unchanged).
RECHECK_S = 30.0
#: Past this many seconds since that LIST and STATUS, a search that took the view's counts says so: a
#: change the server never told may be missing (for up to :data:`RECHECK_S`).
CHECKED_RECENTLY_S = 5.0

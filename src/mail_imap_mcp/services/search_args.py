"""What the search services read of imap_search_messages' arguments (declared in
tools/search_messages.py), one declaration for the server's search, the index's and where they look."""

from __future__ import annotations

from typing import Literal, Protocol

#: ``mailbox: "*"``: every mailbox (but Trash and Junk).
ALL_MAILBOXES = "*"
#: A search of every mailbox covers at most this many (all read in the same few round trips).
MAX_MAILBOXES = 100
#: The longest cursor accepted: a page of one mailbox keeps its name (up to 1,000 characters, at most 4
#: bytes each in UTF-8) in base64; a page of several keeps one position, a few dozen characters.
MAX_CURSOR_CHARS = 8192


class PageArgs(Protocol):
    """The arguments of imap_search_messages every search reads as given, wherever it looks."""

    @property
    def mailboxes(self) -> list[str] | None: ...
    @property
    def sort(self) -> Literal["arrival", "date", "relevance"]: ...
    @property
    def limit(self) -> int: ...
    @property
    def snippet_chars(self) -> int: ...
    @property
    def cursor(self) -> str | None: ...


class ScopeArgs(PageArgs, Protocol):
    """The arguments as the tool was given them: ``mailbox`` may be left out for the query's ``in:``
    (:func:`~mail_imap_mcp.services.search_scope.searched_where` resolves it)."""

    @property
    def mailbox(self) -> str | None: ...
    @property
    def query(self) -> str | None: ...
    @property
    def about(self) -> str | None: ...
    @property
    def like(self) -> str | None: ...


class SearchArgs(PageArgs, Protocol):
    """The arguments a search reads once it is known where it looks (the server's search and the
    index's)."""

    @property
    def account_id(self) -> str: ...
    @property
    def mailbox(self) -> str: ...

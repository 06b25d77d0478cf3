"""What the search services read of imap_search_messages' arguments (declared in
tools/search_messages.py), one Protocol for the server's search and the index's."""

from __future__ import annotations

from typing import Literal, Protocol

#: ``mailbox: "*"``: every mailbox (but Trash and Junk).
ALL_MAILBOXES = "*"


class SearchArgs(Protocol):
    """The arguments of imap_search_messages a search reads."""

    @property
    def account_id(self) -> str: ...
    @property
    def mailbox(self) -> str: ...
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

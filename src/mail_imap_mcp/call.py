"""What a tool handler, and each service it names, uses of its call: :class:`Call`, a narrow view of the
application (the per-call ``AppContext`` the registry builds provides it), so no tool depends on the
composition root.

Each part a small Protocol: the caller, the settings they see and their connections; a write's connection
(the gate of the tool's own capability); the local index; background operations (progress, cancellation); the
state instances share; ``ask`` (the one way to ask the user).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol, overload

from mail_imap_mcp.asking.records import Ask, Asked, Confirm
from mail_imap_mcp.config import Config
from mail_imap_mcp.operations import OperationRegistry
from mail_imap_mcp.state import Caller, Store

if TYPE_CHECKING:
    from mail_imap_mcp.imap.connection import AccountConnection
    from mail_imap_mcp.imap.pool import ConnectionPool
    from mail_imap_mcp.index.engine import IndexEngine
    from mail_imap_mcp.index.runtime import AccountIndex
    from mail_imap_mcp.mail.backend import MailBackend
    from mail_imap_mcp.mail.sieve import SieveScripts
    from mail_imap_mcp.net.one_click import OneClickClient

__all__ = ["Asker", "Asking", "Call", "Connections", "Indexing", "Operating", "Storing", "Writing"]


class Asker(Protocol):
    """A call's way to ask its user (:mod:`mail_imap_mcp.asking`): an :class:`Ask` answers
    :class:`~mail_imap_mcp.asking.records.Done` (what its ``then`` answered) or
    :class:`~mail_imap_mcp.asking.records.Waiting` (the background operation waiting for the user); a
    :class:`Confirm` returns once confirmed. Not approved or not confirmed: it raises."""

    @overload
    def __call__(self, request: Ask, /) -> Asked: ...
    @overload
    def __call__(self, request: Confirm, /) -> None: ...


class Connections(Protocol):
    """Whose call it is, the settings they see and their connections."""

    @property
    def caller(self) -> Caller:
        """Whose call it is."""
        ...

    @property
    def config(self) -> Config:
        """The settings as the caller sees them: their accounts only."""
        ...

    def resolve_account(self, account_id: str) -> str:
        """``account_id`` as configured (the one account, for the default name)."""
        ...

    def connection(self, account_id: str) -> AccountConnection:
        """The account's connection; ``AccountUnknown`` when none is configured."""
        ...

    def mail(self, account_id: str) -> MailBackend:
        """The account's mail as services reach it whatever the protocol (``mail/backend.py``);
        ``AccountUnknown`` when none is configured."""
        ...

    def sieve(self, account_id: str) -> AbstractContextManager[SieveScripts]:
        """The account's Sieve scripts (``mail/sieve.py``, whatever the protocol), closed on leaving;
        ``AccountUnknown`` when none is configured."""
        ...

    def sieve_offered(self, account_id: str) -> frozenset[str]:
        """The Sieve extensions the account's server announced when a session of this process last
        reached it (a session opened to learn them where none has): what a rule may use."""
        ...

    @property
    def pool(self) -> ConnectionPool:
        """The caller's connections (and the account's token source, for submission)."""
        ...

    @property
    def one_click(self) -> OneClickClient:
        """The one-click unsubscribe request's client (the one web request the server makes)."""
        ...


class Writing(Protocol):
    """A write tool's connections."""

    def write_connection(self, account_id: str) -> AccountConnection:
        """The account's connection for a write: the refusal of the tool's own capability's gate where its
        switch is off for the account."""
        ...


class Indexing(Protocol):
    """The local indexes as the caller reaches them."""

    def index_of(self, account_id: str, *, start: bool = True) -> AccountIndex | None:
        """The account's local index as the caller reaches it (None: it keeps none)."""
        ...

    def index_state(self, account_id: str) -> str:
        """What the account's index is doing, in a word."""
        ...

    @property
    def index_engine(self) -> IndexEngine:
        """The engine of every index."""
        ...


class Operating(Protocol):
    """Background operations."""

    @property
    def operations(self) -> OperationRegistry:
        """Background operations: started, polled, cancelled, their progress."""
        ...


class Storing(Protocol):
    """The state instances share, and what a cursor keeps there."""

    @property
    def store(self) -> Store:
        """The state instances share."""
        ...

    @property
    def lasting_store(self) -> Store:
        """What must outlive the process and reach every process (a send's record)."""
        ...

    def mailbox_list(self, account_id: str, digest: str) -> tuple[str, ...] | None:
        """The mailbox list a position cursor's first page kept (None: list again)."""
        ...

    def remember_mailbox_list(self, account_id: str, digest: str, names: Sequence[str]) -> None:
        """Keep a first page's mailbox list for its cursor's next pages."""
        ...


class Asking(Protocol):
    """The call's way to ask its user."""

    @property
    def ask(self) -> Asker:
        """Ask the user (the only way a tool or a service does)."""
        ...


class Call(Connections, Writing, Indexing, Operating, Storing, Asking, Protocol):
    """One tool call as its handler and services see it (a service that needs less names the part)."""

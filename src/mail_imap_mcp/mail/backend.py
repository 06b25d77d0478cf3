"""How services reach mail, whatever the protocol: narrow Protocols per family (reading, writing,
watching), on one account. ``imap/backend.py`` implements them over an account's IMAP connection; a test's
in-memory backend (``tests/support/mail/memory_mail.py``) implements them too, and one contract suite
(``tests/integration/backends/test_mail_contract.py``) holds both to the same cases, as httpx's ``MockTransport``
stands behind its transport seam.

A message is named by ``(mailbox, uid)`` within a mailbox's ``uidvalidity``: what every protocol can give
(JMAP's ids map onto it by the backend). Failures are the domain errors of :mod:`.errors`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from mail_imap_mcp.mail.mailboxes import MailboxInfo
from mail_imap_mcp.mail.records import SummaryRecord
from mail_imap_mcp.query import Query

#: How a flag change applies: add the flags, remove them, or make them the message's only ones.
FlagOperation = Literal["add", "remove", "replace"]


@dataclass(frozen=True)
class MailboxStatus:
    """How a mailbox stands: its message count, unseen count, UIDVALIDITY, next UID and, where the
    backend keeps it, its highest MODSEQ."""

    messages: int
    unseen: int
    uidvalidity: int
    uidnext: int
    highestmodseq: int | None


@dataclass(frozen=True)
class MessageFlags:
    """A message's flags (system flags as ``\\Seen``, keywords as given; never ``\\Recent``) and its
    MODSEQ where the backend keeps one."""

    uid: int
    flags: frozenset[str]
    modseq: int | None


@dataclass(frozen=True)
class Copied:
    """Where copied or moved messages landed: the destination's UIDVALIDITY and each source UID's new
    UID there."""

    uidvalidity: int
    uids: dict[int, int]


@dataclass(frozen=True)
class Appended:
    """The message an append made: its mailbox's UIDVALIDITY and its UID."""

    uidvalidity: int
    uid: int


@dataclass(frozen=True)
class Changed:
    """What changed in a mailbox since a MODSEQ: each changed message's flags, and the mailbox's
    highest MODSEQ now (the next call's starting point)."""

    flags: dict[int, MessageFlags]
    highestmodseq: int


class MailReading(Protocol):
    """Reading: the mailboxes, a mailbox's status, which messages match a query, their summaries and
    their parts."""

    def mailboxes(self) -> list[MailboxInfo]:
        """Every mailbox of the account, its role (``special_use``) named where the backend knows it."""
        ...

    def status(self, mailbox: str) -> MailboxStatus:
        """How ``mailbox`` stands; :class:`~.errors.MailboxMissing` when there is none."""
        ...

    def search(self, mailbox: str, query: Query) -> list[int]:
        """The UIDs of ``mailbox`` that match ``query``, ascending."""
        ...

    def flags(self, mailbox: str, uids: Sequence[int]) -> dict[int, MessageFlags]:
        """The flags of those of ``uids`` that exist in ``mailbox``."""
        ...

    def summaries(
        self, mailbox: str, uids: Sequence[int], snippet_chars: int, tag: str = ""
    ) -> list[SummaryRecord]:
        """The summaries of those of ``uids`` that exist in ``mailbox``, in that order (``snippet_chars``:
        how much of the text each starts with; ``tag``: the caller's in their ids, ``mail/ids.py``)."""
        ...

    def raw(self, mailbox: str, uid: int) -> bytes | None:
        """The whole message as stored, without marking it seen; None when it does not exist."""
        ...

    def header(self, mailbox: str, uid: int) -> bytes | None:
        """The message's header section (up to and with the blank line); None when it does not exist."""
        ...


class MailWriting(Protocol):
    """Writing: flags and keywords, copy and move, append, and removing exactly given messages."""

    def store(self, mailbox: str, uids: Sequence[int], change: FlagOperation, flags: Sequence[str]) -> None:
        """Change the flags of ``uids`` in ``mailbox`` (those that exist)."""
        ...

    def copy(self, mailbox: str, uids: Sequence[int], destination: str) -> Copied:
        """Copy ``uids`` to ``destination``; :class:`~.write_errors.DestinationMissing` when it is none."""
        ...

    def move(self, mailbox: str, uids: Sequence[int], destination: str) -> Copied:
        """Move ``uids`` to ``destination``; they are gone from ``mailbox``."""
        ...

    def append(self, mailbox: str, message: bytes, flags: Sequence[str] = ()) -> Appended:
        """Add ``message`` to ``mailbox`` with ``flags``."""
        ...

    def expunge(self, mailbox: str, uids: Sequence[int]) -> None:
        """Remove exactly ``uids`` for good (other messages marked ``\\Deleted`` stay)."""
        ...


class MailWatching(Protocol):
    """Watching: what changed in a mailbox since a MODSEQ (CONDSTORE's ``CHANGEDSINCE``)."""

    def changed_since(self, mailbox: str, modseq: int) -> Changed:
        """The messages of ``mailbox`` whose flags changed after ``modseq``."""
        ...


class MailBackend(MailReading, MailWriting, MailWatching, Protocol):
    """Every family on one account."""

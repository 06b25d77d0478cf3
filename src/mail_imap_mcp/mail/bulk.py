"""Acting on every message a search finds, whatever the protocol: the search (:class:`BulkSearch`), the set
it fixes (:class:`SearchSet`), what a run on it did (:class:`SetRun`), and the backend family that runs
it (:class:`MailRuns`), each step its own call on the account so each has the call's time budget.

The loop over the set's chunks (their sizes, a cancel, a lost answer settled, the counts) is
``operations/bulk.py``'s; what each step sends, and how a chunk whose answer was lost is found out and
finished, is the backend's (``imap/bulk_runs.py``: SEARCH, UID MOVE or COPY + STORE + EXPUNGE, STORE;
the tests' ``tests/support/mail/memory_runs.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.mail.write_records import Copied, FlagOperation
from mail_imap_mcp.query import Query

#: UIDs per search or read of the set's messages (one command), and most UIDs a chunk acts on.
CHUNK = 500


@dataclass(frozen=True)
class BulkSearch:
    """A search to act on: ``query`` (as given, and parsed) in one ``mailbox`` of ``account_id``."""

    account_id: str
    mailbox: str
    query: str
    tree: Query


@dataclass(frozen=True)
class SearchSet:
    """The messages a search found in one mailbox, as the backend's search answered."""

    mailbox: str
    uidvalidity: int
    uids: tuple[int, ...]


@dataclass
class SetRun:
    """What a run on a set did, in counts (its UIDs where an undo needs them)."""

    matched: int
    done: int = 0
    #: Matches not in the approved set, found when the run started or when it ended: left alone.
    came_meanwhile: int = 0
    #: Of the set: gone, or no longer matching, when the run searched again: left alone.
    gone: int = 0
    #: Sent when the connection was lost, and not found out after: may or may not have happened.
    unknown: int = 0
    #: Not sent (cancelled, or after a lost connection).
    not_attempted: int = 0
    cancelled: bool = False
    lost: bool = False
    #: The answer that did not come was late (``command_timeout_s``), not cut by a lost connection.
    timed_out: bool = False
    #: The UIDs acted on (in the searched mailbox).
    acted: list[int] = field(default_factory=list)
    #: Where a move said them, the new UIDs in the destination, and its UIDVALIDITY.
    new_uids: list[int] = field(default_factory=list)
    #: The same, each by the UID it had in the searched mailbox (a move by ids answers each message's new id).
    moved_to: dict[int, int] = field(default_factory=dict)
    #: UIDs a move's answer left out of its COPYUID: gone from the mailbox before the command reached them.
    vanished: list[int] = field(default_factory=list)
    #: The UIDs whose outcome is unknown (the chunk whose answer was lost and could not be found out).
    unknown_uids: list[int] = field(default_factory=list)
    new_uidvalidity: int | None = None
    #: Moved messages whose new UID the backend did not say (IMAP without UIDPLUS): the undo cannot name them.
    unnamed: int = 0
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class LinkUse:
    """What the backend's link has cost so far: the waits for the server, and the shortest (about one
    round trip; 0.0 where there is no network). A run subtracts a chunk's waits from its time to size the
    next chunk by the server's work alone."""

    round_trips: int
    round_trip_s: float


@dataclass
class FlagChanges:
    """Which messages of a flag run each flag (or label) really changed on: what its undo reverts."""

    flags: dict[str, set[int]]


class ChunkAction(Protocol):
    """What a run does to its set, chunk by chunk: ``prepare`` once before the first chunk, ``send`` a
    chunk's change once (the set's mailbox checked to be the one of its UIDVALIDITY first; a move answers
    where its messages landed), and ``settle`` a chunk whose answer was lost: find out afresh what happened
    and finish it (what it answers is done); ``link`` says what the link cost, to size the chunks. ``send`` raises :class:`~.errors.OutcomeUnknown` when the
    answer was lost after the change was sent."""

    def prepare(self, targets: list[int]) -> None: ...
    def send(self, uids: list[int]) -> Copied | None: ...
    def settle(self, uids: list[int]) -> Copied | None: ...
    def link(self) -> LinkUse:
        """The waits for the server so far, and about the link's round trip (see :class:`LinkUse`)."""
        ...


class MailRuns(Protocol):
    """Runs on a whole search: the set fixed, searched again when the run starts and ends, and the
    actions on its chunks; where a move or delete by search takes its messages."""

    def fixed(self, mailbox: str, query: Query) -> SearchSet:
        """The UIDs of ``mailbox`` that match ``query`` now, with the mailbox's UIDVALIDITY."""
        ...

    def targets(self, approved: SearchSet, query: Query | None) -> tuple[list[int], set[int]]:
        """Those of ``approved`` that still match ``query`` (None: that still exist), ascending, and the
        matches not in the set; :class:`~.errors.UidValidityChanged` naming the mailbox when it is no
        longer the one of the set (nothing is acted on)."""
        ...

    def arrived(self, approved: SearchSet, query: Query) -> set[int]:
        """The matches of ``query`` not in ``approved`` now (none where the mailbox was made again)."""
        ...

    def moving(self, approved: SearchSet, to: str) -> ChunkAction:
        """Moving the set's messages to ``to``: none lost, none copied twice, also where a chunk's answer
        was lost."""
        ...

    def flagging(
        self, approved: SearchSet, operation: FlagOperation, flags: tuple[str, ...], changes: FlagChanges
    ) -> ChunkAction:
        """Adding or removing ``flags`` on the set's messages, noting in ``changes`` which message each
        flag changed on."""
        ...

    def deletes_to(self, account: AccountConfig | None) -> str:
        """The mailbox a delete (not permanent) moves messages to (Trash, by its role or ``account``'s
        setting); :class:`~.write_errors.RoleMailboxMissing` when there is none."""
        ...

    def selectable(self, name: str) -> str | None:
        """The backend's spelling of mailbox ``name`` where it exists and can be selected."""
        ...

"""How services reach mail, whatever the protocol: narrow Protocols per family (reading, writing,
mailboxes, watching), on one account. ``imap/backend.py`` implements them over an account's IMAP connection; a test's
in-memory backend (``tests/support/mail/memory_mail.py``) implements them too, and one contract suite
(``tests/support/shared/mail_contract.py``) holds both to the same cases, as httpx's ``MockTransport``
stands behind its transport seam.

A message is named by ``(mailbox, uid)`` within a mailbox's ``uidvalidity``: what every protocol can give
(JMAP's ids map onto it by the backend). Failures are the domain errors of :mod:`.errors`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import BinaryIO, Literal, Protocol, TypeVar

from mail_imap_mcp.mail.bulk import MailRuns
from mail_imap_mcp.mail.drafts import MailDrafts
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.mailboxes import MailboxInfo
from mail_imap_mcp.mail.pages import MailPages
from mail_imap_mcp.mail.parts import PartRead, PartWindow
from mail_imap_mcp.mail.reading import ReadOptions
from mail_imap_mcp.mail.records import MessageRecord, SummaryRecord
from mail_imap_mcp.mail.replies import Candidate
from mail_imap_mcp.mail.write_records import Copied as Copied
from mail_imap_mcp.mail.write_records import FlagOperation as FlagOperation
from mail_imap_mcp.query import Query

T = TypeVar("T")

#: How setting a keyword once went: set by this call; held already (the message carries it, or another
#: client changed the message first); unsupported where the backend cannot make the setting exclusive.
MarkedOnce = Literal["set", "held", "unsupported"]
#: What a move or copy into a mailbox is where it is more than one: a delete (Gmail's Trash), a report as
#: spam (Gmail's Spam).
Landing = Literal["delete", "spam"]
#: How much of a message's header section :meth:`MailReading.headers` reads.
MAX_HEADER_BYTES = 256 * 1024


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

    def headers(
        self, mailbox: str, uidvalidity: int, uids: Sequence[int], per_read: int
    ) -> dict[int, dict[str, list[str]]]:
        """The header sections of those of ``uids`` that exist in ``mailbox`` (each its first
        :data:`MAX_HEADER_BYTES`, by lower-cased field name), read ``per_read`` messages at a time;
        :class:`~.errors.UidValidityChanged` when the mailbox is no longer the one of ``uidvalidity``."""
        ...

    def header_fields(self, ref: MessageRef, names: Sequence[str]) -> dict[str, list[str]] | None:
        """The header fields ``names`` of ``ref`` (by lower-cased name, each value as written, in order);
        ``ref`` checked first (:class:`~.errors.MailboxMissing`, :class:`~.errors.UidValidityChanged`);
        None when the message is not there."""
        ...

    def part(self, ref: MessageRef, part_id: str, sink: BinaryIO, window: PartWindow) -> PartRead:
        """The ``window`` of attachment ``part_id`` of ``ref`` decoded into ``sink`` from its position on (a
        read run again starts the sink over). ``ref`` is checked first (:class:`~.errors.MailboxMissing`,
        :class:`~.errors.UidValidityChanged`); a gone message, an unknown part or one that is no
        attachment are the part errors of :mod:`.part_errors`, naming ``ref``."""
        ...

    def source(
        self, ref: MessageRef, sink: BinaryIO, accept: Callable[[int], None], told: Callable[[int, int], None]
    ) -> int:
        """The message ``ref`` names, byte for byte as kept, written into ``sink`` from its position on a
        chunk at a time (a read run again starts the sink over); ``accept`` sees its size first and raises
        to refuse it before more is read, ``told`` the bytes written so far and that size. Returns the
        bytes written; ``ref`` checked first (:class:`~.errors.MailboxMissing`,
        :class:`~.errors.UidValidityChanged`), :class:`~.errors.MessageGone` when it is not there."""
        ...

    def message(self, ref: MessageRef, options: ReadOptions) -> tuple[MessageRecord, list[str]]:
        """The message ``ref`` names as ``options`` read it (its summary without a snippet, the headers
        asked for, the decoded body parts, the attachments) and what the read could not do fully;
        ``ref`` checked first (:class:`~.errors.MailboxMissing`, :class:`~.errors.UidValidityChanged`),
        :class:`~.errors.MessageGone` when it is not there."""
        ...

    def answered(
        self, sent: Callable[[list[MailboxInfo]], str | None], candidates: Sequence[Candidate]
    ) -> set[str] | None:
        """The keys of those ``candidates`` a message of the Sent mailbox answers (``mail/replies.py``),
        the mailbox the one ``sent`` picks of the account's mailboxes; None when it picks none."""
        ...


class MailWriting(Protocol):
    """Writing: flags and keywords, copy and move, append, and removing exactly given messages."""

    def store(self, mailbox: str, uids: Sequence[int], change: FlagOperation, flags: Sequence[str]) -> None:
        """Change the flags of ``uids`` in ``mailbox`` (those that exist)."""
        ...

    def copy(self, mailbox: str, uids: Sequence[int], destination: str) -> Copied:
        """Copy ``uids`` to ``destination`` (those that exist: each named in the answer's ``uids``, or in its
        ``unnamed`` where the server did not say the new UID); :class:`~.write_errors.DestinationMissing`
        when it is none."""
        ...

    def move(self, mailbox: str, uids: Sequence[int], destination: str) -> Copied:
        """Move ``uids`` to ``destination``; they are gone from ``mailbox`` (named as by :meth:`copy`)."""
        ...

    def append(self, mailbox: str, message: bytes, flags: Sequence[str] = ()) -> Appended:
        """Add ``message`` to ``mailbox`` with ``flags``."""
        ...

    def expunge(self, mailbox: str, uids: Sequence[int]) -> None:
        """Remove exactly ``uids`` for good (other messages marked ``\\Deleted`` stay)."""
        ...

    def check_expunge(self) -> None:
        """Refuse (:class:`~.write_errors.ExtensionMissing`, nothing changed) where :meth:`expunge` cannot
        remove exactly the given messages on this backend (IMAP: without UIDPLUS)."""
        ...

    def landing(self, destination: str) -> tuple[Landing, str] | None:
        """What a move or copy into ``destination`` is besides a move or copy, with the mailbox's name as
        the backend spells it; None where it is only that."""
        ...

    def append_limit(self) -> int | None:
        """The most bytes one append may carry, where the backend says (IMAP: ``APPENDLIMIT``); None
        where it names none."""
        ...

    def mark_once(self, ref: MessageRef, keyword: str) -> MarkedOnce:
        """Set ``keyword`` on ``ref`` only where no client changed the message since it was read without
        it (IMAP: ``STORE (UNCHANGEDSINCE m)`` of CONDSTORE): of two callers the second is ``held``.
        ``unsupported`` where the backend keeps no MODSEQ or the mailbox keeps no such keyword;
        :class:`~.errors.MessageGone` where ``ref`` is not there, :class:`~.errors.UidValidityChanged`
        where its mailbox is no longer the one ``ref`` was read in."""
        ...

    def unmark(self, ref: MessageRef, keyword: str) -> None:
        """Take ``keyword`` off ``ref`` where it is there, in the mailbox ``ref`` was read in."""
        ...


class MailboxChanges(Protocol):
    """Mailboxes made, renamed and deleted, listed, and counted as a fresh look at one sees them."""

    def mailboxes(self) -> list[MailboxInfo]:
        """Every mailbox of the account, as :meth:`MailReading.mailboxes`."""
        ...

    def create_mailbox(self, mailbox: str) -> None:
        """Make ``mailbox``; :class:`~.errors.CommandRefused` where there is one (``EXISTS``, but on
        Courier, which gives no reason)."""
        ...

    def rename_mailbox(self, mailbox: str, new_name: str) -> None:
        """Rename ``mailbox`` to ``new_name``, its messages (same UIDs) and child mailboxes with it;
        :class:`~.errors.MailboxMissing` where there is none (Courier answers OK, and nothing changes),
        :class:`~.errors.CommandRefused` (``EXISTS``) where ``new_name`` is taken."""
        ...

    def delete_mailbox(self, mailbox: str) -> None:
        """Delete ``mailbox``; :class:`~.errors.MailboxMissing` where there is none. Made again, it has
        another UIDVALIDITY. (Servers differ on a mailbox with messages or children: delete an empty one.)"""
        ...

    def messages(self, mailbox: str) -> int:
        """How many messages ``mailbox`` holds as a fresh look sees them (IMAP: EXAMINE, not STATUS,
        which Dovecot answers from an index that can miss a message just written);
        :class:`~.errors.MailboxMissing` where there is none."""
        ...


class MailMailboxes(MailboxChanges, Protocol):
    """The changes of mailboxes, each alone or several in one go."""

    def changing_mailboxes(self, work: Callable[[MailboxChanges], T]) -> T:
        """``work`` run with the changes on one connection, in order, none replayed (IMAP: one write run:
        a connection lost after a change was sent is :class:`~.errors.OutcomeUnknown`, and no other call
        of the account comes between two of its steps)."""
        ...


class MailWatching(Protocol):
    """Watching: what changed in a mailbox since a MODSEQ (CONDSTORE's ``CHANGEDSINCE``)."""

    def changed_since(self, mailbox: str, modseq: int) -> Changed:
        """The messages of ``mailbox`` whose flags changed after ``modseq``."""
        ...


class MailBackend(
    MailReading, MailWriting, MailMailboxes, MailWatching, MailDrafts, MailRuns, MailPages, Protocol
):
    """Every family on one account (mailboxes: :class:`MailMailboxes`; drafts: ``mail/drafts.py``; runs on a whole search: ``mail/bulk.py``;
    search pages: ``mail/pages.py``)."""

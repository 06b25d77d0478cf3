"""The drafts family of the mail backend (``mail/backend.py``): saving a draft in Drafts, finding a message
by its Message-ID where the backend does not say where a message landed, reading what sending checks of
a draft and its bytes into a file, moving a replaced draft alone to Trash, and the marks a send leaves on
the message it answers or forwards. ``imap/drafts.py`` implements it over IMAP,
``tests/support/mail/memory_drafts.py`` in memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mime.message_file import MessageFile

DRAFT_FLAG = "\\Draft"
#: The flags a saved draft carries.
DRAFT_FLAGS = (DRAFT_FLAG, "\\Seen")
#: How marking the message a send answers or forwards went: marked; its mailbox keeps no such flag or
#: keyword (left alone); no mailbox searched holds it.
Marked = Literal["marked", "not_found", "not_kept"]


def is_draft(flags: Iterable[str]) -> bool:
    """Whether ``flags`` hold ``\\Draft`` (in any case)."""
    return any(flag.lower() == DRAFT_FLAG.lower() for flag in flags)


@dataclass(frozen=True)
class Located:
    """The messages of a mailbox carrying one Message-ID: the mailbox's UIDVALIDITY and their UIDs."""

    uidvalidity: int
    uids: list[int]


@dataclass(frozen=True)
class Stored:
    """A message as kept: its size in bytes and its flags (system flags and keywords)."""

    size: int
    flags: frozenset[str]


@dataclass(frozen=True)
class Moved:
    """A message moved alone: where it landed (the destination's UIDVALIDITY and its UID), None where the
    backend did not say (IMAP without UIDPLUS: no COPYUID)."""

    landed: tuple[int, int] | None


class MailDrafts(Protocol):
    """Drafts: saving, locating, the facts a send checks, retiring a replaced draft, marking originals."""

    def save_draft(self, mailbox: str, message: bytes | bytearray) -> tuple[int, int] | None:
        """Add ``message`` to the Drafts mailbox ``mailbox`` flagged :data:`DRAFT_FLAGS`, sent once and
        never again (:class:`~.errors.OutcomeUnknown` when the connection was lost after it was sent);
        :class:`~.write_errors.AppendRefused` naming ``drafts_mailbox`` when refused or missing. Where it
        landed (UIDVALIDITY, UID); None where the backend does not say (IMAP without UIDPLUS)."""
        ...

    def with_message_id(self, mailbox: str, header_id: str) -> Located:
        """The messages of ``mailbox`` whose Message-ID holds ``header_id``."""
        ...

    def stored(self, ref: MessageRef) -> Stored:
        """The size and flags of ``ref``; ``ref`` checked first (:class:`~.errors.MailboxMissing`,
        :class:`~.errors.UidValidityChanged`), :class:`~.errors.MessageGone` when it is not there."""
        ...

    def source_file(self, ref: MessageRef) -> MessageFile:
        """The message ``ref`` names, byte for byte as kept, written a chunk at a time into a message file
        of its own (a new one on each try; never held whole); ``ref`` checked first
        (:class:`~.errors.MailboxMissing`, :class:`~.errors.UidValidityChanged`),
        :class:`~.errors.MessageGone` when it is not there."""
        ...

    def check_exact_move(self, what: str) -> None:
        """Refuse (:class:`~.write_errors.ExtensionMissing` naming ``what``, nothing changed) where one
        message cannot be moved alone (IMAP: neither MOVE nor UIDPLUS)."""
        ...

    def retire_draft(self, ref: MessageRef, trash: str) -> Moved | None:
        """Move the draft ``ref`` alone to ``trash``, checked afresh in its mailbox (selected for the
        write, :class:`~.errors.UidValidityChanged` when it is another) to still be a draft
        (:class:`~.draft_errors.DraftNotReplaceable` when it lost ``\\Draft``); None when it is gone
        already. Sent once (:class:`~.errors.OutcomeUnknown`)."""
        ...

    def original_fields(
        self, mailboxes: Sequence[str], header_id: str, names: Sequence[str]
    ) -> dict[str, list[str]] | None:
        """The header fields ``names`` (by lower-cased name) of the first message of Message-ID
        ``header_id`` in the first of ``mailboxes`` that holds one; None when none does."""
        ...

    def mark_original(self, mailboxes: Sequence[str], header_id: str, flag: str) -> Marked:
        """Set ``flag`` on the messages of Message-ID ``header_id`` in the first of ``mailboxes`` that
        holds one (see :data:`Marked`). Sent once (:class:`~.errors.OutcomeUnknown`)."""
        ...

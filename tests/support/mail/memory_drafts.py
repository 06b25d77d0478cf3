"""The drafts family of the mail backend (``mail/drafts.py``) for mail kept in memory, a part of
:class:`~tests.support.mail.memory_mail.MemoryMail`, held to the same contract as IMAP's
(tests/support/shared/drafts_contract.py). A memory mail without ``exact_expunge`` stands for
a server without UIDPLUS and MOVE: it says nowhere where a saved draft landed and moves no message
alone."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mail_imap_mcp import mime, query
from mail_imap_mcp.mail.draft_errors import DraftNotReplaceable, NotReplaceable
from mail_imap_mcp.mail.drafts import DRAFT_FLAGS, Located, Marked, Moved, Stored, is_draft
from mail_imap_mcp.mail.errors import MailboxMissing, MessageGone, still_names
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.write_errors import AppendRefused, ExtensionMissing
from mail_imap_mcp.mime.message_file import MessageFile

if TYPE_CHECKING:
    from tests.support.mail.memory_mail import StoredMessage


class MemoryDrafts:
    """Saving drafts, finding messages by Message-ID, retiring a replaced draft, marking originals: on
    the mailboxes of the :class:`~tests.support.mail.memory_mail.MemoryMail` it is a part of, through its
    own reads and writes."""

    def save_draft(self, mailbox: str, message: bytes | bytearray) -> tuple[int, int] | None:
        try:
            made = self.append(mailbox, bytes(message), DRAFT_FLAGS)
        except MailboxMissing as missing:
            raise AppendRefused(missing, self.account_id, mailbox, "drafts_mailbox") from None
        return (made.uidvalidity, made.uid) if self.exact_expunge else None

    def with_message_id(self, mailbox: str, header_id: str) -> Located:
        uids = self.search(mailbox, query.Header("Message-ID", header_id))
        return Located(self.status(mailbox).uidvalidity, uids)

    def stored(self, ref: MessageRef) -> Stored:
        message = self._examined(ref)
        return Stored(len(message.raw), frozenset(message.flags))

    def source_file(self, ref: MessageRef) -> MessageFile:
        kept = MessageFile()
        kept.write(self._examined(ref).raw)
        return kept

    def check_exact_move(self, what: str) -> None:
        if not self.exact_expunge:
            raise ExtensionMissing("MOVE or UIDPLUS", what)

    def retire_draft(self, ref: MessageRef, trash: str) -> Moved | None:
        message = self._verified(ref).messages.get(ref.uid)
        if message is None:
            return None
        if not is_draft(message.flags):
            raise DraftNotReplaceable(NotReplaceable.LOST_DRAFT_FLAG)
        self.check_exact_move("move messages")
        copied = self.move(ref.mailbox, [ref.uid], trash)
        return Moved((copied.uidvalidity, copied.uids[ref.uid]))

    def original_fields(
        self, mailboxes: Sequence[str], header_id: str, names: Sequence[str]
    ) -> dict[str, list[str]] | None:
        wanted = {name.lower() for name in names}
        for mailbox in mailboxes:
            uids = self.with_message_id(mailbox, header_id).uids
            if uids:
                header = mime.parse_header_block(self.header(mailbox, uids[0]) or b"")
                return {name: values for name, values in header.items() if name in wanted}
        return None

    def mark_original(self, mailboxes: Sequence[str], header_id: str, flag: str) -> Marked:
        for mailbox in mailboxes:
            uids = self.with_message_id(mailbox, header_id).uids
            if uids:
                self.store(mailbox, uids, "add", [flag])
                return "marked"
        return "not_found"

    def _examined(self, ref: MessageRef) -> StoredMessage:
        """The message ``ref`` names, its mailbox checked to be the one of ``ref``."""
        box = self._box(ref.mailbox, "EXAMINE")
        still_names(ref, box.uidvalidity)
        message: StoredMessage | None = box.messages.get(ref.uid)
        if message is None:
            raise MessageGone(ref)
        return message

"""Mailboxes made, renamed and deleted (``mail/backend.py``'s ``MailMailboxes``) on mail kept in memory:
the family :class:`~tests.support.mail.memory_mail.MemoryMail` takes from :class:`MemoryMailboxes`, held to
the same contract as ``imap/backend.py`` (tests/support/shared/mail_contract_changes.py): a name taken is
refused as a server refuses it, a rename takes the mailbox's children along and keeps its UIDVALIDITY and
UIDs, a mailbox deleted and made again is another one."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar, cast

from mail_imap_mcp.mail.backend import MailboxChanges
from mail_imap_mcp.mail.errors import CommandRefused, MailboxMissing, Refusal
from mail_imap_mcp.mail.roles import INBOX

if TYPE_CHECKING:
    from tests.support.mail.memory_mail import MemoryMail

T = TypeVar("T")


class MemoryMailboxes:
    """CREATE, RENAME and DELETE of :class:`MemoryMail`'s mailboxes, and their count."""

    def changing_mailboxes(self, work: Callable[[MailboxChanges], T]) -> T:
        return work(cast("MemoryMail", self))

    def create_mailbox(self, mailbox: str) -> None:
        mail = cast("MemoryMail", self)
        _refuse_taken(mail, "CREATE", mailbox, mailbox)
        mail.create(mailbox)

    def rename_mailbox(self, mailbox: str, new_name: str) -> None:
        mail = cast("MemoryMail", self)
        mail.kept(mailbox)  # MailboxMissing where there is none
        _refuse_taken(mail, "RENAME", mailbox, new_name)
        below = mailbox + mail.separator
        for name in [name for name in mail.names() if name == mailbox or name.startswith(below)]:
            mail.renamed(name, new_name + name[len(mailbox) :])

    def delete_mailbox(self, mailbox: str) -> None:
        mail = cast("MemoryMail", self)
        if mailbox == INBOX or mailbox not in mail.names():
            raise MailboxMissing(mailbox, "DELETE", "Mailbox doesn't exist")
        mail.delete(mailbox)

    def messages(self, mailbox: str) -> int:
        return len(cast("MemoryMail", self).kept(mailbox).messages)


def _refuse_taken(mail: MemoryMail, command: str, mailbox: str, name: str) -> None:
    """A ``command`` on ``mailbox`` making ``name`` refused where ``name`` is taken, as servers name it."""
    if name.upper() == INBOX or name in mail.names():
        raise CommandRefused(command, mailbox, Refusal.EXISTS, "Mailbox already exists")

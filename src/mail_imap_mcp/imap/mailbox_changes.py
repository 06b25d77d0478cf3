"""Mailboxes made, renamed, deleted and counted on one session (``mail/backend.py``'s ``MailboxChanges``):
what ``ImapMail.changing_mailboxes`` hands its work, so a change of several steps (a delete through a
name aside, a rename undone) runs on one connection, in order, none replayed."""

from __future__ import annotations

from mail_imap_mcp.imap.mailboxes import list_mailboxes
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.mail.directory import same_mailbox
from mail_imap_mcp.mail.mailboxes import MailboxInfo


def leave(session: ImapSession, mailbox: str) -> None:
    """Leave ``mailbox`` where the session has it open (UNSELECT, or CLOSE, which expunges nothing after
    EXAMINE): a RENAME or DELETE of it, a fresh count of it, an APPEND to it (Courier) need that."""
    selected = session.selected_mailbox
    if selected is not None and same_mailbox(selected, mailbox):
        session.deselect()


class SessionMailboxes:
    """CREATE, RENAME and DELETE on ``session``, each sent inside ``write_command``, LIST, and a count
    from a fresh EXAMINE."""

    def __init__(self, session: ImapSession) -> None:
        self._session = session

    def mailboxes(self) -> list[MailboxInfo]:
        return list_mailboxes(self._session)

    def create_mailbox(self, mailbox: str) -> None:
        with self._session.write_command():
            self._session.create_mailbox(mailbox)

    def rename_mailbox(self, mailbox: str, new_name: str) -> None:
        leave(self._session, mailbox)
        with self._session.write_command():
            self._session.rename_mailbox(mailbox, new_name)

    def delete_mailbox(self, mailbox: str) -> None:
        leave(self._session, mailbox)
        with self._session.write_command():
            self._session.delete_mailbox(mailbox)

    def messages(self, mailbox: str) -> int:
        """Not STATUS: Dovecot answers it from its index, which misses a message written into the Maildir
        in the same second (measured); EXAMINE syncs on every server."""
        leave(self._session, mailbox)
        messages = self._session.examine(mailbox).exists
        self._session.deselect()
        return messages

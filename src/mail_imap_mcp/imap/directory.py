"""The mailbox directory of an account (``mail/directory.py``) as IMAP's LIST (and NAMESPACE) show it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.imap.mailboxes import list_mailboxes, list_matching
from mail_imap_mcp.mail.directory import MailboxDirectory, directory_of

if TYPE_CHECKING:
    from mail_imap_mcp.imap.session import ImapSession


def load_directory(
    session: ImapSession, account: AccountConfig | None = None, *, namespace: bool = False
) -> MailboxDirectory:
    """Every mailbox (one LIST); with ``namespace`` also the personal prefix (one NAMESPACE, where the
    server offers it). The separator is the namespace's, else the one LIST shows."""
    prefix, separator = session.personal_namespace() if namespace else ("", None)
    return directory_of(list_mailboxes(session), account, prefix, separator)


def matching_directory(session: ImapSession, name: str) -> MailboxDirectory:
    """Only the mailboxes LIST shows for ``name`` (one LIST of that name, not of every mailbox)."""
    return MailboxDirectory(list_matching(session, name))

"""The RENAME and DELETE of imap_manage_mailbox, made safe against what the server does meanwhile, on
the account's mail backend (``mail/backend.py``'s ``MailMailboxes``).

Delete: a mailbox found empty can still be delivered to before its DELETE, and Dovecot deletes a
mailbox with messages without a word (14 acknowledged messages lost in 6 of 45 deletes under
delivery). So the mailbox is first renamed aside, to a name nobody delivers to; a delivery after that
RENAME is refused by the server (``[TRYCREATE]``), never acknowledged. The mailbox is counted again
there by a fresh EXAMINE and deleted only when empty, else renamed back.

Rename: a server may make a folder special-use by its name alone (Dovecot's ``mailbox Junk {
special_use = \\Junk }``): an ordinary folder renamed to ``Junk`` becomes the spam folder, left out of
every search of all mailboxes and never renamed again by this tool. A name checked beforehand can also
turn out to be one that search leaves out by its name once renamed (another client deleted the folder
the server marks ``\\Junk`` meanwhile, and ``Spam`` is taken for it). LIST after the RENAME tells; such
a rename is undone at once (:class:`RenamedIntoSpecialUse`).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

from mail_imap_mcp.envelope import Issue
from mail_imap_mcp.mail.backend import MailboxChanges
from mail_imap_mcp.mail.directory import MailboxDirectory
from mail_imap_mcp.mail.errors import CommandRefused, MailboxMissing, OutcomeUnknown
from mail_imap_mcp.mail.name_errors import RenamedIntoSpecialUse
from mail_imap_mcp.mail.write_errors import MailboxCommandRefused
from mail_imap_mcp.operations.audit import AuditLine
from mail_imap_mcp.services.mailbox_names import hidden_by_rename


def aside_name(mailbox: str) -> str:
    """A sibling name for ``mailbox`` that nobody delivers to (no separator of any server in it)."""
    return f"{mailbox}-deleting-{secrets.token_hex(4)}"


def delete_if_empty(mail: MailboxChanges, mailbox: str, aside: str, *, selectable: bool) -> int:
    """On ``mail``'s changes run in one go (``MailMailboxes.changing_mailboxes``), DELETE ``mailbox`` when it holds no message, through the name ``aside`` (:func:`aside_name`); 0
    when deleted, else the messages found (the mailbox is kept under its name). A mailbox that cannot be
    selected holds none and is deleted at once. A connection lost on the way may leave it under
    ``aside``: :func:`where_now` and :func:`lost_connection_issue` say so."""
    if not selectable:
        mail.delete_mailbox(mailbox)
        return 0
    messages = mail.messages(mailbox)
    if messages:
        return messages
    mail.rename_mailbox(mailbox, aside)
    messages = mail.messages(aside)
    if messages:
        mail.rename_mailbox(aside, mailbox)
    else:
        mail.delete_mailbox(aside)
    return messages


def rename_undoing_special_use(mail: MailboxChanges, back: AuditLine, mailbox: str, destination: str) -> None:
    """RENAME ``mailbox`` (no special-use folder) to ``destination``; where LIST then shows
    ``destination`` special-use, or a name a search of every mailbox leaves out where it searched
    ``mailbox`` (:func:`~.mailbox_names.hidden_by_rename`; the configured Trash, which no other client
    changes, was refused before), RENAME it back at once (audited as ``back``) and raise
    :class:`RenamedIntoSpecialUse`."""
    account_id, messages = back.account_id, back.count
    mail.rename_mailbox(mailbox, destination)
    listed = MailboxDirectory(mail.mailboxes())
    renamed = listed.get(destination)
    role = renamed.special_use if renamed is not None else None
    marked = role is not None
    if role is None:
        role = hidden_by_rename(listed.renamed(destination, mailbox), mailbox, destination)
    if role is None:
        return
    try:
        mail.rename_mailbox(destination, mailbox)
    except (CommandRefused, MailboxMissing, OutcomeUnknown) as failure:
        unknown = isinstance(failure, OutcomeUnknown)
        back.done("outcome_unknown" if unknown else "refused")
        raise RenamedIntoSpecialUse(
            account_id, mailbox, destination, role, messages, None if unknown else destination, marked
        ) from None
    back.done("ok")
    raise RenamedIntoSpecialUse(account_id, mailbox, destination, role, messages, mailbox, marked)


def where_now(mail: MailboxChanges, names: Sequence[str | None]) -> str | None:
    """Which of ``names`` (None: no such name) a folder has now (the first that one LIST shows), None
    when LIST shows none of them."""
    listed = MailboxDirectory(mail.mailboxes())
    return next((name for name in names if name is not None and listed.get(name) is not None), None)


def where_now_or_failure(mail: MailboxChanges, names: Sequence[str | None]) -> str | Exception | None:
    """:func:`where_now` (a new connection after a lost one), or the failure of that LIST: it only
    tells, so its failure leaves the outcome unknown instead of failing the call."""
    try:
        return where_now(mail, names)
    except Exception as failure:
        return failure


def lost_connection_issue(action: str, mailbox: str, aside: str | None, now: str | Exception | None) -> Issue:
    """The issue of a rename or delete whose connection was lost after a command was sent (never sent
    again), saying where the folder is now as a LIST on a new connection found it (``now``: its name,
    None for gone, an exception when that LIST failed too)."""
    if isinstance(now, Exception):
        where = "the mailbox may or may not have been changed; list the mailboxes to see"
    elif now is None:
        where = f"{mailbox!r} is gone" + (" (deleted)" if action == "delete" else "")
    elif now == aside:
        where = (
            f"the mailbox is now named {aside!r}: it was renamed aside to be deleted and was not deleted; "
            "rename it back, or delete that name"
        )
    else:
        where = f"the mailbox is named {now!r} now"
    return Issue(
        code="outcome_unknown",
        stage="write",
        message=f"The connection was lost after {action.upper()} was sent and it was not retried: {where}.",
        retryable=False,
    )


def refused_as_argument(
    failure: CommandRefused | MailboxMissing,
    account_id: str,
    action: str,
    mailbox: str,
    destination: str | None,
) -> MailboxCommandRefused:
    """A refusal of ``action`` named as the argument that gave the mailbox (the failure registry words
    it): the destination of a rename unless its source is missing, else ``mailbox``."""
    target, parameter = (mailbox, "mailbox")
    if action == "rename" and not isinstance(failure, MailboxMissing):
        target, parameter = (destination or mailbox, "destination_mailbox")
    return MailboxCommandRefused(failure, account_id, action.upper(), target, parameter)

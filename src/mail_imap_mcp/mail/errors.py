"""What mail failures mean to the services, whatever the protocol: the domain errors they raise and
catch (a mailbox missing or gone, a command refused and why, a write's unknown outcome, a stale id, an
account not configured). Each carries the facts its words need, never the words: the failure registry of
``presentation/`` says them. ``imap/errors.py`` classifies IMAP's failures into these and adds its own
(the connection, its time, its login).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import StrEnum
from typing import ClassVar

from mail_imap_mcp.mail.ids import MessageRef


class MailError(Exception):
    """A failure of reading or writing mail with a domain meaning (``imap/errors.py`` ``classify`` makes
    one of IMAP's failures)."""

    #: No other mailbox or message of the call can be read either (the connection or the time is gone);
    #: otherwise the failure belongs to the one mailbox or message being read (see :func:`mailbox_failure`).
    ends_call: ClassVar[bool] = False
    #: The caller of ``AccountConnection.run`` handles it (a stale id, a refused charset, a write's
    #: unknown outcome): code that goes on past a failure (an issue of a partial answer) raises it on, so
    #: that the caller, or else the tool runner, answers it.
    for_caller: ClassVar[bool] = False


class UidValidityChanged(MailError):
    """The mailbox's UIDVALIDITY differs from the one the cursor or id was made for."""

    for_caller = True

    def __init__(self, expected: int, actual: int, mailbox: str = "") -> None:
        super().__init__(f"UIDVALIDITY changed from {expected} to {actual}")
        self.expected = expected
        self.actual = actual
        #: The mailbox recreated, where the raiser knows it (else the call's arguments name it).
        self.mailbox = mailbox


def still_names(ref: MessageRef, uidvalidity: int) -> None:
    """Nothing when ``ref`` was made for the mailbox's ``uidvalidity`` now; :class:`UidValidityChanged`
    (a conflict whose next_action reruns the search) when the mailbox was made again since."""
    if uidvalidity != ref.uidvalidity:
        raise UidValidityChanged(ref.uidvalidity, uidvalidity, ref.mailbox)


class CharsetRejected(MailError):
    """The server refused ``CHARSET UTF-8`` for a non-ASCII search (``NO [BADCHARSET]``)."""

    for_caller = True


class OutcomeUnknown(MailError):
    """The connection died after a write command was sent: the change may or may not have happened.

    Never retried (a second MOVE or APPEND could duplicate or lose mail); the caller reports it per
    message and points at a way to check.
    """

    def __init__(self, uids: list[int], *, timed_out: bool = False) -> None:
        super().__init__(f"outcome unknown for {len(uids)} message(s)")
        self.uids = uids
        #: The server did not answer within the command's time (the connection was dropped for it),
        #: rather than the connection being lost under the command.
        self.timed_out = timed_out

    ends_call = True
    for_caller = True


class MailboxMissing(MailError):
    """The mailbox a command names does not exist, or cannot be opened (``[NONEXISTENT]``,
    ``[TRYCREATE]``, Cyrus's "Mailbox does not exist", Courier's "Invalid mailbox name"; any refused
    SELECT or EXAMINE). ``command``: the IMAP command refused; ``said``: the server's words."""

    def __init__(self, mailbox: str, command: str = "", said: str = "") -> None:
        super().__init__(f"{command or 'command'} {mailbox!r}: {said or 'no such mailbox'}")
        self.mailbox = mailbox
        self.command = command
        self.said = said


class MailboxGone(MailError):
    """The mailbox this call had selected was deleted or replaced by another session meanwhile."""

    def __init__(self, account_id: str, mailbox: str) -> None:
        super().__init__(f"mailbox {mailbox!r} of account {account_id!r} went away during the call")
        self.account_id = account_id
        self.mailbox = mailbox


class Refusal(StrEnum):
    """Why the server refused a command, where its answer says (RFC 5530 codes, else its words)."""

    EXISTS = "exists"
    HAS_CHILDREN = "has_children"
    OVER_QUOTA = "over_quota"
    NOT_PERMITTED = "not_permitted"
    #: Another reason, in the server's words only.
    OTHER = "other"


class CommandRefused(MailError):
    """The server answered NO or BAD to ``command`` on ``mailbox`` for ``reason``; ``said`` holds its
    words (control characters removed, shortened: the text is the server's, not ours)."""

    def __init__(self, command: str, mailbox: str, reason: Refusal, said: str) -> None:
        super().__init__(f"{command} refused: {said}")
        self.command = command
        self.mailbox = mailbox
        self.reason = reason
        self.said = said


# How servers refuse a command, RFC 5530 codes where they send them (Dovecot), else their words: Cyrus
# "Mailbox already exists", "Permission denied", "Mailbox has inferior hierarchical names"; Courier
# "INBOX already exists!", "RENAME failed: File exists", "Cannot create this folder.".
REFUSALS = (
    (re.compile(rb"\[ALREADYEXISTS\]|already exists|file exists", re.IGNORECASE), Refusal.EXISTS),
    (re.compile(rb"\[HASCHILDREN\]|inferior hierarchical names", re.IGNORECASE), Refusal.HAS_CHILDREN),
    (re.compile(rb"\[OVERQUOTA\]|over ?quota|quota exceeded", re.IGNORECASE), Refusal.OVER_QUOTA),
    (re.compile(rb"\[(NOPERM|READ-ONLY)\]|permission denied", re.IGNORECASE), Refusal.NOT_PERMITTED),
)


def refusal_in(said: str) -> Refusal:
    """Why the server refused, as its words ``said`` tell (:data:`REFUSALS`; ``OTHER`` where they do not)."""
    text = said.encode("utf-8", "replace")
    return next((reason for pattern, reason in REFUSALS if pattern.search(text)), Refusal.OTHER)


class AccountUnknown(MailError):
    """``account_id`` names no configured account; ``configured``: the ones there are; ``parameter``: the
    argument that named it (``message_ids``: the account part of message ids)."""

    ends_call = True

    def __init__(self, account_id: str, configured: Iterable[str], parameter: str = "account_id") -> None:
        super().__init__(f"account {account_id!r} is not configured")
        self.account_id = account_id
        self.configured = sorted(configured)
        self.parameter = parameter


class MessageGone(Exception):
    """The UID does not exist (any more) in the mailbox; ``ref``: the message, where the raiser knows it
    (else the call's ``message_id`` names it)."""

    def __init__(self, ref: MessageRef | None = None) -> None:
        super().__init__(f"message {ref.message_id} no longer exists" if ref else "message no longer exists")
        self.ref = ref

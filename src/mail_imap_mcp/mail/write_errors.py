"""The refusals of writes (COPY, MOVE, STORE, UID EXPUNGE, and the mailboxes they need), raised before or
instead of a change: each carries the facts its words need, never the words (the failure registry of
``presentation/`` says them)."""

from __future__ import annotations

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.mail.errors import REFUSALS, CommandRefused, MailboxMissing, MailError, Refusal


class DestinationMissing(MailError):
    """The mailbox messages should go to does not exist (LIST shows no such selectable mailbox, or the
    server answered COPY/MOVE with ``[TRYCREATE]``); it is never created on the fly. ``parameter``: the
    argument that named it."""

    def __init__(self, mailbox: str, parameter: str = "destination_mailbox") -> None:
        super().__init__(f"mailbox {mailbox!r} ({parameter}) does not exist")
        self.mailbox = mailbox
        self.parameter = parameter


class MailboxCommandRefused(MailError):
    """The server refused ``command`` (CREATE, DELETE, RENAME, APPEND) on ``mailbox`` of ``account_id``
    (``refused``: its NO, or the mailbox missing), which the argument or setting ``parameter`` named
    (e.g. ``destination_mailbox`` for the new name of a RENAME)."""

    def __init__(
        self,
        refused: CommandRefused | MailboxMissing,
        account_id: str,
        command: str,
        mailbox: str,
        parameter: str,
    ) -> None:
        to = "to" if command == "APPEND" else "of"
        super().__init__(f"{command} {to} {mailbox!r} ({parameter}) refused: {refused}")
        self.refused = refused
        self.account_id = account_id
        self.command = command
        self.mailbox = mailbox
        self.parameter = parameter


class AppendRefused(MailboxCommandRefused):
    """The server refused the APPEND of a message to ``mailbox`` of ``account_id`` (``refused``: its NO,
    or the mailbox missing), which the setting ``parameter`` chose (e.g. ``drafts_mailbox``)."""

    def __init__(
        self, refused: CommandRefused | MailboxMissing, account_id: str, mailbox: str, parameter: str
    ) -> None:
        super().__init__(refused, account_id, "APPEND", mailbox, parameter)


class WriteRefused(CommandRefused):
    """The server answered NO (or BAD) to a write command (``UID COPY``, ``UID MOVE``, ``UID STORE``,
    ``UID EXPUNGE``) in the selected ``mailbox``: over quota, no permission (``reason``), or another
    reason in its words (``said``). ``copied_to``: a MOVE done as COPY + EXPUNGE whose EXPUNGE was
    refused: the messages are in that mailbox and still in ``mailbox`` as well."""

    def __init__(self, exc: BaseException, command: str, mailbox: str) -> None:
        text = str(exc).encode("utf-8", "replace")
        reason = next(
            (
                reason
                for pattern, reason in REFUSALS
                if reason in (Refusal.OVER_QUOTA, Refusal.NOT_PERMITTED) and pattern.search(text)
            ),
            Refusal.OTHER,
        )
        said = text.decode("utf-8", "replace").replace("\r", " ").replace("\n", " ")[:200]
        super().__init__(command, mailbox, reason, said)
        self.copied_to: str | None = None


class ExtensionMissing(MailError):
    """The server lacks ``capability``, which a write needs to ``what`` touching exactly the given
    messages (e.g. UIDPLUS for ``UID EXPUNGE``): refused, as the fallback (a mailbox-wide EXPUNGE) would
    take others with it."""

    def __init__(self, capability: str, what: str) -> None:
        super().__init__(f"the server does not offer {capability}, needed to {what}")
        self.capability = capability
        self.what = what


class RoleMailboxMissing(MailError):
    """No mailbox plays ``role`` (special-use ``\\Trash``, ``\\Drafts``, ``\\Sent``) for a write: the server
    marks none, and the account's ``setting`` names none (``configured`` None) or one that does not
    exist. ``advice`` ends the message (what else the caller can do); ``account``: the account's
    settings, when known, to name the setting as the user writes it."""

    def __init__(
        self,
        role: str,
        account_id: str,
        setting: str,
        configured: str | None,
        advice: str = "",
        account: AccountConfig | None = None,
    ) -> None:
        super().__init__(f"no mailbox for {role} in account {account_id!r} ({setting}: {configured!r})")
        self.role = role
        self.account_id = account_id
        self.setting = setting
        self.configured = configured
        self.advice = advice
        self.account = account


class InvalidFlag(MailError):
    """A flag an agent asked to set that is no system flag this server lets a client set, nor a keyword;
    ``problem`` says why."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem

"""The words of mailbox and message failures: a mailbox missing, gone, refused or recreated, a message
or part gone, an extension missing. The
failure registry (:mod:`.failures`) says each domain error with these; tools and services use them where
they word a failure themselves.
"""

from __future__ import annotations

from typing import Any

from mail_imap_mcp.envelope import ErrorCode, NextAction, ToolFailure
from mail_imap_mcp.imap import errors
from mail_imap_mcp.imap.errors import classify
from mail_imap_mcp.mail.errors import CommandRefused, MailboxGone, MailboxMissing, MailError, Refusal
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.part_errors import (
    NotAnAttachment,
    PartGone,
    PartNotFound,
    PartRefused,
    StructureUnusable,
)
from mail_imap_mcp.mail.write_errors import WriteRefused

#: Commands that create, rename or delete a mailbox, or add a message to one (named by the tool).
MAILBOX_COMMANDS = frozenset({"CREATE", "RENAME", "DELETE", "APPEND"})
#: Commands that copy or move messages to the mailbox they name.
TRANSFERS = frozenset({"UID COPY", "UID MOVE", "COPY", "MOVE"})


def mailbox_not_found(mailbox: str) -> ToolFailure:
    """The named mailbox cannot be opened."""
    return ToolFailure(
        ErrorCode.NOT_FOUND,
        f"Mailbox {mailbox!r} does not exist or cannot be opened; call imap_list_mailboxes to see the "
        "available names.",
        details={"parameter": "mailbox", "mailbox": mailbox},
    )


def mailbox_vanished(account_id: str, mailbox: str) -> ToolFailure:
    """The selected mailbox was deleted or replaced by another session during this call."""
    return ToolFailure(
        ErrorCode.CONFLICT,
        f"Mailbox {mailbox!r} was deleted or replaced by another session while this call read it; "
        "earlier ids and cursors for it no longer apply. Call imap_list_mailboxes, then search again.",
        details={"mailbox": mailbox},
        retryable=False,
        next_action=NextAction(
            instruction="List the mailboxes to see whether it still exists",
            tool="imap_list_mailboxes",
            arguments={"account_id": account_id},
        ),
    )


def write_refused(failure: CommandRefused | MailboxMissing, mailbox: str) -> ToolFailure:
    """The server answered NO (or BAD) to a write command in ``mailbox``: over quota, no permission, or
    another reason given in its words (and, for a MOVE done as COPY + EXPUNGE, where the messages are)."""
    reason = failure.reason if isinstance(failure, CommandRefused) else Refusal.OTHER
    code = {Refusal.OVER_QUOTA: ErrorCode.LIMIT_EXCEEDED, Refusal.NOT_PERMITTED: ErrorCode.PERMISSION_DENIED}
    copied_to = failure.copied_to if isinstance(failure, WriteRefused) else None
    also = (
        ""
        if copied_to is None
        else f" The messages were copied to {copied_to!r} but are still in {mailbox!r} as well."
    )
    return ToolFailure(
        code.get(reason, ErrorCode.UNAVAILABLE),
        f"The server refused {failure.command} in {mailbox!r}: {failure.said}{also}",
        details={"command": failure.command, "mailbox": mailbox},
        retryable=False,
    )


def destination_not_found(mailbox: str, parameter: str = "destination_mailbox") -> ToolFailure:
    """The mailbox messages should go to does not exist (LIST shows no such selectable mailbox, or the
    server answered COPY/MOVE with ``[TRYCREATE]``); it is never created on the fly."""
    return ToolFailure(
        ErrorCode.NOT_FOUND,
        f"Mailbox {mailbox!r} ({parameter}) does not exist; nothing was changed. Call imap_list_mailboxes "
        "for the available names (a new mailbox is created with imap_manage_mailbox, never on the fly).",
        details={"parameter": parameter, "mailbox": mailbox},
    )


def mailbox_refused(
    failure: MailError | BaseException, account_id: str, command: str, mailbox: str, parameter: str
) -> ToolFailure:
    """The server answered NO (or BAD) to CREATE, RENAME, DELETE or APPEND of ``mailbox``, the value of
    ``parameter``: it exists already, has children, is missing, over quota, not allowed, or another reason
    in the server's words."""
    failure = classify(failure, errors.Context(command, mailbox)) or failure
    details = {"parameter": parameter, "mailbox": mailbox, "command": command}
    if isinstance(failure, MailboxMissing | MailboxGone):
        return ToolFailure(
            ErrorCode.NOT_FOUND,
            f"Mailbox {mailbox!r} ({parameter}) does not exist; nothing was changed. Call "
            "imap_list_mailboxes for the available names.",
            details=details,
            next_action=NextAction(
                instruction="List the mailboxes",
                tool="imap_list_mailboxes",
                arguments={"account_id": account_id},
            ),
        )
    reason = failure.reason if isinstance(failure, CommandRefused) else Refusal.OTHER
    said = failure.said if isinstance(failure, CommandRefused) else errors.server_said(failure)
    if reason is Refusal.EXISTS and command.upper() == "DELETE":
        # Cyrus (delayed delete) answers so when a mailbox of that name was deleted in the same second.
        return ToolFailure(
            ErrorCode.UNAVAILABLE,
            f"The server refused to delete {mailbox!r} for now ({said}); nothing was deleted. A mailbox of "
            "that name was probably deleted a moment ago and is still being removed: try again in a few "
            "seconds.",
            details=details,
            retryable=True,
        )
    if reason is Refusal.EXISTS:
        return ToolFailure.invalid_input(
            parameter, f"mailbox {mailbox!r} already exists; choose another name."
        )
    if reason is Refusal.HAS_CHILDREN:
        return ToolFailure.invalid_input(
            parameter, f"mailbox {mailbox!r} has child mailboxes; delete or move them first."
        )
    if reason is Refusal.OVER_QUOTA:
        return ToolFailure(
            ErrorCode.LIMIT_EXCEEDED, f"The server refused {command}: over quota ({said}).", details=details
        )
    if reason is Refusal.NOT_PERMITTED:
        return ToolFailure(
            ErrorCode.PERMISSION_DENIED,
            f"The server does not allow {command} of {mailbox!r} for this user ({said}).",
            details=details,
        )
    return ToolFailure.invalid_input(parameter, f"the server refused {command} of {mailbox!r}: {said}")


def conflict(
    account_id: str, mailbox: str, expected: int, actual: int, arguments: dict[str, Any] | None = None
) -> ToolFailure:
    """The mailbox was recreated (a new UIDVALIDITY): ids and cursors made for it are stale."""
    return ToolFailure(
        ErrorCode.CONFLICT,
        f"Mailbox snapshot changed; rerun search: UIDVALIDITY of {mailbox!r} is now {actual}, "
        f"not {expected}, so earlier ids and cursors no longer apply.",
        details={"mailbox": mailbox, "expected_uidvalidity": expected, "actual_uidvalidity": actual},
        next_action=rerun_search(account_id, mailbox, arguments),
    )


def changes_token_outdated(account_id: str, mailbox: str, expected: int, actual: int) -> ToolFailure:
    """imap_get_changes: the mailbox was recreated since the token (a new UIDVALIDITY), so what changed
    since cannot be told; start again without ``since``."""
    return ToolFailure(
        ErrorCode.CONFLICT,
        f"Mailbox {mailbox!r} was recreated since the token (argument 'since') was made: its UIDVALIDITY "
        f"is now {actual}, not {expected}, so changes since then cannot be told and earlier message ids "
        "no longer apply. Start again: call imap_get_changes without since for a new token, and search "
        "the mailbox for its messages.",
        details={
            "parameter": "since",
            "mailbox": mailbox,
            "expected_uidvalidity": expected,
            "actual_uidvalidity": actual,
        },
        retryable=False,
        next_action=NextAction(
            instruction="Start again: get a new changes token for the mailbox",
            tool="imap_get_changes",
            arguments={"account_id": account_id, "mailbox": mailbox},
        ),
    )


def rerun_search(account_id: str, mailbox: str, arguments: dict[str, Any] | None = None) -> NextAction:
    """Search ``mailbox`` again, for fresh ids after it changed; a paging call's search (``arguments``,
    as given) runs again from its start over what it searched (a search without a mailbox has none to
    name: its query or its default decides)."""
    where = {} if arguments is not None else {"mailbox": mailbox}
    return NextAction(
        instruction="The mailbox changed (UIDVALIDITY); rerun the search to get fresh message ids",
        tool="imap_search_messages",
        arguments={**(arguments or {}), "account_id": account_id, **where},
    )


def message_gone(ref: MessageRef, message_id: str | None = None) -> ToolFailure:
    """The message of an id no longer exists in its mailbox (``message_id``: the id as given, where it
    is not the one ``ref`` renders: another user's)."""
    return ToolFailure(
        ErrorCode.NOT_FOUND,
        f"Message UID {ref.uid} no longer exists in {ref.mailbox!r} (deleted or moved); search again.",
        details={"message_id": message_id or ref.message_id, "uid": ref.uid, "mailbox": ref.mailbox},
        next_action=NextAction(
            instruction="Search the mailbox again",
            tool="imap_search_messages",
            arguments={"account_id": ref.account_id, "mailbox": ref.mailbox},
        ),
    )


def ids_mailbox_gone(account_id: str, mailbox: str) -> ToolFailure:
    """The mailbox some message ids name no longer exists (deleted or renamed); nothing was changed there."""
    return ToolFailure(
        ErrorCode.NOT_FOUND,
        f"Mailbox {mailbox!r} of the message ids does not exist any more (deleted or renamed); nothing was "
        "changed in it. List the mailboxes, then search again.",
        details={"parameter": "message_ids", "mailbox": mailbox},
        next_action=NextAction(
            instruction="List the mailboxes to see where the messages are now",
            tool="imap_list_mailboxes",
            arguments={"account_id": account_id},
        ),
    )


def part_failure(exc: Exception, ref: MessageRef) -> ToolFailure:
    """The envelope of a part id that does not name an attachment of the message (or a gone message)."""
    if isinstance(exc, PartGone):
        return message_gone(ref)
    if isinstance(exc, PartRefused):
        return ToolFailure(
            ErrorCode.UNAVAILABLE,
            f"The server refused to send part {exc.part_id!r} of the message: {exc.said}",
            details={"parameter": "part_id", "part_id": exc.part_id},
            retryable=False,
        )
    list_them = NextAction(
        instruction="Read the message to see its attachments and their part_id",
        tool="imap_get_message",
        arguments={"message_id": ref.message_id},
    )
    if isinstance(exc, PartNotFound):
        available = ", ".join(exc.available) or "none"
        return ToolFailure(
            ErrorCode.NOT_FOUND,
            f"Message UID {ref.uid} has no part {exc.part_id!r} (part_id); its attachments are: {available}.",
            details={"parameter": "part_id", "part_id": exc.part_id, "available": exc.available},
            next_action=list_them,
        )
    if isinstance(exc, NotAnAttachment):
        return ToolFailure(
            ErrorCode.INVALID_INPUT,
            f"Invalid 'part_id': part {exc.part.section!r} is the message's {exc.part.content_type} body, "
            "not an attachment; read it with imap_get_message. Attachments: "
            f"{', '.join(exc.available) or 'none'}.",
            details={"parameter": "part_id", "part_id": exc.part.section, "available": exc.available},
            next_action=list_them,
        )
    if isinstance(exc, StructureUnusable):
        return ToolFailure(
            ErrorCode.UNAVAILABLE,
            f"Cannot locate the attachments of message UID {ref.uid}: {exc.reason}; read the source with "
            "imap_get_message_raw.",
            details={"parameter": "part_id"},
            retryable=False,
            next_action=NextAction(
                instruction="Read the raw message source",
                tool="imap_get_message_raw",
                arguments={"message_id": ref.message_id},
            ),
        )
    raise exc


def extension_missing(capability: str, what: str) -> ToolFailure:
    """The server lacks the extension a write needs to touch exactly the given messages (e.g. UIDPLUS
    for ``UID EXPUNGE``): refused, as the fallback (a mailbox-wide EXPUNGE) would take others with it."""
    return ToolFailure(
        ErrorCode.PERMISSION_DENIED,
        f"The server does not offer {capability}, which is needed to {what}; nothing was changed. "
        "(Without it the only way would be a mailbox-wide EXPUNGE, which would also remove every other "
        "message marked \\Deleted.)",
        details={"missing_capability": capability},
    )

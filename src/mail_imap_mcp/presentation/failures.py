"""The one map from domain errors to envelope errors, applied by the tool runner (:func:`run`).

``mail_imap_mcp.imap.errors.classify`` says what a failure means; this module says it to the model:
the :class:`~mail_imap_mcp.envelope.ToolFailure` of every exception class of ``imap/`` and
``content/`` (:data:`REGISTRY`; a unit test fails when one is missing), with messages that name the
arguments as the user wrote them. A tool raises what went wrong and lets :func:`run` say it; it catches
an error only to make it part of a partial answer (an issue of one mailbox or message), and then builds
the issue here too (:func:`mailbox_issue`). The words of connecting, logging in and a call's connection
(busy, out of time, lost) are in :mod:`.connect_failures`, which this map uses.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from mail_imap_mcp.config import AccountConfig, Config
from mail_imap_mcp.content.errors import ExtractionError
from mail_imap_mcp.envelope import ErrorCode, Issue, NextAction, ToolFailure, ToolResult
from mail_imap_mcp.imap import errors
from mail_imap_mcp.imap.changes import ChangesTokenError
from mail_imap_mcp.imap.errors import (
    AccountBusy,
    AccountUnknown,
    CallTimedOut,
    CharsetRejected,
    CommandRefused,
    ConnectFailed,
    ConnectionLost,
    ConnectPhase,
    DestinationMissing,
    ExtensionMissing,
    ImapError,
    ImplicitTlsPort,
    InvalidFlag,
    LoginDisabled,
    LoginRefused,
    MailboxGone,
    MailboxMissing,
    MechanismNotOffered,
    OAuthRejected,
    OutcomeUnknown,
    ReconnectFailed,
    Refusal,
    RoleMailboxMissing,
    SelectionStale,
    StartTlsMissing,
    TimedOut,
    TokenCommandFailed,
    UidValidityChanged,
    WriteRefused,
    classify,
)
from mail_imap_mcp.imap.fetch import MessageGone
from mail_imap_mcp.imap.flags import ALLOWED_FLAGS, SYSTEM_FLAGS
from mail_imap_mcp.imap.ids import InvalidMessageId, MessageRef, parse_message_id
from mail_imap_mcp.imap.parts import NotAnAttachment, PartGone, PartNotFound, PartRefused, StructureUnusable
from mail_imap_mcp.imap.search import CursorError
from mail_imap_mcp.imap.uidplus import MalformedUidSet
from mail_imap_mcp.presentation import connect_failures

InputT = TypeVar("InputT", bound=BaseModel)
AppT = TypeVar("AppT", bound="App")

#: Commands that create, rename or delete a mailbox, or add a message to one (named by the tool).
_MAILBOX_COMMANDS = frozenset({"CREATE", "RENAME", "DELETE", "APPEND"})
#: Commands that copy or move messages to the mailbox they name.
_TRANSFERS = frozenset({"UID COPY", "UID MOVE", "COPY", "MOVE"})
#: What each extraction error code is as an envelope error.
_EXTRACTION_CODES = {
    "limit_exceeded": ErrorCode.LIMIT_EXCEEDED,
    "unsupported_format": ErrorCode.INVALID_INPUT,
    "encrypted": ErrorCode.PERMISSION_DENIED,
    "extract_failed": ErrorCode.UNAVAILABLE,
}


class App(Protocol):
    """What the map needs of the running server (:class:`~mail_imap_mcp.app.AppContext`)."""

    @property
    def config(self) -> Config: ...

    def resolve_account(self, account_id: str) -> str: ...


@dataclass(frozen=True)
class Call:
    """What the map knows of the call that failed: the server's state and the arguments as given."""

    app: App
    arguments: BaseModel

    def argument(self, name: str) -> Any:
        return getattr(self.arguments, name, None)

    def message_ref(self) -> MessageRef | None:
        """The message the call names (``message_id``), if it names one."""
        value = self.argument("message_id")
        try:
            return parse_message_id(value) if isinstance(value, str) else None
        except InvalidMessageId:
            return None

    def account(self) -> tuple[str, AccountConfig] | None:
        """The account the call is about (``account_id``, else the account of its ``message_id``)."""
        ref = self.message_ref()
        account_id = ref.account_id if ref is not None else self.argument("account_id")
        if not isinstance(account_id, str):
            return None
        account_id = self.app.resolve_account(account_id)
        config = self.app.config.accounts.get(account_id)
        return None if config is None else (account_id, config)


Converter = Callable[[Any, Call | None], ToolFailure]


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


def _write_refused(failure: CommandRefused | MailboxMissing, mailbox: str) -> ToolFailure:
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
    failure: ImapError | BaseException, account_id: str, command: str, mailbox: str, parameter: str
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
    """Search ``mailbox`` again (with ``arguments``), for fresh ids after it changed."""
    return NextAction(
        instruction="The mailbox changed (UIDVALIDITY); rerun the search to get fresh message ids",
        tool="imap_search_messages",
        arguments={**(arguments or {}), "account_id": account_id, "mailbox": mailbox},
    )


def message_gone(ref: MessageRef) -> ToolFailure:
    """The message of an id no longer exists in its mailbox."""
    return ToolFailure(
        ErrorCode.NOT_FOUND,
        f"Message UID {ref.uid} no longer exists in {ref.mailbox!r} (deleted or moved); search again.",
        details={"message_id": ref.message_id, "uid": ref.uid, "mailbox": ref.mailbox},
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


def mailbox_issue(mailbox: str, exc: Exception) -> Issue:
    """The issue of a multi-mailbox call about a mailbox that could not be searched (see
    :func:`mail_imap_mcp.imap.errors.mailbox_failure`)."""
    if isinstance(exc, UidValidityChanged):
        code, reason = "conflict", "it was recreated (UIDVALIDITY changed) since the first page"
        retryable = False
    elif isinstance(exc, CharsetRejected):
        code, reason, retryable = "charset_unsupported", "the server refused CHARSET UTF-8 there", False
    elif isinstance(exc, (ToolFailure, *_SAID_AS_THEY_ARE)):
        failure = exc if isinstance(exc, ToolFailure) else envelope_of(exc)
        code, reason, retryable = failure.code.value, failure.message, failure.retryable
    elif isinstance(exc, MailboxMissing | MailboxGone):
        failure = _mailbox_missing(exc, None) if isinstance(exc, MailboxMissing) else _mailbox_gone(exc, None)
        code, reason, retryable = failure.code.value, failure.message, failure.retryable
    else:
        code, reason, retryable = "search_failed", " ".join(str(exc).split())[:200], True
    return Issue(
        code=code,
        stage="search",
        message=f"Mailbox {mailbox!r} could not be searched, so its messages are missing from this "
        f"search: {reason}. Search it alone with mailbox={mailbox!r}.",
        retryable=retryable,
    )


# -- the registry -----------------------------------------------------------------------------------


def _account(call: Call | None) -> tuple[str, AccountConfig | None]:
    found = call.account() if call is not None else None
    return found if found is not None else ("", None)


def _connection_gone(exc: ConnectionLost | TimedOut, call: Call | None) -> ToolFailure:
    """The connection died and no new one could be made, or the server did not answer, within the call."""
    account_id, config = _account(call)
    timeout = isinstance(exc, TimedOut)
    if config is None:
        code = ErrorCode.TIMEOUT if timeout else ErrorCode.UNAVAILABLE
        return ToolFailure(code, "The IMAP server did not answer or dropped the connection; retry shortly.")
    if timeout:
        budget_s = config.connect_timeout_s + config.command_timeout_s
        return connect_failures.timed_out(account_id, config, budget_s)
    return connect_failures.connection_lost(account_id, config)


def _uidvalidity_changed(exc: UidValidityChanged, call: Call | None) -> ToolFailure:
    ref = call.message_ref() if call is not None else None
    account_id, _ = _account(call)
    named = call.argument("mailbox") if call is not None else None
    mailbox = exc.mailbox or (ref.mailbox if ref is not None else str(named or ""))
    return conflict(account_id, mailbox, exc.expected, exc.actual)


def _charset_rejected(exc: CharsetRejected, call: Call | None) -> ToolFailure:
    return ToolFailure(
        ErrorCode.INVALID_INPUT,
        "The server refused CHARSET UTF-8, so it cannot search for non-ASCII text; search with ASCII "
        "words instead.",
        details={"parameter": "", "charset": "UTF-8"},
    )


def _outcome_unknown(exc: OutcomeUnknown, call: Call | None) -> ToolFailure:
    return ToolFailure(
        ErrorCode.UNAVAILABLE,
        "The connection was lost after the change was sent: it may or may not have happened. It was not "
        "retried; search or list the mailboxes to see.",
        details={"uids": exc.uids},
        retryable=False,
    )


def _selection_stale(exc: SelectionStale, call: Call | None) -> ToolFailure:
    return ToolFailure(ErrorCode.UNAVAILABLE, "The mailbox changed while it was read; retry.", retryable=True)


def _connect_failed(
    exc: TokenCommandFailed | OAuthRejected | ImplicitTlsPort | LoginRefused, call: Call | None
) -> ToolFailure:
    account_id, config = _account(call)
    if config is None:
        return ToolFailure(ErrorCode.UNAVAILABLE, f"Could not connect and log in: {exc}.")
    phase = ConnectPhase.GREETING if isinstance(exc, ImplicitTlsPort) else ConnectPhase.LOGIN
    return connect_failures.connect_failure(exc, account_id, config, phase)


def _account_failure(
    exc: AccountBusy | CallTimedOut | ReconnectFailed | ConnectFailed, call: Call | None
) -> ToolFailure:
    """The account's connection failed: busy, out of time, lost, or connecting and logging in (the
    error carries the account and its settings)."""
    if isinstance(exc, AccountBusy):
        return connect_failures.account_busy(exc)
    if isinstance(exc, CallTimedOut):
        return connect_failures.call_timed_out(exc)
    if isinstance(exc, ReconnectFailed):
        return connect_failures.reconnect_failed(exc)
    return connect_failures.connect_failed(exc)


def _account_unknown(exc: AccountUnknown, call: Call | None) -> ToolFailure:
    known = ", ".join(exc.configured) or "none"
    return ToolFailure(
        ErrorCode.NOT_FOUND,
        f"Account {exc.account_id!r} is not configured (configured: {known}); call "
        "imap_list_accounts to see them.",
        details={"parameter": "account_id", "account_id": exc.account_id, "configured": exc.configured},
    )


def _destination_missing(exc: DestinationMissing, call: Call | None) -> ToolFailure:
    return destination_not_found(exc.mailbox, exc.parameter)


def _write_refused_in(exc: WriteRefused, call: Call | None) -> ToolFailure:
    return _write_refused(exc, exc.mailbox)


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


def _extension_missing(exc: ExtensionMissing, call: Call | None) -> ToolFailure:
    return extension_missing(exc.capability, exc.what)


def _role_mailbox_missing(exc: RoleMailboxMissing, call: Call | None) -> ToolFailure:
    """No mailbox plays the role a write needs: ``not_found`` naming the setting the user sets (or
    corrects)."""
    setting, account = exc.setting, exc.account
    details = {"parameter": setting, "setting": setting, "account_id": exc.account_id}
    if exc.configured is None:
        how = account.setting(setting, "<a mailbox from imap_list_mailboxes>") if account else setting
        return ToolFailure(
            ErrorCode.NOT_FOUND,
            f"The server marks no mailbox as {exc.role} (special-use) and account {exc.account_id!r} names "
            f"none in {setting}; nothing was changed. The user sets {how}{exc.advice}.",
            details=details,
        )
    how = account.setting(setting) if account else setting
    return ToolFailure(
        ErrorCode.NOT_FOUND,
        f"The configured {setting} {exc.configured!r} does not exist; nothing was changed. Create it "
        f"(imap_manage_mailbox) or change {how}{exc.advice}.",
        details={**details, "mailbox": exc.configured},
    )


def _invalid_flag(exc: InvalidFlag, call: Call | None) -> ToolFailure:
    return ToolFailure.invalid_input(
        "flags", f"{exc.problem}. Allowed: {ALLOWED_FLAGS}.", allowed=[*SYSTEM_FLAGS, "keyword"]
    )


def _mailbox_missing(exc: MailboxMissing, call: Call | None) -> ToolFailure:
    command = exc.command.upper()
    if command in _TRANSFERS:
        return destination_not_found(exc.mailbox)
    if command in _MAILBOX_COMMANDS:
        account_id, _ = _account(call)
        return mailbox_refused(exc, account_id, command, exc.mailbox, "mailbox")
    if command in {"", "SELECT", "EXAMINE"}:
        return mailbox_not_found(exc.mailbox)
    return _write_refused(exc, exc.mailbox)


def _mailbox_gone(exc: MailboxGone, call: Call | None) -> ToolFailure:
    return mailbox_vanished(exc.account_id, exc.mailbox)


def _command_refused(exc: CommandRefused, call: Call | None) -> ToolFailure:
    if exc.command.upper() in _MAILBOX_COMMANDS:
        account_id, _ = _account(call)
        return mailbox_refused(exc, account_id, exc.command.upper(), exc.mailbox, "mailbox")
    return _write_refused(exc, exc.mailbox)


def _imap_error(exc: ImapError, call: Call | None) -> ToolFailure:
    return ToolFailure(ErrorCode.UNAVAILABLE, f"The IMAP server failed: {errors.server_said(exc)}")


def _message_gone(exc: MessageGone, call: Call | None) -> ToolFailure:
    ref = exc.ref or (call.message_ref() if call is not None else None)
    if ref is None:
        return ToolFailure(
            ErrorCode.NOT_FOUND, "The message no longer exists (deleted or moved); search again."
        )
    return message_gone(ref)


def _part_failure(exc: Exception, call: Call | None) -> ToolFailure:
    ref = call.message_ref() if call is not None else None
    if ref is None:
        return ToolFailure(
            ErrorCode.NOT_FOUND, f"No such attachment: {exc}.", details={"parameter": "part_id"}
        )
    return part_failure(exc, ref)


def _invalid_message_id(exc: InvalidMessageId, call: Call | None) -> ToolFailure:
    parameter = next(
        (
            name
            for name in ("message_id", "message_ids", "in_reply_to")
            if call is not None and call.argument(name) is not None
        ),
        "message_id",
    )
    return ToolFailure.invalid_input(parameter, f"{exc}.")


def _cursor_error(exc: CursorError, call: Call | None) -> ToolFailure:
    return ToolFailure.invalid_input("cursor", f"{exc}. Rerun the search without a cursor to start again.")


def _changes_token_error(exc: ChangesTokenError, call: Call | None) -> ToolFailure:
    return ToolFailure.invalid_input(
        exc.parameter, f"{exc}. Call imap_get_changes without since (and cursor) for a new token."
    )


def _malformed_uid_set(exc: MalformedUidSet, call: Call | None) -> ToolFailure:
    return ToolFailure(
        ErrorCode.UNAVAILABLE, f"The server answered with a malformed UID set ({exc}).", retryable=False
    )


def _extraction_failed(exc: ExtractionError, call: Call | None) -> ToolFailure:
    details: dict[str, Any] = {"extraction": exc.code}
    if exc.limit is not None:
        details["limit"] = exc.limit
    return ToolFailure(_EXTRACTION_CODES[exc.code], exc.message, details=details, retryable=False)


#: Every exception class of ``imap/`` and ``content/`` and its envelope error (a unit test keeps it
#: complete). Looked up along the class's MRO, so a subclass left out falls back to its base.
REGISTRY: Mapping[type[BaseException], Converter] = {
    ImapError: _imap_error,
    ConnectionLost: _connection_gone,
    TimedOut: _connection_gone,
    SelectionStale: _selection_stale,
    OutcomeUnknown: _outcome_unknown,
    UidValidityChanged: _uidvalidity_changed,
    CharsetRejected: _charset_rejected,
    MailboxMissing: _mailbox_missing,
    MailboxGone: _mailbox_gone,
    CommandRefused: _command_refused,
    TokenCommandFailed: _connect_failed,
    ImplicitTlsPort: _connect_failed,
    LoginRefused: _connect_failed,
    OAuthRejected: _connect_failed,
    AccountBusy: _account_failure,
    CallTimedOut: _account_failure,
    ReconnectFailed: _account_failure,
    ConnectFailed: _account_failure,
    StartTlsMissing: _account_failure,
    LoginDisabled: _account_failure,
    MechanismNotOffered: _account_failure,
    AccountUnknown: _account_unknown,
    DestinationMissing: _destination_missing,
    WriteRefused: _write_refused_in,
    ExtensionMissing: _extension_missing,
    RoleMailboxMissing: _role_mailbox_missing,
    InvalidFlag: _invalid_flag,
    MessageGone: _message_gone,
    PartGone: _part_failure,
    PartNotFound: _part_failure,
    NotAnAttachment: _part_failure,
    StructureUnusable: _part_failure,
    PartRefused: _part_failure,
    InvalidMessageId: _invalid_message_id,
    CursorError: _cursor_error,
    ChangesTokenError: _changes_token_error,
    MalformedUidSet: _malformed_uid_set,
    ExtractionError: _extraction_failed,
}


def tool_failure(exc: BaseException, call: Call | None) -> ToolFailure | None:
    """The envelope failure of ``exc`` (after :func:`~mail_imap_mcp.imap.errors.classify` when it is a
    library's or the server's); None when it is no failure the map knows (a bug: the runner answers
    ``internal``)."""
    if isinstance(exc, ToolFailure):
        return exc
    known = exc if any(kind in REGISTRY for kind in type(exc).__mro__) else classify(exc)
    if known is None:
        return None
    converter = next(REGISTRY[kind] for kind in type(known).__mro__ if kind in REGISTRY)
    return converter(known, call)


#: Failures that used to be envelope errors raised by the IMAP layer itself: where a call goes on past one
#: (an issue of one mailbox or message), it is said in the registry's words, as the call would fail.
_SAID_AS_THEY_ARE = (DestinationMissing, WriteRefused, ExtensionMissing, RoleMailboxMissing, InvalidFlag)


def envelope_of(exc: ImapError) -> ToolFailure:
    """The envelope failure of the domain error ``exc``, from what it carries (no call needed)."""
    failure = tool_failure(exc, None)
    assert failure is not None  # every ImapError is mapped, at least by its base
    return failure


def as_tool_failure(exc: ImapError) -> Exception:
    """``exc`` as the envelope failure the tools' callers of ``AccountConnection.run`` expect (the
    connections' ``translate``): what a domain error leaving ``run`` needs for its words, it carries."""
    return tool_failure(exc, None) or exc


def run(handle: Callable[[AppT, InputT], ToolResult[Any]], app: AppT, args: InputT) -> ToolResult[Any]:
    """Run a tool's handler; a domain error (or a library's, classified) that leaves it becomes its
    envelope failure here, so tools do not catch and convert themselves."""
    try:
        return handle(app, args)
    except ToolFailure:
        raise
    except Exception as exc:
        failure = tool_failure(exc, Call(app, args))
        if failure is None:
            raise
        raise failure from exc

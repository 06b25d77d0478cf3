"""The one map from domain errors to envelope errors, applied by the tool runner (:func:`run`).

``mail_imap_mcp.imap.errors.classify`` says what a failure means; this module says it to the model:
the :class:`~mail_imap_mcp.envelope.ToolFailure` of every exception class of ``imap/`` and
``content/`` (:data:`REGISTRY`; a unit test fails when one is missing), with messages that name the
arguments as the user wrote them. A tool raises what went wrong and lets :func:`run` say it; it catches
an error only to make it part of a partial answer (an issue of one mailbox or message), and then builds
the issue with :func:`mailbox_issue`. The words of mailboxes and messages (gone,
refused, recreated) are in :mod:`.mail_failures`, those of connecting, logging in and a call's
connection (busy, out of time, lost) in :mod:`.connect_failures`; this map uses both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.content.errors import ExtractionError
from mail_imap_mcp.envelope import ErrorCode, Issue, ToolFailure, ToolResult
from mail_imap_mcp.imap import errors
from mail_imap_mcp.imap.errors import (
    AccountBusy,
    AccountUnusable,
    CallTimedOut,
    ConnectFailed,
    ConnectionLost,
    ConnectPhase,
    ImplicitTlsPort,
    LoginDisabled,
    LoginRefused,
    MechanismNotOffered,
    OAuthRejected,
    ReconnectFailed,
    SelectionStale,
    ServerLimited,
    ServerRefused,
    StartTlsMissing,
    TimedOut,
    TokenCommandFailed,
    classify,
)
from mail_imap_mcp.imap.flags import ALLOWED_FLAGS, SYSTEM_FLAGS
from mail_imap_mcp.imap.uidplus import MalformedUidSet
from mail_imap_mcp.mail.draft_errors import AttachmentRefused
from mail_imap_mcp.mail.errors import (
    AccountUnknown,
    CharsetRejected,
    CommandRefused,
    MailboxGone,
    MailboxMissing,
    MailError,
    MessageGone,
    OutcomeUnknown,
    UidValidityChanged,
)
from mail_imap_mcp.mail.ids import ForeignMessageId
from mail_imap_mcp.mail.write_errors import (
    AppendRefused,
    DestinationMissing,
    ExtensionMissing,
    InvalidFlag,
    MailboxCommandRefused,
    RoleMailboxMissing,
    WriteRefused,
)
from mail_imap_mcp.presentation import connect_failures
from mail_imap_mcp.presentation.attachment_failures import ATTACHMENT_FAILURES
from mail_imap_mcp.presentation.call import App, Call
from mail_imap_mcp.presentation.draft_failures import DRAFT_FAILURES, attachment_refused
from mail_imap_mcp.presentation.local_file_failures import LOCAL_FILE_FAILURES
from mail_imap_mcp.presentation.mail_failures import (
    MAILBOX_COMMANDS,
    TRANSFERS,
    conflict,
    destination_not_found,
    extension_missing,
    mailbox_not_found,
    mailbox_refused,
    mailbox_vanished,
    message_gone,
    write_refused,
)
from mail_imap_mcp.presentation.name_failures import NAME_FAILURES
from mail_imap_mcp.presentation.query_failures import QUERY_FAILURES
from mail_imap_mcp.presentation.send_failures import SEND_FAILURES
from mail_imap_mcp.presentation.sieve_failures import SIEVE_FAILURES
from mail_imap_mcp.presentation.state_failures import STATE_FAILURES
from mail_imap_mcp.presentation.token_failures import TOKEN_FAILURES

InputT = TypeVar("InputT", bound=BaseModel)
AppT = TypeVar("AppT", bound=App)

#: What each extraction error code is as an envelope error.
_EXTRACTION_CODES = {
    "limit_exceeded": ErrorCode.LIMIT_EXCEEDED,
    "unsupported_format": ErrorCode.INVALID_INPUT,
    "encrypted": ErrorCode.PERMISSION_DENIED,
    "extract_failed": ErrorCode.UNAVAILABLE,
}


Converter = Callable[[Any, Call | None], ToolFailure]


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
    # A paging call is run again from its first page, with the filters it was given.
    arguments = call.rerun_arguments() if call is not None and call.takes("cursor") else None
    return conflict(account_id, mailbox, exc.expected, exc.actual, arguments)


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
    exc: TokenCommandFailed | OAuthRejected | ImplicitTlsPort | LoginRefused | ServerLimited,
    call: Call | None,
) -> ToolFailure:
    account_id, config = _account(call)
    if config is None:
        retry = isinstance(exc, ServerLimited)
        return ToolFailure(ErrorCode.UNAVAILABLE, f"Could not connect and log in: {exc}.", retryable=retry)
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
    if exc.parameter == "message_ids":
        return ToolFailure(
            ErrorCode.NOT_FOUND,
            f"The message ids name account {exc.account_id!r}, which is not configured; call "
            "imap_list_accounts and search again.",
            details={"parameter": "message_ids", "account_id": exc.account_id, "configured": exc.configured},
        )
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
    return write_refused(exc, exc.mailbox)


def _mailbox_command_refused(exc: MailboxCommandRefused, call: Call | None) -> ToolFailure:
    return mailbox_refused(exc.refused, exc.account_id, exc.command, exc.mailbox, exc.parameter)


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
    if command in TRANSFERS:
        return destination_not_found(exc.mailbox)
    if command in MAILBOX_COMMANDS:
        account_id, _ = _account(call)
        return mailbox_refused(exc, account_id, command, exc.mailbox, "mailbox")
    if command in {"", "SELECT", "EXAMINE"}:
        return mailbox_not_found(exc.mailbox)
    return write_refused(exc, exc.mailbox)


def _mailbox_gone(exc: MailboxGone, call: Call | None) -> ToolFailure:
    return mailbox_vanished(exc.account_id, exc.mailbox)


def _command_refused(exc: CommandRefused, call: Call | None) -> ToolFailure:
    if exc.command.upper() in MAILBOX_COMMANDS:
        account_id, _ = _account(call)
        return mailbox_refused(exc, account_id, exc.command.upper(), exc.mailbox, "mailbox")
    return write_refused(exc, exc.mailbox)


def _imap_error(exc: MailError, call: Call | None) -> ToolFailure:
    return ToolFailure(ErrorCode.UNAVAILABLE, f"The IMAP server failed: {errors.server_said(exc)}")


def _server_refused(exc: ServerRefused, call: Call | None) -> ToolFailure:
    """A NO or BAD no module turned into a domain error: said as what its words mean (``refused``)."""
    meant = errors.refused(exc.said)
    return tool_failure(meant, call) or _imap_error(meant, call)


def _message_gone(exc: MessageGone, call: Call | None) -> ToolFailure:
    ref = exc.ref or (call.message_ref() if call is not None else None)
    if ref is None:
        return ToolFailure(
            ErrorCode.NOT_FOUND, "The message no longer exists (deleted or moved); search again."
        )
    return message_gone(ref)


def _foreign_message_id(exc: ForeignMessageId, call: Call | None) -> ToolFailure:
    """Another user's id (of an account served per user): the words of a message that does not exist."""
    return message_gone(exc.ref, exc.text)


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
    MailError: _imap_error,
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
    ServerLimited: _connect_failed,
    OAuthRejected: _connect_failed,
    AccountBusy: _account_failure,
    CallTimedOut: _account_failure,
    ReconnectFailed: _account_failure,
    ConnectFailed: _account_failure,
    StartTlsMissing: _account_failure,
    LoginDisabled: _account_failure,
    AccountUnusable: _account_failure,
    MechanismNotOffered: _account_failure,
    AccountUnknown: _account_unknown,
    DestinationMissing: _destination_missing,
    WriteRefused: _write_refused_in,
    MailboxCommandRefused: _mailbox_command_refused,
    AppendRefused: _mailbox_command_refused,
    ExtensionMissing: _extension_missing,
    RoleMailboxMissing: _role_mailbox_missing,
    InvalidFlag: _invalid_flag,
    MessageGone: _message_gone,
    ServerRefused: _server_refused,
    ForeignMessageId: _foreign_message_id,
    AttachmentRefused: lambda exc, call: attachment_refused(exc, _failure_of_cause(exc.cause, call)),
    MalformedUidSet: _malformed_uid_set,
    ExtractionError: _extraction_failed,
    **STATE_FAILURES,
    **ATTACHMENT_FAILURES,
    **DRAFT_FAILURES,
    **SEND_FAILURES,
    **SIEVE_FAILURES,
    **NAME_FAILURES,
    **QUERY_FAILURES,
    **TOKEN_FAILURES,
    **LOCAL_FILE_FAILURES,
}


def _failure_of_cause(cause: Exception, call: Call | None) -> ToolFailure:
    failure = tool_failure(cause, call)
    if failure is None:  # no failure the map knows: a bug, answered as the runner answers one
        raise cause
    return failure


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


def envelope_of(exc: MailError) -> ToolFailure:
    """The envelope failure of the domain error ``exc``, from what it carries (no call needed)."""
    failure = tool_failure(exc, None)
    assert failure is not None  # every MailError is mapped, at least by its base
    return failure


def failure_of(exc: Exception) -> ToolFailure | None:
    """The words of a failure that does not end the tool call as it stands, in the registry's words
    without the call's arguments: an issue of a partial answer (a write's per-item results, a service's
    mailbox it went on past), the code of a write's audit line, and a request that is no tool call (a
    resource read, a bulk write gone to the background). None for a domain error its caller answers
    itself (``MailError.for_caller``: a stale id, a refused charset, a write's unknown outcome) and for
    what the registry does not know (a bug): raise it. A failure that ends the call is left to :func:`run`, which words it with the call's arguments."""
    if isinstance(exc, MailError) and exc.for_caller:
        return None
    return tool_failure(exc, None)


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

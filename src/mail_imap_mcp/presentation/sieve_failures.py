"""The words of a failure managing an account's Sieve scripts (:mod:`mail_imap_mcp.mail.sieve_errors`,
and the connection's own in :mod:`mail_imap_mcp.managesieve.errors`). A refusal carries the server's own
words whole; each says whether anything changed; the failure registry (:mod:`.failures`) says each."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.mail.sieve_errors import (
    NothingToUndo,
    RulesConflict,
    ScriptActive,
    ScriptExists,
    ScriptMissing,
    ScriptNameInvalid,
    ScriptRefused,
    ScriptTextInvalid,
    SieveCommandMissing,
    SieveError,
    SieveOutcomeUnknown,
    SieveQuotaExceeded,
    SieveRefused,
)
from mail_imap_mcp.managesieve.errors import (
    SieveConnectionError,
    SieveLoginRefused,
    SieveProtocolError,
    SieveTimedOut,
    SieveTlsFailed,
    SieveUnavailable,
)
from mail_imap_mcp.presentation.call import Call

_UNCHANGED = "Nothing was changed."
#: The most of a server's words quoted in a message (all of them are in ``details.said``).
_QUOTED = 600


def _quoted(said: str) -> str:
    words = " ".join(said.split())
    return words if len(words) <= _QUOTED else words[: _QUOTED - 1] + "…"


def _failed(exc: SieveError, call: Call | None) -> ToolFailure:
    return ToolFailure(ErrorCode.UNAVAILABLE, f"Managing the Sieve scripts failed: {exc}.", retryable=False)


def _name_invalid(exc: ScriptNameInvalid, call: Call | None) -> ToolFailure:
    return ToolFailure.invalid_input(exc.parameter, f"the script name {exc.problem}. {_UNCHANGED}")


def _text_invalid(exc: ScriptTextInvalid, call: Call | None) -> ToolFailure:
    return ToolFailure.invalid_input(exc.parameter, f"the script {exc.problem}. {_UNCHANGED}")


def _refused(exc: SieveRefused, call: Call | None) -> ToolFailure:
    details: dict[str, Any] = {"command": exc.command, "said": exc.said[:4000]}
    if exc.code:
        details["response_code"] = exc.code
    if exc.name:
        details["script"] = exc.name
    said = _quoted(exc.said) or exc.code or "no reason given"
    if isinstance(exc, ScriptRefused):
        return ToolFailure.invalid_input(
            "script", f"the server refused the script: {said}. {_UNCHANGED}", **details
        )
    if isinstance(exc, ScriptMissing):
        return ToolFailure(ErrorCode.NOT_FOUND, f"No script {exc.name!r} on the server ({said}); list the "
                           "rules to see them.", details=details, retryable=False)  # fmt: skip
    if isinstance(exc, ScriptActive):
        return ToolFailure(ErrorCode.CONFLICT, f"Script {exc.name!r} is the active one, which the server will "
                           f"not delete ({said}). {_UNCHANGED} Turn it off first.", details=details, retryable=False)  # fmt: skip
    if isinstance(exc, ScriptExists):
        return ToolFailure(ErrorCode.CONFLICT, f"A script of that name exists already ({said}). {_UNCHANGED}",
                           details=details, retryable=False)  # fmt: skip
    if isinstance(exc, SieveQuotaExceeded):
        return ToolFailure(ErrorCode.LIMIT_EXCEEDED, f"The account's Sieve quota would be exceeded ({said}). "
                           f"{_UNCHANGED}", details=details, retryable=False)  # fmt: skip
    return ToolFailure(ErrorCode.UNAVAILABLE if exc.temporary else ErrorCode.PERMISSION_DENIED,
                       f"The Sieve server refused {exc.command} ({said}). {_UNCHANGED}", details=details,
                       retryable=exc.temporary)  # fmt: skip


def _command_missing(exc: SieveCommandMissing, call: Call | None) -> ToolFailure:
    return ToolFailure(ErrorCode.UNSUPPORTED, f"The Sieve server offers no {exc.command} (an RFC 5804 server "
                       f"does). {_UNCHANGED}", details={"command": exc.command}, retryable=False)  # fmt: skip


def _outcome_unknown(exc: SieveOutcomeUnknown, call: Call | None) -> ToolFailure:
    return ToolFailure(ErrorCode.UNAVAILABLE, f"The connection was lost after {exc.command} was sent: it may "
                       "or may not have happened. It was not retried; list the rules to see.",
                       details={"command": exc.command, "script": exc.name}, retryable=False)  # fmt: skip


def _conflict(exc: RulesConflict, call: Call | None) -> ToolFailure:
    return ToolFailure(ErrorCode.CONFLICT, f"{exc.reason[0].upper()}{exc.reason[1:]}; nothing was changed, so as "
                       "not to overwrite that change. List the rules to see them as they are.",
                       details={"scripts": list(exc.scripts)}, retryable=False)  # fmt: skip


def _nothing_to_undo(exc: NothingToUndo, call: Call | None) -> ToolFailure:
    return ToolFailure(ErrorCode.NOT_FOUND, "There is no change of the rules to undo.", retryable=False)


def _connection(exc: SieveConnectionError, call: Call | None) -> ToolFailure:
    details = {"stage": exc.stage.value}
    if isinstance(exc, SieveLoginRefused):
        return ToolFailure(ErrorCode.AUTH_FAILED, f"The Sieve server refused the login ({exc.detail}). "
                           f"{_UNCHANGED}", details=details, retryable=False)  # fmt: skip
    if isinstance(exc, SieveTlsFailed):
        what = "its certificate failed verification" if exc.certificate else "TLS could not be set up"
        return ToolFailure(ErrorCode.UNAVAILABLE, f"The Sieve server was not reached safely: {what} "
                           f"({exc.detail}). {_UNCHANGED}", details=details, retryable=False)  # fmt: skip
    if isinstance(exc, SieveTimedOut):
        return ToolFailure(ErrorCode.TIMEOUT, f"The Sieve server did not answer in time. {_UNCHANGED}",
                           details=details, retryable=True)  # fmt: skip
    if isinstance(exc, SieveProtocolError):
        return ToolFailure(ErrorCode.UNAVAILABLE, f"The Sieve server's answer could not be read ({exc.detail}).",
                           details=details, retryable=False)  # fmt: skip
    return ToolFailure(ErrorCode.UNAVAILABLE, f"The Sieve server could not be reached ({exc.detail}).",
                       details=details, retryable=True)  # fmt: skip


#: The registry's lines of managing Sieve scripts.
SIEVE_FAILURES: Mapping[type[BaseException], Callable[[Any, Call | None], ToolFailure]] = {
    SieveError: _failed,
    ScriptNameInvalid: _name_invalid,
    ScriptTextInvalid: _text_invalid,
    **dict.fromkeys(
        (SieveRefused, ScriptRefused, ScriptMissing, ScriptActive, ScriptExists, SieveQuotaExceeded), _refused
    ),
    SieveCommandMissing: _command_missing,
    RulesConflict: _conflict,
    NothingToUndo: _nothing_to_undo,
    SieveOutcomeUnknown: _outcome_unknown,
    **dict.fromkeys(
        (
            SieveConnectionError,
            SieveUnavailable,
            SieveTimedOut,
            SieveTlsFailed,
            SieveLoginRefused,
            SieveProtocolError,
        ),
        _connection,
    ),
}

"""The words of Sieve failures (``presentation/sieve_failures.py``): each domain error of managing scripts
has its envelope code, quotes the server's own words, and says nothing changed where nothing did."""

from __future__ import annotations

import pytest

from mail_imap_mcp.envelope import ErrorCode
from mail_imap_mcp.mail.sieve_errors import (
    ScriptNameInvalid,
    SieveCommandMissing,
    SieveOutcomeUnknown,
    refusal,
)
from mail_imap_mcp.managesieve.errors import SieveLoginRefused, SieveTimedOut, Stage
from mail_imap_mcp.presentation.failures import tool_failure
from mail_imap_mcp.query.sieve import NotSayableInSieve

VERDICT = "line 2: error: unknown command 'fileinot' (only reported once at first occurrence).\r\nerror: validation failed.\r\n"


@pytest.mark.parametrize(
    ("error", "code", "words"),
    [
        (refusal("PUTSCRIPT", VERDICT, name="rules"), ErrorCode.INVALID_INPUT, "unknown command 'fileinot'"),
        (refusal("CHECKSCRIPT", VERDICT), ErrorCode.INVALID_INPUT, "validation failed"),
        (
            refusal("GETSCRIPT", "Sieve script `x' not found", "NONEXISTENT", "x"),
            ErrorCode.NOT_FOUND,
            "not found",
        ),
        (
            refusal("DELETESCRIPT", "Cannot delete the active Sieve script.", "ACTIVE", "x"),
            ErrorCode.CONFLICT,
            "Turn it off",
        ),
        (refusal("RENAMESCRIPT", "exists", "ALREADYEXISTS", "x"), ErrorCode.CONFLICT, "exists"),
        (
            refusal("PUTSCRIPT", "Script count quota exceeded (max 5 scripts).", "QUOTA/MAXSCRIPTS"),
            ErrorCode.LIMIT_EXCEEDED,
            "max 5 scripts",
        ),
        (refusal("SETACTIVE", "Internal error", "TRYLATER"), ErrorCode.UNAVAILABLE, "Internal error"),
        (ScriptNameInvalid("a/b", "is a path"), ErrorCode.INVALID_INPUT, "is a path"),
        (SieveCommandMissing("RENAMESCRIPT"), ErrorCode.UNSUPPORTED, "RENAMESCRIPT"),
        (SieveOutcomeUnknown("PUTSCRIPT", "rules"), ErrorCode.UNAVAILABLE, "may or may not"),
        (
            SieveLoginRefused(Stage.LOGIN, "Authentication failed."),
            ErrorCode.AUTH_FAILED,
            "Authentication failed",
        ),
        (SieveTimedOut(Stage.COMMAND, "slow"), ErrorCode.TIMEOUT, "in time"),
        (NotSayableInSieve("is:unread", "flags cannot be tested"), ErrorCode.INVALID_INPUT, "'is:unread'"),
    ],
)
def test_each_sieve_failure_has_its_code_and_the_servers_words(
    error: Exception, code: ErrorCode, words: str
) -> None:
    failure = tool_failure(error, None)
    assert failure is not None and failure.code is code and words in failure.message, failure


def test_a_refused_script_names_the_script_argument_and_keeps_the_whole_verdict() -> None:
    failure = tool_failure(refusal("PUTSCRIPT", VERDICT, name="rules"), None)
    assert failure is not None and failure.details is not None
    assert failure.details["parameter"] == "script" and failure.details["said"] == VERDICT
    assert "Nothing was changed." in failure.message and failure.details["script"] == "rules"

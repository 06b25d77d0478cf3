"""The words of an id, cursor or token that does not fit: malformed, of another search, of another user
(said as none at all, naming nobody), or of mailboxes that changed since. The failure registry
(:mod:`.failures`) says each with these."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mail_imap_mcp.envelope import ErrorCode, NextAction, ToolFailure
from mail_imap_mcp.imap.changes_token import ChangesTokenError, ForeignChangesToken
from mail_imap_mcp.mail.cursors import CursorError, CursorMismatch, ForeignCursor, MailboxesChanged
from mail_imap_mcp.mail.ids import InvalidMessageId
from mail_imap_mcp.presentation.call import Call


def _invalid_message_id(exc: InvalidMessageId, call: Call | None) -> ToolFailure:
    parameter = exc.parameter or next(
        (
            name
            for name in ("message_id", "message_ids", "in_reply_to")
            if call is not None and call.argument(name) is not None
        ),
        "message_id",
    )
    return ToolFailure.invalid_input(parameter, f"{exc}.")


def _cursor_error(exc: CursorError, call: Call | None) -> ToolFailure:
    if isinstance(exc, ForeignCursor):  # another user's: said as none at all, naming nobody
        return ToolFailure(
            ErrorCode.NOT_FOUND,
            "No such cursor (argument 'cursor'); rerun the search without a cursor to start again.",
            details={"parameter": "cursor"},
            retryable=False,
        )
    if isinstance(exc, CursorMismatch):
        return ToolFailure.invalid_input(
            "cursor",
            "it belongs to a search with a different account, mailbox or filters, or another sort order. "
            "Pass exactly the filters of the first page with this cursor, or drop the cursor to start a new search.",
        )
    return ToolFailure.invalid_input("cursor", f"{exc}. Rerun the search without a cursor to start again.")


def _mailboxes_changed(exc: MailboxesChanged, call: Call | None) -> ToolFailure:
    """A cursor of several mailboxes whose set changed (created, deleted, renamed, recreated)."""
    found = call.account() if call is not None else None
    account_id = found[0] if found is not None else ""
    arguments = {**(call.rerun_arguments() if call is not None else {}), "account_id": account_id}
    return ToolFailure(
        ErrorCode.CONFLICT,
        "The mailboxes this search covers changed since its first page (one was created, deleted, renamed "
        "or recreated), so the cursor (argument 'cursor') no longer applies; run the search again from its "
        "first page.",
        details={"parameter": "cursor"},
        retryable=False,
        next_action=NextAction(
            instruction="Run the search again from its first page",
            tool="imap_search_messages",
            arguments=arguments,
        ),
    )


def _changes_token_error(exc: ChangesTokenError, call: Call | None) -> ToolFailure:
    if isinstance(exc, ForeignChangesToken):  # another user's: said as none at all, naming nobody
        return ToolFailure(
            ErrorCode.NOT_FOUND,
            f"No such token (argument {exc.parameter!r}). Call imap_get_changes without since (and cursor) "
            "for a new token.",
            details={"parameter": exc.parameter},
            retryable=False,
        )
    return ToolFailure.invalid_input(
        exc.parameter, f"{exc}. Call imap_get_changes without since (and cursor) for a new token."
    )


#: The registry's lines of ids, cursors and tokens that do not fit.
TOKEN_FAILURES: Mapping[type[BaseException], Callable[[Any, Call | None], ToolFailure]] = {
    InvalidMessageId: _invalid_message_id,
    CursorError: _cursor_error,
    ForeignCursor: _cursor_error,
    CursorMismatch: _cursor_error,
    MailboxesChanged: _mailboxes_changed,
    ChangesTokenError: _changes_token_error,
    ForeignChangesToken: _changes_token_error,
}

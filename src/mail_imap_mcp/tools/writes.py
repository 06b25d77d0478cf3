"""What every write tool shares: the audit line, and the arguments and issues of a write.

A write tool's handler: ``app.write_connection(account)`` (the gate), validate, with ``dry_run`` return
the plan, else ``connection.run_write(...)`` where each change is sent inside
``ImapSession.write_command`` (never retried), then :func:`audit` the outcome.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import Field

from mail_imap_mcp.envelope import Issue, NextAction
from mail_imap_mcp.envelope.mcp import ToolResult, current_request_id
from mail_imap_mcp.operations import Operation, OperationState

audit_log = logging.getLogger("mail_imap_mcp.audit")

DRY_RUN_DESCRIPTION = "true: return what would change (per source and destination mailbox), change nothing."
CONFIRM_TOKEN_DESCRIPTION = (
    "Token from a confirmation_required answer, after the user confirmed exactly that request."
)


def operation_field() -> Any:
    """The ``operation`` field of a bulk write's data: set when the write continues in the background."""
    return Field(
        default=None,
        description="Set when the write continues in the background: follow it with imap_get_operation "
        "(the other fields are then empty until it finishes).",
    )


def operation_state(result: ToolResult[Any]) -> OperationState:
    """How a finished bulk write ended, from its data's ``status``."""
    return OperationState.PARTIAL if result.data.status == "partial" else OperationState.OK


def follow_operation(operation: Operation) -> NextAction:
    return NextAction(
        instruction="The write continues in the background: check it (with its result once finished)",
        tool="imap_get_operation",
        arguments={"operation_id": operation.operation_id},
    )


def accepted_summary(operation: Operation) -> str:
    return (
        f"Continues in the background as {operation.operation_id} ({operation.done} of {operation.total} "
        "done so far); follow it with imap_get_operation"
    )


def audit(tool: str, account_id: str, action: str, count: int, outcome: str) -> None:
    """One INFO line per write: who asked what, on how many messages, and how it ended.

    Never message content, addresses, subjects or secrets: ids and counts only. The same fields go to
    the JSON-lines audit file when ``[server] audit_file`` is set (see ``cli``).
    """
    fields = {
        "request_id": current_request_id.get(),
        "tool": tool,
        "account": account_id,
        "action": action,
        "messages": count,
        "outcome": outcome,
    }
    audit_log.info(
        "write request_id=%s tool=%s account=%s action=%s messages=%d outcome=%s",
        *fields.values(),
        extra={"audit": fields},
    )


def outcome_unknown_issue(message_id: str, uid: int) -> Issue:
    """The connection died after the change was sent: it may or may not have happened."""
    return Issue(
        code="outcome_unknown",
        stage="write",
        message=f"UID {uid}: the connection was lost after the change was sent; it may or may not have "
        "happened. It was not retried. Search the source and destination mailboxes to check.",
        retryable=False,
        message_id=message_id,
        uid=uid,
    )

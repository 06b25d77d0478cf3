"""A background write as the model sees it: what imap_get_operation and imap_cancel_operation answer."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from mail_imap_mcp.envelope import ErrorInfo, NextAction, Payload, ToolResult
from mail_imap_mcp.operations import FINISHED, OperationRef, OperationView

#: The tool a running operation is checked with (its next_action names it).
NAME = "imap_get_operation"
ERRORS = {
    "invalid_input": "operation_id is malformed.",
    "not_found": "No such operation (unknown, evicted, the server restarted, or another user's).",
}
OPERATION_ID = Field(
    min_length=1, max_length=64, pattern=r"^op_[0-9]+_[0-9a-f]+$", description="From data.background."
)


class OperationDetail(Payload):
    operation: OperationRef
    tool: str = Field(description="The write tool that started it.")
    account_id: str = Field(description="Account it writes to.")
    started_utc: str = Field(description="When it started (UTC, RFC 3339).")
    finished_utc: str | None = Field(default=None, description="When it ended, once it did.")
    summary: str | None = Field(default=None, description="The write's own summary, once it finished.")
    result: dict[str, Any] | None = Field(
        default=None, description="The write's data as the tool returns it (with include_result)."
    )
    error: ErrorInfo | None = Field(default=None, description="Why it failed, when state is failed.")
    next_action: NextAction | None = Field(
        default=None,
        description="Poll again while it runs; once it failed, the failure's own next call (e.g. the same "
        "write with its confirm_token), as the write would have answered it.",
    )


def describe(operation: OperationView, include_result: bool) -> ToolResult[OperationDetail]:
    """The detail of ``operation``, as imap_get_operation and imap_cancel_operation answer it."""
    finished = operation.state in FINISHED
    detail = OperationDetail(
        operation=OperationRef(
            operation_id=operation.operation_id,
            state=operation.state,
            done=operation.done,
            total=operation.total,
        ),
        tool=operation.tool,
        account_id=operation.account_id,
        started_utc=operation.started_utc,
        finished_utc=operation.finished_utc,
        summary=operation.summary,
        result=operation.result if include_result else None,
        error=operation.error,
        next_action=_next_action(operation, finished),
    )
    done = messages_done(operation.done, operation.total)
    summary = f"Operation {operation.operation_id} ({operation.tool}): {operation.state}, {done}"
    return ToolResult(summary=summary, data=detail)


def messages_done(done: int, total: int) -> str:
    """How far a background write is, in the messages it counts: "30 of 30 messages done"."""
    return f"{done} of {total} message{'' if total == 1 else 's'} done"


def _next_action(operation: OperationView, finished: bool) -> NextAction | None:
    if not finished:
        return NextAction(
            instruction="Check the operation again in a moment",
            tool=NAME,
            arguments={"operation_id": operation.operation_id},
        )
    return operation.failure_next_action

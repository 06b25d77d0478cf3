"""imap_get_operation: the state, progress and (when finished) result of a write running in the background."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mail_imap_mcp.call import Call
from mail_imap_mcp.envelope import ToolResult
from mail_imap_mcp.presentation.operations import ERRORS, NAME, OPERATION_ID, OperationDetail, describe
from mail_imap_mcp.tools.spec import FOLLOWING, ToolSpec

__all__ = ["NAME", "TOOL"]

TITLE = "Get a background write"
DESCRIPTION = "A background write's state, progress and, once finished, its result (from data.background)."
DETAILS = (
    "Check a write that continues in the background (imap_apply_to_messages and "
    "imap_update_message_flags answered with data.background instead of the result; imap_send_draft while "
    "the user decides on its approval page): state (accepted, "
    "running, ok, partial, failed, canceled), progress, and with include_result the write's own result "
    "once it finished. Listed where writes or sending are on: both start one."
)


class GetOperationInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    operation_id: str = OPERATION_ID
    include_result: bool = Field(default=True, description="The finished write's data.")


def handle(app: Call, args: GetOperationInput) -> ToolResult[OperationDetail]:
    """The caller's operation from ``app.operations``, by ``presentation.operations``; not_found."""
    return describe(app.operations.get(args.operation_id, app.caller.user), args.include_result)


TOOL = ToolSpec(
    name=NAME,
    title=TITLE,
    description=DESCRIPTION,
    details=DETAILS,
    input_model=GetOperationInput,
    data_model=OperationDetail,
    handle=handle,
    errors=ERRORS,
    listed_by=FOLLOWING,
)

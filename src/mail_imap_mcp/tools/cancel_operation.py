"""imap_cancel_operation: stop a background write between two batches."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from mail_imap_mcp.call import Call
from mail_imap_mcp.envelope import ToolResult
from mail_imap_mcp.presentation.operations import ERRORS, OPERATION_ID, OperationDetail, describe
from mail_imap_mcp.tools.spec import FOLLOWING, STOPPING, ToolSpec

NAME = "imap_cancel_operation"
TITLE = "Cancel a background write"
DESCRIPTION = "Stop a background write after its current batch; what was done stays done."
DETAILS = (
    "Stop a write running in the background. It stops after the batch in progress (a batch already "
    "sent to the server is never abandoned half-way): what was done stays done, and imap_get_operation "
    "then reports state canceled with the progress reached. A send waiting for the user's approval "
    "(imap_send_draft) is stopped at once: its page is closed (it tells the user), nothing is sent; once the "
    "user pressed Send it is sent. Cancelling a finished operation changes nothing. Listed where writes "
    "or sending are on."
)


class CancelOperationInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    operation_id: str = OPERATION_ID


def handle(app: Call, args: CancelOperationInput) -> ToolResult[OperationDetail]:
    """Cancel the caller's operation (``app.operations``), by ``presentation.operations``; not_found."""
    return describe(app.operations.cancel(args.operation_id, app.caller.user), include_result=False)


TOOL = ToolSpec(
    name=NAME,
    title=TITLE,
    description=DESCRIPTION,
    details=DETAILS,
    input_model=CancelOperationInput,
    data_model=OperationDetail,
    handle=handle,
    errors=ERRORS,
    capability=STOPPING,
    listed_by=FOLLOWING,
)

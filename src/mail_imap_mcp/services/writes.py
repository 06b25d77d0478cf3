"""The connection a bulk write runs on: the account's write connection, gated by the configuration."""

from __future__ import annotations

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.operations.batch import Batch


def batch_connection(app: AppContext, batch: Batch) -> AccountConnection:
    """The write connection of the batch's account; ``not_found`` naming ``message_ids`` when the ids
    name an account that is not configured."""
    try:
        return app.write_connection(batch.account_id)
    except ToolFailure as failure:
        if failure.code is not ErrorCode.NOT_FOUND:
            raise
        raise ToolFailure(
            ErrorCode.NOT_FOUND,
            f"The message ids name account {batch.given_account_id!r}, which is not configured; call "
            "imap_list_accounts and search again.",
            details={**failure.details, "parameter": "message_ids"},
        ) from None

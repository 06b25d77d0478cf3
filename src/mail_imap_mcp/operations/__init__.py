"""Bulk writes between the IMAP session and the write tools.

- :mod:`.batch`: message ids parsed, de-duplicated and grouped per account and mailbox;
- :mod:`.ledger`: what a write found and did, message by message (results, issues, not attempted);
- :mod:`.runner`: the per-mailbox loop (cancel, lost connection) and the hand-off to the background;
- :mod:`.background`: the registry of writes still running (imap_get_operation, imap_cancel_operation);
- :mod:`.audit`: the one audit line per write.

A write tool brings only its own step (what it does in one mailbox), its models and its next_action.
"""

from __future__ import annotations

from mail_imap_mcp.operations.background import (
    FINISHED,
    Operation,
    OperationRef,
    OperationRegistry,
    OperationState,
    Progress,
)
from mail_imap_mcp.operations.shared import OperationView

__all__ = [
    "FINISHED",
    "Operation",
    "OperationRef",
    "OperationRegistry",
    "OperationState",
    "OperationView",
    "Progress",
]

"""The audit line of a write: who asked what, on how many messages, and how it ended."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from mail_imap_mcp.envelope import ToolFailure
from mail_imap_mcp.envelope.mcp import current_request_id

audit_log = logging.getLogger("mail_imap_mcp.audit")


def audit(tool: str, account_id: str, action: str, count: int, outcome: str, **ids: str) -> None:
    """One INFO line per write: who asked what, on how many messages, and how it ended.

    ``ids`` name the messages a write removed or put elsewhere beyond those asked for by id (e.g. the
    draft a revision replaced: ``removed=<its message_id>``, ``moved_to=<its id in Trash>``). Never
    message content, addresses, subjects or secrets: ids and counts only. The same fields go to the
    JSON-lines audit file when ``[server] audit_file`` is set (see ``cli``).
    """
    fields = {
        "request_id": current_request_id.get(),
        "tool": tool,
        "account": account_id,
        "action": action,
        "messages": count,
        "outcome": outcome,
        **ids,
    }
    named = "".join(f" {key}=%s" for key in ids)
    audit_log.info(
        "write request_id=%s tool=%s account=%s action=%s messages=%d outcome=%s" + named,
        *fields.values(),
        extra={"audit": fields},
    )


@dataclass(frozen=True)
class AuditLine:
    """The audit line of one call, written once its outcome is known."""

    tool: str
    account_id: str
    action: str
    count: int
    #: Put before the error code of a failed call (``failed:`` in imap_update_message_flags' lines).
    failure_prefix: str = ""

    def done(self, outcome: str) -> None:
        audit(self.tool, self.account_id, self.action, self.count, outcome)

    def failed(self, failure: ToolFailure) -> None:
        self.done(f"{self.failure_prefix}{failure.code.value}")

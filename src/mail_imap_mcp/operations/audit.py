"""The audit line of a write: who asked what, on how many messages, and how it ended."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from mail_imap_mcp.envelope import ToolFailure
from mail_imap_mcp.envelope.call_context import current_request_id
from mail_imap_mcp.state import Caller

audit_log = logging.getLogger("mail_imap_mcp.audit")


def audit(
    caller: Caller, tool: str, account_id: str, action: str, count: int, outcome: str, **ids: str
) -> None:
    """One INFO line per write: who asked what, on how many messages, and how it ended.

    ``user`` is the caller's name as their access token gives it (folded: ``Caller``; ``-`` on a
    one-person server) and, for an account served per user, ``mailbox_of`` whose mailbox it was.
    ``ids`` name the messages a write removed or put elsewhere beyond those asked for by id (e.g. the
    draft a revision replaced: ``removed=<its message_id>``, ``moved_to=<its id in Trash>``). Never
    message content, subjects or secrets, and no address but the user's own name (an address where
    ``user_claim = "email"``): ids and counts. The same fields go to the JSON-lines audit file when
    ``[server] audit_file`` is set (see ``cli``).
    """
    fields = {
        "request_id": current_request_id.get(),
        **caller.audit_fields(account_id),
        "tool": tool,
        "account": account_id,
        "action": action,
        "messages": count,
        "outcome": outcome,
        **ids,
    }
    audit_log.info(
        "write" + "".join(f" {key}=%s" for key in fields),
        *fields.values(),
        extra={"audit": fields},
    )


@dataclass(frozen=True)
class AuditLine:
    """The audit line of one call of ``caller``, written once its outcome is known."""

    caller: Caller
    tool: str
    account_id: str
    action: str
    count: int
    #: Put before the error code of a failed call (``failed:`` in imap_update_message_flags' lines).
    failure_prefix: str = ""

    def done(self, outcome: str) -> None:
        audit(self.caller, self.tool, self.account_id, self.action, self.count, outcome)

    def failed(self, failure: ToolFailure) -> None:
        self.done(f"{self.failure_prefix}{failure.code.value}")

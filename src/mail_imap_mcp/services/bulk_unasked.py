"""What one caller moved or deleted by search without being asked, added up over a short window
(:data:`~mail_imap_mcp.operations.bulk.UNASKED_WINDOW_S`) in the state store, so instances that share Redis agree: a run whose set, with what
was moved unasked before it, is over ``bulk_approval_threshold`` asks the user, as a larger set does
(three narrower searches of 20 do not pass a threshold of 25 unasked). An approval starts the count
afresh. Moves by ids are not counted: see docs/security.md ("Bulk writes by search")."""

from __future__ import annotations

from dataclasses import dataclass

from mail_imap_mcp.call import Call
from mail_imap_mcp.operations.bulk import UNASKED_WINDOW_S


@dataclass(frozen=True)
class Unasked:
    """One caller's count of messages moved without asking, on one account."""

    app: Call
    key: str

    def count(self) -> int:
        raw = self.app.store.get(self.key)
        return int(raw) if raw is not None else 0

    def allows(self, more: int) -> bool:
        """Whether ``more`` may be moved without asking the user (the count stays within the threshold)."""
        return self.count() + more <= self.app.config.server.bulk_approval_threshold

    def add(self, more: int) -> None:
        self.app.store.incr(self.key, UNASKED_WINDOW_S, by=more)

    def clear(self) -> None:
        self.app.store.delete(self.key)


def unasked(app: Call, account_id: str) -> Unasked:
    """The caller's count for ``account_id``."""
    return Unasked(app, app.caller.key("bulk-unasked", account_id))

"""What a bulk write found and did, message by message, built up mailbox by mailbox."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from mail_imap_mcp.envelope import Issue, ToolFailure
from mail_imap_mcp.operations.batch import Batch, BatchItem, MailboxGroup

ResultT = TypeVar("ResultT")

NOT_ATTEMPTED = "not_attempted"
OUTCOME_UNKNOWN = "outcome_unknown"
LOST_CONNECTION = "the connection was lost before this mailbox's turn"
CANCELLED = "the operation was cancelled before this mailbox's turn"


@dataclass
class Ledger(Generic[ResultT]):
    """Each message ends settled (a result of the tool's own type) or failed (an issue with a code);
    whatever is neither when the run stops was not attempted."""

    results: dict[BatchItem, ResultT] = field(default_factory=dict)
    #: The issue code of each message that failed.
    failed: dict[BatchItem, str] = field(default_factory=dict)
    issues: list[Issue] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: The failure each issue code stands for: the call's answer when every message failed alike.
    failures: dict[str, ToolFailure] = field(default_factory=dict)
    #: Whether a write happened (or may have): from then on a failure must not hide what was done.
    wrote: bool = False

    def settle(self, item: BatchItem, result: ResultT) -> None:
        self.results[item] = result

    def fail(
        self,
        items: Iterable[BatchItem],
        code: str,
        stage: str,
        message: str,
        *,
        retryable: bool = False,
        failure: ToolFailure | None = None,
    ) -> None:
        """An issue for each of ``items``; ``failure`` is what the call answers if nothing else happened."""
        if failure is not None:
            self.failures.setdefault(code, failure)
        for item in items:
            self.failed[item] = code
            self.issues.append(
                Issue(
                    code=code,
                    stage=stage,
                    message=message,
                    retryable=retryable,
                    message_id=item.text,
                    uid=item.ref.uid,
                )
            )

    def unsettled(self, items: Iterable[BatchItem]) -> list[BatchItem]:
        """Those of ``items`` neither settled nor failed yet."""
        return [item for item in items if item not in self.results and item not in self.failed]

    def open_items(self, groups: Iterable[MailboxGroup]) -> list[BatchItem]:
        """The messages of ``groups`` neither settled nor failed yet."""
        return self.unsettled(item for group in groups for item in group.items)

    def not_attempted(self, groups: Iterable[MailboxGroup], reason: str = LOST_CONNECTION) -> None:
        """The open messages of ``groups``: nothing was sent for them, they can simply be asked again."""
        self.fail(
            self.open_items(groups),
            NOT_ATTEMPTED,
            "write",
            f"Not attempted: {reason}; nothing was changed for this message. Call again with its id.",
            retryable=True,
        )

    def outcome_unknown(self, items: Iterable[BatchItem]) -> None:
        """The connection died after the change of ``items`` was sent: it may or may not have happened."""
        self.wrote = True
        for item in items:
            self.failed[item] = OUTCOME_UNKNOWN
            self.issues.append(outcome_unknown_issue(item.text, item.ref.uid))

    def sole_failure(self) -> ToolFailure | None:
        """The failure to answer with when nothing succeeded and every message failed for one reason
        (never for ``outcome_unknown``: something may have changed)."""
        codes = {issue.code for issue in self.issues}
        if self.results or len(codes) != 1:
            return None
        return self.failures.get(next(iter(codes)))

    def issues_in_order(self, batch: Batch) -> list[Issue]:
        """The issues in the order of the ids given."""
        position = batch.position()
        return sorted(self.issues, key=lambda issue: position.get(issue.message_id or "", 0))


def outcome_unknown_issue(message_id: str, uid: int) -> Issue:
    """The connection died after the change was sent: it may or may not have happened."""
    return Issue(
        code=OUTCOME_UNKNOWN,
        stage="write",
        message=f"UID {uid}: the connection was lost after the change was sent; it may or may not have "
        "happened. It was not retried. Search the source and destination mailboxes to check.",
        retryable=False,
        message_id=message_id,
        uid=uid,
    )

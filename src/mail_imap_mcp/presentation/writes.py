"""What the write tools say: argument descriptions, the background answer, and the refusals of a bulk
write (its account is :func:`mail_imap_mcp.services.writes.batch_account`).

A write tool's handler: ``app.write_connection(account)`` (the gate), validate, with ``dry_run`` return
the plan, else ``connection.run_write(...)`` where each change is sent inside
``ImapSession.write_command`` (never retried), then audit the outcome
(:mod:`mail_imap_mcp.operations.audit`). Bulk writes go through :mod:`mail_imap_mcp.operations`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from pydantic import Field

from mail_imap_mcp.envelope import ErrorCode, NextAction, ToolFailure
from mail_imap_mcp.mail.errors import MailError
from mail_imap_mcp.mail.ids import InvalidMessageId
from mail_imap_mcp.operations import Operation
from mail_imap_mcp.operations.batch import Batch
from mail_imap_mcp.operations.runner import SelectRefusals
from mail_imap_mcp.presentation.failures import envelope_of, failure_of
from mail_imap_mcp.presentation.mail_failures import conflict, ids_mailbox_gone
from mail_imap_mcp.presentation.operations import messages_done
from mail_imap_mcp.smtp.errors import SubmissionError
from mail_imap_mcp.smtp.refusals import SendRefused

if TYPE_CHECKING:
    from mail_imap_mcp.operations.transfer import TransferOutcome

DRY_RUN_DESCRIPTION = "true: only say what would change."
CONFIRM_TOKEN_DESCRIPTION = "From confirmation_required, after the user agreed."


def operation_field(*, deprecated: bool = False) -> Any:
    """The ``background`` field of a bulk write's data: set when the write continues in the background
    (``deprecated``: the same under its former name, ``operation`` in imap_apply_to_messages)."""
    if deprecated:
        return Field(
            default=None,
            description="Deprecated alias of background (the same value), kept for one release: read "
            "background instead.",
        )
    return Field(
        default=None,
        description="Set when the write continues in the background: follow it with imap_get_operation "
        "(the other fields are then empty until it finishes).",
    )


def follow_operation(operation: Operation) -> NextAction:
    return NextAction(
        instruction="The write continues in the background: check it (with its result once finished)",
        tool="imap_get_operation",
        arguments={"operation_id": operation.operation_id},
    )


def accepted_summary(operation: Operation) -> str:
    return (
        f"Continues in the background as {operation.operation_id} "
        f"({messages_done(operation.done, operation.total)} so far); follow it with imap_get_operation"
    )


def permanent_delete_turned_off() -> ToolFailure:
    """The refusal of a permanent delete where the configuration does not allow one."""
    return ToolFailure(
        ErrorCode.PERMISSION_DENIED,
        "Permanent delete is turned off; nothing was changed. delete without permanent moves the messages "
        "to Trash (recoverable). To allow it, the user sets allow_permanent_delete = true in [server].",
        details={"setting": "allow_permanent_delete"},
    )


def none_found(account_id: str, batch: Batch) -> ToolFailure:
    """None of the batch's messages exists any more: nothing was changed."""
    first = batch.groups[0].mailbox
    return ToolFailure(
        ErrorCode.NOT_FOUND,
        f"None of the {len(batch.items)} message(s) exists any more (deleted or moved); nothing was "
        "changed. Search again for current ids.",
        details={"parameter": "message_ids", "mailbox": first, "message_ids": [i.text for i in batch.items]},
        next_action=NextAction(
            instruction="Search the mailbox again",
            tool="imap_search_messages",
            arguments={"account_id": account_id, "mailbox": first},
        ),
    )


#: A write's failure in the registry's words, for a bulk write's operation that goes on in the
#: background (:func:`mail_imap_mcp.presentation.failures.failure_of`); the tool runner words the call's
#: failure itself.
write_failure = failure_of


@contextmanager
def audited(failed: Callable[[ToolFailure], None]) -> Iterator[None]:
    """A write's steps whose failure its audit line records (``failed``, with the failure's code): the
    failure leaves as it is, and the tool runner words it."""
    try:
        yield
    except (ToolFailure, MailError, InvalidMessageId, SendRefused, SubmissionError) as exc:
        failure = failure_of(exc)
        if failure is not None:
            failed(failure)
        raise


def select_refusals(account_id: str) -> SelectRefusals:
    """How a bulk write words a mailbox of its ids that cannot be opened: recreated, or gone."""
    return SelectRefusals(
        stale=lambda mailbox, exc: conflict(account_id, mailbox, exc.expected, exc.actual),
        gone=lambda mailbox: ids_mailbox_gone(account_id, mailbox),
        refused=envelope_of,
    )


def move_back(tool: str, moved_from: list[tuple[str, list[str]]]) -> list[NextAction]:
    """The undo of a move: per source mailbox, the call that moves the messages (by their new ids) back."""
    return [
        NextAction(
            instruction=f"Undo: move the {len(new_ids)} message(s) back to {mailbox!r}",
            tool=tool,
            arguments={"message_ids": new_ids, "action": "move", "destination_mailbox": mailbox},
        )
        for mailbox, new_ids in moved_from
    ]


def after_transfer(
    tool: str,
    account_id: str,
    run: TransferOutcome,
    undo: list[NextAction],
    *,
    rerun: dict[str, Any] | None,
    copied: bool,
) -> NextAction | None:
    """What to do after a move, copy or delete: look where a lost connection left the messages (never
    repeat), run a dry run's call for real (``rerun``), undo, or list what was copied."""
    if run.unknown is not None:
        return NextAction(
            instruction=f"The connection was lost after the change was sent to {run.unknown!r}: search it "
            f"(and {run.destination!r}) to see where the messages are now; do not simply repeat the call",
            tool="imap_search_messages",
            arguments={"account_id": account_id, "mailbox": run.unknown},
        )
    if rerun is not None:
        return NextAction(instruction="Apply it for real", tool=tool, arguments=rerun)
    if undo:
        return undo[0]
    if copied and run.destination is not None:
        return NextAction(
            instruction=f"List the messages in {run.destination!r}",
            tool="imap_search_messages",
            arguments={"account_id": account_id, "mailbox": run.destination},
        )
    return None


_VERBS = {
    ("move", False): ("move", "Moved"),
    ("copy", False): ("copy", "Copied"),
    ("delete", False): ("move to Trash", "Moved to Trash"),
    ("delete", True): ("permanently delete", "Permanently deleted"),
    ("archive", False): ("archive", "Archived"),
}


def transfer_summary(
    action: str, permanent: bool, dry_run: bool, changed: int, requested: int, run: TransferOutcome
) -> str:
    """The summary of a move, copy or delete (or of its dry run)."""
    planned, done = _VERBS[(action, permanent)]
    where = "" if run.destination is None else f" to {run.destination!r}"
    issues = f"; {len(run.issues)} issue(s)" if run.issues else ""
    if dry_run:
        return f"Dry run: would {planned} {changed} of {requested} message(s){where}{issues}; nothing changed"
    return f"{done} {changed} of {requested} message(s){where}{issues}"

"""Messages given by id (up to 250, of one account) moved, copied, archived or deleted to Trash, or removed
for good once the user confirmed where allow_permanent_delete says so: each moved or copied message answered
with its new id, and the call that undoes it; a long run goes on in the background."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mail_imap_mcp.call import Call
from mail_imap_mcp.envelope import ToolFailure, ToolResult
from mail_imap_mcp.envelope.model import status_for
from mail_imap_mcp.mail.directory import same_mailbox
from mail_imap_mcp.operations import Operation
from mail_imap_mcp.operations.audit import AuditLine
from mail_imap_mcp.operations.background import Progress
from mail_imap_mcp.operations.batch import Batch, group_message_ids
from mail_imap_mcp.operations.runner import in_one_call, run_bulk_write
from mail_imap_mcp.operations.transfer import TransferOutcome, TransferRequest, transfer
from mail_imap_mcp.operations.transfer_moves import move_groups
from mail_imap_mcp.presentation import writes
from mail_imap_mcp.services.writes import batch_account, confirm_permanent_delete, deletes_by_landing
from mail_imap_mcp.tools.apply_to_messages.models import (
    NAME,
    ApplyToMessagesData,
    ApplyToMessagesInput,
    MessageResult,
    TransferMailboxPlan,
)

if TYPE_CHECKING:
    from mail_imap_mcp.imap.connection import AccountConnection


def _check_arguments(args: ApplyToMessagesInput, batch: Batch) -> None:
    if args.action in ("move", "copy") and args.destination_mailbox is None:
        raise ToolFailure.invalid_input("destination_mailbox", f"required for {args.action}.")
    if args.action in ("delete", "archive") and args.destination_mailbox is not None:
        raise ToolFailure.invalid_input(
            "destination_mailbox",
            f"not accepted for {args.action}, which chooses the mailbox itself; use action move to choose.",
        )
    if args.permanent and args.action != "delete":
        raise ToolFailure.invalid_input("permanent", "only for action delete.")
    if args.action == "move":
        for group in batch.groups:
            if same_mailbox(group.mailbox, args.destination_mailbox or ""):
                raise ToolFailure.invalid_input(
                    "destination_mailbox", f"the messages are already in {group.mailbox!r}; choose another."
                )


def by_ids(app: Call, args: ApplyToMessagesInput) -> ToolResult[ApplyToMessagesData]:
    """The messages given by id moved, copied or deleted: checked by ``operations.transfer``, a move made by
    ``operations.transfer_moves`` (the engine of moves by search), run by ``operations.runner``;
    ``services.writes`` resolves the account and confirms a permanent delete."""
    assert args.action != "unsubscribe" and args.message_ids is not None  # the other flows
    batch = group_message_ids(args.message_ids, app.resolve_account, app.caller)
    _check_arguments(args, batch)
    connection = app.write_connection(batch_account(app, batch))
    asked = args.action
    if deletes_by_landing(app, connection.account_id, asked, args.destination_mailbox):
        args = args.model_copy(update={"action": "delete", "destination_mailbox": None})
    account, requested = batch.given_account_id, len(batch.items)
    label = ("dry_run:" if args.dry_run else "") + args.action + ("_permanent" if args.permanent else "")
    line = AuditLine(app.caller, NAME, connection.account_id, label, requested)
    if args.permanent:
        with writes.audited(line.failed):  # the tool runner words the call's failure
            if not app.config.server.allow_permanent_delete:
                raise writes.permanent_delete_turned_off()
            if not args.dry_run:
                confirm_permanent_delete(app, batch)
    assert args.action != "unsubscribe"
    request = TransferRequest(
        action=args.action,
        permanent=args.permanent,
        dry_run=args.dry_run,
        destination=args.destination_mailbox,
        account=app.config.accounts[connection.account_id],
        refusals=writes.select_refusals(account),
        asked=asked if asked != args.action else None,
    )
    return run_bulk_write(
        app.operations,
        connection,
        line,
        work=_work(app, batch, request),
        finish=lambda run: _result(args, connection.account_id, batch, run),
        status_of=lambda result: result.data.status,
        accepted=lambda operation: _accepted(args, connection.account_id, requested, operation),
        failure_of=writes.write_failure,
    )


def _work(
    app: Call, batch: Batch, request: TransferRequest
) -> Callable[[AccountConnection, Progress], TransferOutcome]:
    """Everything checked in one call (``operations.transfer``), then a move chunk by chunk on the account's
    runs (``operations.transfer_moves``); a copy or a removal for good is done in that one call."""
    checked = in_one_call(
        lambda session, progress: transfer(session, batch, request, progress), dry_run=request.dry_run
    )

    def work(connection: AccountConnection, progress: Progress) -> TransferOutcome:
        outcome = checked(connection, progress)
        if request.moves and any(outcome.present.values()):
            move_groups(app.mail(connection.account_id), batch, request, outcome, progress)
        return outcome

    return work


def _data(args: ApplyToMessagesInput, account_id: str, requested: int, **rest: Any) -> ApplyToMessagesData:
    """The tool's data: the request as given, with ``rest``."""
    echoed = {"action": args.action, "permanent": args.permanent, "dry_run": args.dry_run}
    return ApplyToMessagesData(account_id=account_id, requested=requested, **echoed, **rest)


def _accepted(
    args: ApplyToMessagesInput, account_id: str, requested: int, operation: Operation
) -> ToolResult[ApplyToMessagesData]:
    """The answer when the write continues in the background."""
    data = _data(
        args,
        account_id,
        requested,
        status="ok",
        issues=[],
        next_action=writes.follow_operation(operation),
        destination_mailbox=args.destination_mailbox,
        changed=0,
        mailboxes=[],
        results=[],
        undo=[],
        background=operation.ref(),
        operation=operation.ref(),
    )
    return ToolResult(summary=writes.accepted_summary(operation), data=data)


def _result(
    args: ApplyToMessagesInput, account_id: str, batch: Batch, run: TransferOutcome
) -> ToolResult[ApplyToMessagesData]:
    if run.nothing_found():
        raise writes.none_found(batch.given_account_id, batch)
    results = [
        MessageResult(message_id=item.text, outcome=outcome, new_message_id=new_id)
        for item in batch.items
        for outcome, new_id in [run.outcome(item)]
    ]
    changed = len(run.results)
    requested = len(batch.items)
    undo = writes.move_back(NAME, run.moved_from)
    mailboxes = [
        TransferMailboxPlan(
            source_mailbox=group.mailbox,
            destination_mailbox=run.destination,
            messages=len(run.present.get(group, [])),
            missing=len(group.items) - len(run.present.get(group, [])),
            method=run.method,
        )
        for group in batch.groups
    ]
    data = _data(
        args,
        account_id,
        requested,
        status=status_for(run.issues),
        issues=run.issues,
        next_action=writes.after_transfer(
            NAME,
            batch.given_account_id,
            run,
            undo,
            rerun=args.model_dump(exclude={"dry_run", "confirm_token"}, exclude_defaults=True)
            if args.dry_run
            else None,
            copied=args.action == "copy",
        ),
        destination_mailbox=run.destination,
        changed=changed,
        mailboxes=mailboxes,
        results=results,
        undo=undo,
    )
    return ToolResult(
        summary=writes.transfer_summary(args.action, args.permanent, args.dry_run, changed, requested, run),
        data=data,
        warnings=sorted(set(run.warnings)),
    )

"""The flags of messages given by id (up to 250, of one account) added, removed or replaced, Gmail's labels
too, each message answered with its flags after; a long run goes on in the background."""

from __future__ import annotations

from mail_imap_mcp.call import Call
from mail_imap_mcp.envelope import ToolFailure, ToolResult
from mail_imap_mcp.envelope.model import status_for
from mail_imap_mcp.imap.flags import ordered, parse_flags
from mail_imap_mcp.imap.personality.gmail import shown_labels
from mail_imap_mcp.operations import Operation
from mail_imap_mcp.operations.audit import AuditLine
from mail_imap_mcp.operations.batch import Batch, group_message_ids
from mail_imap_mcp.operations.flags import FlagChange, FlagOutcome, FlagRequest, change_flags
from mail_imap_mcp.operations.labels import label_names
from mail_imap_mcp.operations.runner import in_one_call, run_bulk_write
from mail_imap_mcp.presentation.flag_next import flag_next_action
from mail_imap_mcp.presentation.mail_failures import message_gone
from mail_imap_mcp.presentation.writes import (
    accepted_summary,
    audited,
    follow_operation,
    none_found,
    select_refusals,
    write_failure,
)
from mail_imap_mcp.services.writes import batch_account
from mail_imap_mcp.tools.update_message_flags.models import (
    NAME,
    FlagResult,
    FlagsMailboxPlan,
    UpdateFlagsData,
    UpdateFlagsInput,
)


def by_ids(app: Call, args: UpdateFlagsInput) -> ToolResult[UpdateFlagsData]:
    """The flags of the messages given by id changed: ``operations.flags`` by ``operations.runner`` on
    the account ``services.writes`` resolves."""
    assert args.message_ids is not None  # the other flow
    batch = group_message_ids(args.message_ids, app.resolve_account, app.caller)
    action = f"dry_run:{args.operation}" if args.dry_run else args.operation
    line = AuditLine(app.caller, NAME, batch.account_id, action, len(batch.items), failure_prefix="failed:")
    with audited(line.failed):  # the tool runner words the call's failure
        if not args.flags and args.labels is None:
            raise ToolFailure.invalid_input("flags", "give flags, labels (Gmail) or both.")
        connection = app.write_connection(batch_account(app, batch))
        flags = parse_flags(args.flags) if args.flags else ()
        labels = label_names(_checked_labels(args.labels)) if args.labels is not None else None
    account = batch.given_account_id
    request = FlagRequest(
        args.operation,
        flags,
        args.dry_run,
        select_refusals(account),
        labels=labels,
        account=app.config.accounts[connection.account_id],
    )
    return run_bulk_write(
        app.operations,
        connection,
        line,
        work=in_one_call(
            lambda session, progress: change_flags(session, batch, request, progress), dry_run=args.dry_run
        ),
        finish=lambda outcome: _answer(account, request, batch, outcome),
        status_of=lambda result: result.data.status,
        accepted=lambda operation: _accepted(account, request, len(batch.items), operation),
        failure_of=write_failure,
    )


def _accepted(
    account: str, request: FlagRequest, requested: int, operation: Operation
) -> ToolResult[UpdateFlagsData]:
    """The answer when the change continues in the background."""
    data = UpdateFlagsData(
        account_id=account,
        operation=request.operation,
        flags=ordered(request.flags),
        dry_run=request.dry_run,
        requested=requested,
        changed=0,
        messages=[],
        mailboxes=[],
        status="ok",
        issues=[],
        next_action=follow_operation(operation),
        background=operation.ref(),
    )
    return ToolResult(summary=accepted_summary(operation), data=data)


def _answer(
    account: str, request: FlagRequest, batch: Batch, outcome: FlagOutcome
) -> ToolResult[UpdateFlagsData]:
    if not outcome.results and {issue.code for issue in outcome.issues} == {"not_found"}:
        # Nothing was done, for one reason: that reason is the answer (outcome_unknown never is).
        refs = [item.ref for item in batch.items]
        raise message_gone(refs[0]) if len(refs) == 1 else none_found(account, batch)
    failure = outcome.sole_failure()
    if failure is not None:
        raise failure
    results = [_flag_result(outcome.results[item]) for item in batch.items if item in outcome.results]
    issues = outcome.issues_in_order(batch)
    data = UpdateFlagsData(
        account_id=account,
        operation=request.operation,
        flags=ordered(request.flags),
        labels=shown_labels(request.labels) if request.labels is not None else None,
        dry_run=request.dry_run,
        requested=len(batch.items),
        changed=sum(result.changed for result in results),
        messages=results,
        mailboxes=[FlagsMailboxPlan(**vars(plan)) for plan in outcome.mailboxes],
        status=status_for(issues),
        issues=issues,
        next_action=flag_next_action(NAME, account, request, results, issues),
    )
    return ToolResult(summary=_summary(data), data=data, warnings=outcome.warnings)


#: Gmail's system words for Trash and Spam, which move mail out of sight rather than tag it: that is a
#: delete (imap_apply_to_messages, with its Trash, audit and undo), not a label change. Their folders, by
#: any name, are known by their special-use attributes (operations/flags.py).
_NOT_LABELS = {"\\trash", "\\spam", "trash", "spam"}


def _checked_labels(labels: list[str]) -> list[str]:
    """Labels as given, each a name Gmail can hold (no control characters, at most 255 characters), at
    least one, and none of Trash or Spam."""
    if not labels:
        raise ToolFailure.invalid_input("labels", "give at least one label (or leave labels out).")
    for label in labels:
        if not label.strip() or len(label) > 255 or any(ord(c) < 32 or ord(c) == 127 for c in label):
            raise ToolFailure.invalid_input("labels", f"{label[:50]!r} is not a label name.")
        if label.strip().lower() in _NOT_LABELS:
            raise ToolFailure.invalid_input(
                "labels",
                f"{label!r} would take the messages out of sight: use imap_apply_to_messages delete.",
            )
    return labels


def _flag_result(change: FlagChange) -> FlagResult:
    ref = change.item.ref
    return FlagResult(
        message_id=change.item.text,
        mailbox=ref.mailbox,
        uid=ref.uid,
        flags=change.after,
        previous_flags=change.before,
        changed=change.changed,
        labels=change.labels_after,
        previous_labels=change.labels_before,
        new_message_id=change.moved_to.message_id if change.moved_to is not None else None,
    )


def _summary(data: UpdateFlagsData) -> str:
    what = f"{data.operation} {' '.join(data.flags)}".rstrip()
    if data.labels is not None:
        what += f" labels {', '.join(data.labels)}"
    found = len(data.messages)
    if data.dry_run:
        text = f"Dry run ({what}): {data.changed} of {found} message(s) would change; nothing was changed"
    else:
        text = f"Flags updated ({what}): {data.changed} of {found} message(s) changed"
    if data.issues:
        text += f"; {len(data.issues)} message(s) not done, see issues"
    return text

"""imap_apply_to_messages: move, copy or delete messages by id, with their new ids and an undo. The work
is :mod:`mail_imap_mcp.operations.transfer`; ``delete`` moves to the account's Trash (so does a move or
copy into Gmail's Trash, answered as a delete); ``permanent`` removal needs ``allow_permanent_delete``,
UIDPLUS and the user's confirmation."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from mail_imap_mcp.asks import Ask, Confirm
from mail_imap_mcp.call import Call
from mail_imap_mcp.capabilities import UNSUBSCRIBING
from mail_imap_mcp.envelope import ToolFailure, ToolResult
from mail_imap_mcp.envelope.model import status_for
from mail_imap_mcp.imap.directory import same_mailbox
from mail_imap_mcp.operations import Operation
from mail_imap_mcp.operations.audit import AuditLine
from mail_imap_mcp.operations.batch import Batch, group_message_ids
from mail_imap_mcp.operations.runner import in_one_call, run_bulk_write
from mail_imap_mcp.operations.transfer import TransferOutcome, TransferRequest, transfer
from mail_imap_mcp.presentation import bulk, unsubscribe, writes
from mail_imap_mcp.presentation.unsubscribe import UnsubscribeData
from mail_imap_mcp.services.bulk_runs import act_on_search, bulk_search, transfer_plan, undo_batch
from mail_imap_mcp.services.unsubscribe import RENDER, leave
from mail_imap_mcp.services.unsubscribe_search import leaving_of, move_after, review_of
from mail_imap_mcp.services.writes import batch_connection, confirm_permanent_delete, deletes_by_landing
from mail_imap_mcp.tools.apply_to_messages_models import (
    ApplyToMessagesData,
    ApplyToMessagesInput,
    MessageResult,
    TransferMailboxPlan,
)
from mail_imap_mcp.tools.spec import DESTRUCTIVE_WRITING, ToolSpec

NAME = "imap_apply_to_messages"
TITLE = "Move, copy or delete messages"
DESCRIPTION = (
    "Move, copy or delete up to 250 messages of one account. delete moves them to Trash; permanent (where "
    "allowed) removes them for good once the user confirms. next_action undoes a move or delete."
)
DETAILS = (
    "Move, copy or delete up to 250 messages of one account, given by message_id (from "
    "imap_search_messages). move and copy need destination_mailbox, an existing mailbox (see "
    "imap_list_mailboxes). delete moves the messages to the account's Trash, so they can be restored; "
    "permanent: true removes them for good where the configuration allows it, after the user confirmed. "
    "On Gmail, archive moves INBOX messages to All Mail (only the Inbox label goes). Each moved or copied "
    "message gets its new_message_id; next_action undoes a move, delete or archive; dry_run changes nothing."
    "\n\n" + bulk.APPLY_DETAILS + "\n\n" + unsubscribe.DETAILS
)
ERRORS = {
    "invalid_input": "A message_id is malformed, ids of several accounts, destination_mailbox missing for "
    "move/copy or given for delete, a move into the messages' own mailbox, a delete (not permanent) "
    "of messages already in Trash, or by search: a malformed query, no mailbox, an action other than move "
    "or delete, or permanent (refused); for unsubscribe, over 20 ids or lists.",
    "not_found": "The account, a message's mailbox, destination_mailbox or the Trash mailbox does not "
    "exist (none is created), none of the messages exists any more, or the undo token is unknown, used "
    "or older than 24 hours.",
    "conflict": "A mailbox's UIDVALIDITY changed since the ids were issued; nothing was changed; "
    "next_action reruns the search.",
    "permission_denied": "Writes are off for the account (write_enabled), permanent delete is not allowed "
    "(allow_permanent_delete) or cannot be confirmed by the user (the client has no MCP elicitation), or "
    "the server lacks the extension needed to touch exactly these messages (MOVE or UIDPLUS; UIDPLUS for "
    "a permanent delete), or unsubscribe_enabled is off (or nobody can approve an unsubscribe).",
    "confirmation_required": "The user did not confirm the permanent delete (or declined an unsubscribe) "
    "when the client asked them; "
    "nothing was changed. Where the user allowed token confirmation (confirm_without_elicitation), call "
    "again with confirm_token (see next_action) once the user agreed.",
    "limit_exceeded": "The server refused the change: over quota.",
    "auth_failed": "The server rejected the credentials.",
    "unavailable": "The server cannot be reached, or refused the change for another reason.",
    "timeout": "A command exceeded its time budget.",
}


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


def handle(app: Call, args: ApplyToMessagesInput) -> ToolResult[ApplyToMessagesData]:
    """``operations.transfer`` by ``operations.runner``; ``services.writes`` confirms and connects."""
    if args.action == "unsubscribe":
        return _unsubscribe(app, args)
    if args.message_ids is None or args.query is not None:
        return _by_search(app, args)
    batch = group_message_ids(args.message_ids, app.resolve_account, app.caller)
    _check_arguments(args, batch)
    connection = batch_connection(app, batch)
    asked = args.action
    if deletes_by_landing(connection, asked, args.destination_mailbox):
        args = args.model_copy(update={"action": "delete", "destination_mailbox": None})
    account, requested = batch.given_account_id, len(batch.items)
    label = ("dry_run:" if args.dry_run else "") + args.action + ("_permanent" if args.permanent else "")
    line = AuditLine(app.caller, NAME, connection.account_id, label, requested)
    if args.permanent:
        with writes.audited(line.failed):  # the tool runner words the call's failure
            if not app.config.server.allow_permanent_delete:
                raise writes.permanent_delete_turned_off()
            if not args.dry_run:
                confirm_permanent_delete(app, batch, connection)
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
        work=in_one_call(
            lambda session, progress: transfer(session, batch, request, progress), dry_run=args.dry_run
        ),
        finish=lambda run: _result(args, connection.account_id, batch, run),
        status_of=lambda result: result.data.status,
        accepted=lambda operation: _accepted(args, connection.account_id, requested, operation),
        failure_of=writes.write_failure,
    )


def _by_search(app: Call, args: ApplyToMessagesInput) -> ToolResult[ApplyToMessagesData]:
    """Every message ``query`` finds in ``mailbox`` moved or deleted to Trash (or ``undo`` of such a batch)."""
    bulk.check_transfer(args)
    common = args.model_dump(include={"account_id", "action", "permanent", "dry_run", "destination_mailbox"})
    words = bulk.RunWords(
        NAME, ApplyToMessagesData, {**common, "results": [], "undo": []}, "", {"action": "move"}
    )
    if args.undo is not None:
        return undo_batch(app, NAME, args.undo, "move", words)
    assert args.query is not None
    search = bulk_search(app, args.account_id, args.query, *bulk.checked_search(args.query, args.mailbox))
    to, work_of = transfer_plan(app, search, args.action, args.destination_mailbox)
    bulk.check_destination(to, search.mailbox)
    words.common["destination_mailbox"] = to
    words.verb = "Move to Trash" if args.action == "delete" else f"Move to {to!r}"

    def ask(review: Any, messages: int, then: Callable[[], ToolResult[Any]]) -> ToolResult[Any] | Operation:
        asked = Ask(search.account_id, review, words.render, then, nullcontext, nullcontext, messages)
        try:
            return app.ask(asked)
        except ToolFailure as failure:  # nobody can ask: confirmed as a mailbox delete is (a token)
            if failure.details.get("approval") != "unavailable":
                raise
        app.ask(Confirm(review.closing[:1].lower() + review.closing[1:]))
        return then()

    arguments = args.model_dump(by_alias=True, exclude_defaults=True)
    return act_on_search(app, NAME, arguments, search, work_of=work_of, words=words, ask=ask)


def _unsubscribe(app: Call, args: ApplyToMessagesInput) -> ToolResult[Any]:
    """Leave the lists of the messages (ids or a search) once the user approved, then move them to
    ``destination_mailbox`` where given, in the same approval; a dry run only says what each list offers."""
    parsed = unsubscribe.check(args)
    search = bulk_search(app, args.account_id, args.query or "", *parsed) if parsed else None
    arguments = args.model_dump(exclude_defaults=True)
    leaving = leaving_of(app, args.message_ids, search, args.destination_mailbox, arguments)
    unsubscribe.check_plan(leaving.lists, [found.mailbox for found in leaving.sets], leaving.to)
    asked_for = [item for item in leaving.lists if item.way in ("one_click", "mailto")]
    if args.dry_run or not (asked_for or (leaving.to and leaving.count)):  # nothing to ask
        return unsubscribe.answer([unsubscribe.would(item) for item in leaving.lists], dry_run=True)

    def then() -> ToolResult[Any]:
        left = [unsubscribe.done(item) for item in leave(app, leaving.lists)]
        moved = move_after(app, leaving)
        return unsubscribe.answer(left, dry_run=False, app=app, account=leaving.account_id, moved=moved)

    review, audited = review_of(app, leaving, asked_for), unsubscribe.audited(app, leaving.account_id)
    done = app.ask(Ask(leaving.account_id, review, RENDER, then, nullcontext, audited, leaving.count))
    return unsubscribe.waiting(done) if isinstance(done, Operation) else done


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


TOOL = ToolSpec(
    name=NAME,
    title=TITLE,
    description=DESCRIPTION,
    details=DETAILS,
    input_model=ApplyToMessagesInput,
    data_model=ApplyToMessagesData,
    handle=handle,
    errors=ERRORS,
    capability=DESTRUCTIVE_WRITING,
    gated_values={"action": {"unsubscribe": UNSUBSCRIBING}},
    other_data_models=(UnsubscribeData,),
    idempotent=False,
    changes=(
        '`action: "unsubscribe"` (with unsubscribe_enabled) replaces imap_unsubscribe: ids or a search, the '
        "messages moved to destination_mailbox in the same approval.",
        '`action: "archive"` (Gmail, X-GM-EXT-1) takes INBOX messages out of the inbox, undone by moving them '
        "back; on Gmail a permanent delete outside Trash and Spam is refused (an expunge there only removes a "
        "label)",
        "A permanent delete asks the user (or hands back the confirming call) before it starts, never "
        "from the background, so a client with MCP elicitation is asked too.",
        "data.background names a write that continues in the background, as in "
        "imap_update_message_flags; data.operation is its deprecated alias for this release.",
    ),
)

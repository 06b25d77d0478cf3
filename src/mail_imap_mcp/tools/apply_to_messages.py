"""imap_apply_to_messages: move, copy or delete messages by id, with their new ids and an undo.

The messages are grouped per source mailbox. Every group is selected afresh (SELECT, UIDVALIDITY
checked: ``conflict``) and its UIDs looked up before anything changes, so stale ids, a missing
destination and a missing extension are refused with nothing changed. Then each group is moved with
``UID MOVE`` (or ``UID COPY`` + ``UID EXPUNGE`` of exactly those UIDs where MOVE is missing), copied
with ``UID COPY``, or removed with ``UID EXPUNGE`` (:mod:`mail_imap_mcp.imap.session`), never
retried. ``delete`` moves to the account's Trash; ``permanent`` removal needs the configuration
(``allow_permanent_delete``), UIDPLUS and the user's confirmation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mail_imap_mcp.envelope import ErrorCode, Issue, MultiItemData, NextAction, Payload, ToolFailure
from mail_imap_mcp.envelope.mcp import ToolResult
from mail_imap_mcp.imap.errors import (
    OutcomeUnknown,
    UidValidityChanged,
    destination_not_found,
    extension_missing,
    is_connection_broken,
)
from mail_imap_mcp.imap.ids import InvalidMessageId, MessageRef, parse_message_id
from mail_imap_mcp.imap.mailboxes import list_mailboxes, list_matching
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.imap.uidplus import CopyUid, format_uid_set
from mail_imap_mcp.operations import Operation, OperationRef, Progress
from mail_imap_mcp.tools._shared.failures import conflict
from mail_imap_mcp.tools.context import AppContext
from mail_imap_mcp.tools.messages import MessageIdArg
from mail_imap_mcp.tools.spec import Effect, ToolSpec
from mail_imap_mcp.tools.writes import (
    CONFIRM_TOKEN_DESCRIPTION,
    DRY_RUN_DESCRIPTION,
    accepted_summary,
    audit,
    follow_operation,
    operation_field,
    operation_state,
    outcome_unknown_issue,
)

NAME = "imap_apply_to_messages"
TITLE = "Move, copy or delete messages"
DESCRIPTION = (
    "Move, copy or delete up to 250 messages of one account, given by message_id (from "
    "imap_search_messages). move and copy need destination_mailbox, an existing mailbox (see "
    "imap_list_mailboxes). delete moves the messages to the account's Trash, so they can be restored; "
    "permanent: true removes them for good, only where the configuration allows it and after the user "
    "confirmed. Each moved or copied message gets its new_message_id, and next_action undoes a move or "
    "a delete. dry_run: true shows what would change and changes nothing."
)
ERRORS = {
    "invalid_input": "A message_id is malformed, ids of several accounts, destination_mailbox missing for "
    "move/copy or given for delete, a move into the messages' own mailbox, or a delete (not permanent) "
    "of messages already in Trash.",
    "not_found": "The account, a message's mailbox, destination_mailbox or the Trash mailbox does not "
    "exist (none is created), or none of the messages exists any more.",
    "conflict": "A mailbox's UIDVALIDITY changed since the ids were issued; nothing was changed; "
    "next_action reruns the search.",
    "permission_denied": "Writes are off for the account (write_enabled), permanent delete is not allowed "
    "(allow_permanent_delete), or the server lacks the extension needed to touch exactly these messages "
    "(MOVE or UIDPLUS; UIDPLUS for a permanent delete).",
    "confirmation_required": "A permanent delete needs the user's confirmation: call again with "
    "confirm_token (see next_action).",
    "limit_exceeded": "The server refused the change: over quota.",
    "auth_failed": "The server rejected the credentials.",
    "unavailable": "The server cannot be reached, or refused the change for another reason.",
    "timeout": "A command exceeded its time budget.",
}

Action = Literal["move", "copy", "delete"]
#: As in MailboxName: no control characters (Dovecot echoes unknown names raw in its NO answer).
MAILBOX_NAME_PATTERN = r"^[^\x00-\x08\x0a-\x1f\x7f]+$"
Outcome = Literal[
    "moved",
    "copied",
    "moved_to_trash",
    "deleted",
    "would_move",
    "would_copy",
    "would_move_to_trash",
    "would_delete",
    "not_found",
    "outcome_unknown",
    "not_attempted",
    "failed",
]


class ApplyToMessagesInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message_ids: list[MessageIdArg] = Field(
        min_length=1,
        max_length=250,
        description="Messages to act on (1-250, one account; duplicates are ignored).",
    )
    action: Action = Field(
        description="move or copy to destination_mailbox; delete: to the account's Trash "
        "(or for good with permanent)."
    )
    # Not MailboxName | None: the flattened schema would show MailboxName's description instead of this one.
    destination_mailbox: str | None = Field(
        default=None,
        min_length=1,
        max_length=1000,
        pattern=MAILBOX_NAME_PATTERN,
        description="Existing mailbox (from imap_list_mailboxes) for move and copy; not for delete.",
    )
    permanent: bool = Field(
        default=False,
        description="delete only: remove for good instead of moving to Trash (needs allow_permanent_delete "
        "in the configuration and the user's confirmation).",
    )
    confirm_token: str | None = Field(default=None, max_length=200, description=CONFIRM_TOKEN_DESCRIPTION)
    dry_run: bool = Field(default=False, description=DRY_RUN_DESCRIPTION)


class MessageResult(Payload):
    message_id: str = Field(description="The message_id as given.")
    new_message_id: str | None = Field(
        description="Its id in the destination (from the server's COPYUID); null for a permanent delete, a "
        "dry run, a message not moved or copied, or a server that does not report new ids (no UIDPLUS)."
    )
    outcome: Outcome = Field(
        description="moved, copied, moved_to_trash, deleted (for good); would_* in a dry run; not_found, "
        "outcome_unknown, not_attempted or failed (see issues)."
    )


class MailboxPlan(Payload):
    source_mailbox: str = Field(description="Mailbox the messages are in.")
    destination_mailbox: str | None = Field(description="Where they go; null for a permanent delete.")
    messages: int = Field(description="Messages found there and acted on (or, in a dry run, to act on).")
    missing: int = Field(description="Ids whose message no longer exists there.")
    method: str = Field(description="The IMAP commands used (or that would be).")


class ApplyToMessagesData(MultiItemData):
    account_id: str = Field(description="Account of the messages.")
    action: Action = Field(description="The action requested.")
    permanent: bool = Field(description="True for a permanent delete.")
    dry_run: bool = Field(description="True: nothing was changed; results say what would happen.")
    destination_mailbox: str | None = Field(
        description="Where the messages went: destination_mailbox, or the Trash for delete."
    )
    requested: int = Field(description="Distinct message ids given.")
    changed: int = Field(description="Messages moved, copied or deleted (in a dry run: that would be).")
    mailboxes: list[MailboxPlan] = Field(description="Per source mailbox: what was (or would be) done.")
    results: list[MessageResult] = Field(description="One per distinct message id, in the order given.")
    undo: list[NextAction] = Field(
        description="Calls that move the messages back (one per source mailbox), for move and delete."
    )
    operation: OperationRef | None = operation_field()


@dataclass
class _Group:
    """The messages of one source mailbox (one UIDVALIDITY)."""

    mailbox: str
    uidvalidity: int
    refs: list[tuple[str, MessageRef]] = field(default_factory=list)
    present: list[int] = field(default_factory=list)

    @property
    def uids(self) -> list[int]:
        return [ref.uid for _, ref in self.refs]


@dataclass
class _Run:
    """What happened (or would), per message id, while the operation runs."""

    destination: str | None = None
    method: str = ""
    outcomes: dict[str, tuple[Outcome, str | None]] = field(default_factory=dict)
    issues: list[Issue] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    undo: list[NextAction] = field(default_factory=list)
    unknown: _Group | None = None


def _same_mailbox(a: str, b: str) -> bool:
    return a == b or (a.upper() == "INBOX" and b.upper() == "INBOX")


def _parse_ids(app: AppContext, message_ids: list[str]) -> tuple[str, list[_Group]]:
    """The account and the distinct messages grouped per source mailbox, in the order given."""
    groups: dict[tuple[str, int], _Group] = {}
    accounts: dict[str, str] = {}
    seen: set[tuple[str, str, int, int]] = set()
    for index, text in enumerate(message_ids):
        try:
            ref = parse_message_id(text)
        except InvalidMessageId as exc:
            raise ToolFailure.invalid_input("message_ids", f"item {index}: {exc}.", index=index) from None
        account = app.resolve_account(ref.account_id)
        accounts.setdefault(account, ref.account_id)
        key = (account, ref.mailbox, ref.uidvalidity, ref.uid)
        if key in seen:
            continue
        seen.add(key)
        group = groups.setdefault((ref.mailbox, ref.uidvalidity), _Group(ref.mailbox, ref.uidvalidity))
        group.refs.append((text, ref))
    if len(accounts) > 1:
        raise ToolFailure.invalid_input(
            "message_ids",
            f"the ids belong to {len(accounts)} accounts ({', '.join(sorted(accounts))}); one call acts on "
            "one account.",
        )
    return next(iter(accounts)), list(groups.values())


def _check_arguments(args: ApplyToMessagesInput) -> None:
    if args.action in ("move", "copy") and args.destination_mailbox is None:
        raise ToolFailure.invalid_input("destination_mailbox", f"required for {args.action}.")
    if args.action == "delete" and args.destination_mailbox is not None:
        raise ToolFailure.invalid_input(
            "destination_mailbox",
            "not accepted for delete, which moves to the account's Trash; use action move to choose.",
        )
    if args.permanent and args.action != "delete":
        raise ToolFailure.invalid_input("permanent", "only for action delete.")


def _method(session: ImapSession, action: Action, permanent: bool) -> str:
    """The commands the action takes on this server; refused (nothing changed) where an extension is
    missing that is needed to touch exactly these messages."""
    caps = session.capabilities
    expunge = "UID STORE +FLAGS.SILENT (\\Deleted) + UID EXPUNGE"
    if action == "copy":
        return "UID COPY"
    if permanent:
        if "UIDPLUS" not in caps:
            raise extension_missing("UIDPLUS", "remove exactly these messages for good (UID EXPUNGE)")
        return expunge
    if "MOVE" in caps:
        return "UID MOVE"
    if "UIDPLUS" not in caps:
        raise extension_missing("MOVE or UIDPLUS", "move exactly these messages")
    return f"UID COPY + {expunge}"


def _existing_mailbox(session: ImapSession, name: str, parameter: str) -> str:
    """``name`` when LIST shows it as a selectable mailbox, else ``not_found`` naming ``parameter``."""
    for box in list_matching(session, name):
        if _same_mailbox(box.name, name) and box.selectable:
            return box.name
    raise destination_not_found(name, parameter)


def _trash(app: AppContext, session: ImapSession, account_id: str) -> str:
    """The account's Trash: the mailbox the server marks ``\\Trash``, else the configured one."""
    boxes = list_mailboxes(session)
    marked = next((box.name for box in boxes if box.special_use == "\\Trash" and box.selectable), None)
    if marked is not None:
        return marked
    account = app.config.accounts[app.resolve_account(account_id)]
    if account.trash_mailbox is None:
        raise ToolFailure(
            ErrorCode.NOT_FOUND,
            f"The server marks no mailbox as Trash (special-use \\Trash) and account {account_id!r} names "
            f"none; nothing was changed. Set {account.setting('trash_mailbox', 'Trash')} (the Trash "
            "folder's name from imap_list_mailboxes), or use action move.",
            details={"account_id": account_id, "setting": "trash_mailbox"},
        )
    return _existing_mailbox(session, account.trash_mailbox, "trash_mailbox")


def _open_group(session: ImapSession, account_id: str, group: _Group, *, write: bool) -> None:
    """Select the group's mailbox afresh (read-write for a write), check its UIDVALIDITY, and find which
    of its UIDs still exist."""
    try:
        if write:
            session.select(group.mailbox, uidvalidity=group.uidvalidity)
        else:
            state = session.examine(group.mailbox)
            if state.uidvalidity != group.uidvalidity:
                raise UidValidityChanged(group.uidvalidity, state.uidvalidity)
    except UidValidityChanged as exc:
        raise conflict(account_id, group.mailbox, exc.expected, exc.actual) from None
    except ToolFailure as failure:
        if failure.code is not ErrorCode.NOT_FOUND:
            raise
        raise ToolFailure(
            ErrorCode.NOT_FOUND,
            f"Mailbox {group.mailbox!r} of the given message ids no longer exists; nothing was changed. "
            "Call imap_list_mailboxes, then search again.",
            details={"parameter": "message_ids", "mailbox": group.mailbox},
        ) from None
    found = set(session.uid_search([b"UID", format_uid_set(group.uids).encode("ascii")]))
    group.present = [uid for uid in group.uids if uid in found]


def _new_id(account: str, mailbox: str, copied: CopyUid | None, uid: int) -> str | None:
    if copied is None or uid not in copied.new_uids:
        return None
    return MessageRef(account, mailbox, copied.uidvalidity, copied.new_uids[uid]).message_id


def _prepare(
    app: AppContext, session: ImapSession, args: ApplyToMessagesInput, account: str, groups: list[_Group]
) -> _Run:
    """Everything that is checked before any change: extensions, destination, ids, UIDVALIDITY."""
    run = _Run(method=_method(session, args.action, args.permanent))
    if args.action == "delete" and not args.permanent:
        run.destination = _trash(app, session, account)
        inside = [group.mailbox for group in groups if _same_mailbox(group.mailbox, run.destination)]
        if inside:
            raise ToolFailure.invalid_input(
                "permanent",
                f"the messages in {inside[0]!r} are already in the Trash; delete without permanent would "
                "change nothing. To remove them for good, use permanent: true (where the configuration "
                "allows it, after the user's confirmation).",
            )
    elif args.destination_mailbox is not None:
        run.destination = _existing_mailbox(session, args.destination_mailbox, "destination_mailbox")
    for group in groups:
        _open_group(session, account, group, write=not args.dry_run)
    if not any(group.present for group in groups):
        first = groups[0]
        raise ToolFailure(
            ErrorCode.NOT_FOUND,
            f"None of the {sum(len(g.refs) for g in groups)} message(s) exists any more (deleted or moved); "
            "nothing was changed. Search again.",
            details={"parameter": "message_ids", "mailbox": first.mailbox},
            next_action=NextAction(
                instruction="Search the mailbox again",
                tool="imap_search_messages",
                arguments={"account_id": account, "mailbox": first.mailbox},
            ),
        )
    for group in groups:
        _record_missing(run, group)
    return run


_DONE: dict[tuple[Action, bool], Outcome] = {
    ("move", False): "moved",
    ("copy", False): "copied",
    ("delete", False): "moved_to_trash",
    ("delete", True): "deleted",
}
_PLANNED: dict[Outcome, Outcome] = {
    "moved": "would_move",
    "copied": "would_copy",
    "moved_to_trash": "would_move_to_trash",
    "deleted": "would_delete",
}
_CHANGED = frozenset(_PLANNED) | frozenset(_PLANNED.values())


def _apply_group(
    session: ImapSession, args: ApplyToMessagesInput, account: str, group: _Group, run: _Run
) -> None:
    """Change one group's messages (its mailbox selected read-write); record each message's outcome."""
    done = _DONE[(args.action, args.permanent)]
    if session.selected_mailbox != group.mailbox:  # UIDs name messages of the selected mailbox only
        raise RuntimeError(f"{group.mailbox!r} is not the selected mailbox; nothing was sent")
    copied: CopyUid | None = None
    if args.permanent:
        session.uid_expunge(group.present)
    elif args.action == "copy":
        copied = session.uid_copy(group.present, run.destination or "")
    else:
        copied = session.uid_move(group.present, run.destination or "")
    if copied is None and not args.permanent:
        run.warnings.append(
            f"The server did not report the new UIDs in {run.destination!r} (no UIDPLUS/COPYUID): "
            "new_message_id is null; search that mailbox to find the messages."
        )
    new_ids: list[str] = []
    for text, ref in group.refs:
        if ref.uid not in group.present:
            continue
        new_id = _new_id(account, run.destination or "", copied, ref.uid)
        if copied is not None and new_id is None:
            run.outcomes[text] = ("not_found", None)  # gone between the check and the command
            run.issues.append(
                Issue(
                    code="not_found",
                    stage="write",
                    message=f"UID {ref.uid} disappeared from {group.mailbox!r} before it was changed.",
                    retryable=False,
                    message_id=text,
                    uid=ref.uid,
                )
            )
            continue
        run.outcomes[text] = (done, new_id)
        if new_id is not None:
            new_ids.append(new_id)
    if args.action != "copy" and not args.permanent and new_ids:
        run.undo.append(
            NextAction(
                instruction=f"Undo: move the {len(new_ids)} message(s) back to {group.mailbox!r}",
                tool=NAME,
                arguments={"message_ids": new_ids, "action": "move", "destination_mailbox": group.mailbox},
            )
        )


def _execute(
    app: AppContext,
    session: ImapSession,
    args: ApplyToMessagesInput,
    account: str,
    groups: list[_Group],
    progress: Progress,
) -> _Run:
    run = _prepare(app, session, args, account, groups)
    if args.dry_run:
        for group in groups:
            for text, ref in group.refs:
                if ref.uid in group.present:
                    run.outcomes[text] = (_PLANNED[_DONE[(args.action, args.permanent)]], None)
        return run
    if args.permanent:
        count = sum(len(group.present) for group in groups)
        where = ", ".join(repr(group.mailbox) for group in groups if group.present)
        app.confirmations.require(
            NAME,
            args.model_dump(),
            f"permanently delete {count} message(s) from {where} (account {account!r}); they cannot be "
            "recovered",
        )
    # The last group checked is still selected: start there, re-select (and re-check) the others. Not
    # "the first pending one": when the last group checked has no message left, another mailbox is
    # selected, and its UIDs would name other messages there.
    selected = groups[-1]
    pending = [group for group in reversed(groups) if group.present]
    for position, group in enumerate(pending):
        if progress.cancelled:
            _not_attempted(
                run, pending[position:], reason="the operation was cancelled before this mailbox's turn"
            )
            break
        try:
            if group is not selected:
                _open_group(session, account, group, write=True)
                _record_missing(run, group)
            if group.present:
                _apply_group(session, args, account, group, run)
            progress.advance(len(group.refs), f"{group.mailbox}: done")
        except OutcomeUnknown:
            run.unknown = group
            for text, ref in group.refs:
                if ref.uid in group.present:
                    run.outcomes[text] = ("outcome_unknown", None)
                    run.issues.append(outcome_unknown_issue(text, ref.uid))
            _not_attempted(run, pending[position + 1 :])
            break
        except ToolFailure as failure:
            if not any(outcome in _CHANGED for outcome, _ in run.outcomes.values()):
                raise  # nothing changed yet: the call fails as a whole
            _fail_group(run, group, failure.code.value, failure.message, stage="write")
        except Exception as exc:  # the connection died between two mailboxes (nothing was sent)
            if not is_connection_broken(exc) and not isinstance(exc, TimeoutError):
                raise
            if not any(outcome in _CHANGED for outcome, _ in run.outcomes.values()):
                raise
            _not_attempted(run, pending[position:])
            break
    return run


def _record_missing(run: _Run, group: _Group) -> None:
    """A ``not_found`` issue for each message of ``group`` that no longer exists."""
    for text, ref in group.refs:
        if ref.uid not in group.present and text not in run.outcomes:
            run.outcomes[text] = ("not_found", None)
            run.issues.append(
                Issue(
                    code="not_found",
                    stage="check",
                    message=f"UID {ref.uid} no longer exists in {group.mailbox!r} (deleted or moved); "
                    "it was left out.",
                    retryable=False,
                    message_id=text,
                    uid=ref.uid,
                )
            )


def _not_attempted(
    run: _Run, groups: list[_Group], reason: str = "the connection was lost before this mailbox's turn"
) -> None:
    for group in groups:
        _fail_group(
            run,
            group,
            "not_attempted",
            f"Not attempted: {reason}; nothing was changed here. Call again with these ids.",
            stage="write",
            retryable=True,
        )


def _fail_group(
    run: _Run, group: _Group, code: str, message: str, *, stage: str, retryable: bool = False
) -> None:
    outcome: Outcome = "not_attempted" if code == "not_attempted" else "failed"
    for text, ref in group.refs:
        if ref.uid in group.present:
            run.outcomes[text] = (outcome, None)
            run.issues.append(
                Issue(
                    code=code, stage=stage, message=message, retryable=retryable, message_id=text, uid=ref.uid
                )
            )


def _next_action(args: ApplyToMessagesInput, account: str, run: _Run) -> NextAction | None:
    if run.unknown is not None:
        return NextAction(
            instruction=f"The connection was lost after the change was sent to {run.unknown.mailbox!r}: "
            f"search it (and {run.destination!r}) to see where the messages are now; do not simply repeat "
            "the call",
            tool="imap_search_messages",
            arguments={"account_id": account, "mailbox": run.unknown.mailbox},
        )
    if args.dry_run:
        return NextAction(
            instruction="Apply it for real",
            tool=NAME,
            arguments=args.model_dump(exclude={"dry_run", "confirm_token"}, exclude_defaults=True),
        )
    if run.undo:
        return run.undo[0]
    if args.action == "copy" and run.destination is not None:
        return NextAction(
            instruction=f"List the messages in {run.destination!r}",
            tool="imap_search_messages",
            arguments={"account_id": account, "mailbox": run.destination},
        )
    return None


_VERBS = {
    ("move", False): ("move", "Moved"),
    ("copy", False): ("copy", "Copied"),
    ("delete", False): ("move to Trash", "Moved to Trash"),
    ("delete", True): ("permanently delete", "Permanently deleted"),
}


def _summary(args: ApplyToMessagesInput, changed: int, requested: int, run: _Run) -> str:
    planned, done = _VERBS[(args.action, args.permanent)]
    where = "" if run.destination is None else f" to {run.destination!r}"
    issues = f"; {len(run.issues)} issue(s)" if run.issues else ""
    if args.dry_run:
        return f"Dry run: would {planned} {changed} of {requested} message(s){where}{issues}; nothing changed"
    return f"{done} {changed} of {requested} message(s){where}{issues}"


def handle(app: AppContext, args: ApplyToMessagesInput) -> ToolResult[ApplyToMessagesData]:
    _check_arguments(args)
    account, groups = _parse_ids(app, args.message_ids)
    if args.action == "move":
        for group in groups:
            if _same_mailbox(group.mailbox, args.destination_mailbox or ""):
                raise ToolFailure.invalid_input(
                    "destination_mailbox", f"the messages are already in {group.mailbox!r}; choose another."
                )
    connection = app.write_connection(account)
    account_id = groups[0].refs[0][1].account_id
    requested = sum(len(group.refs) for group in groups)
    label = ("dry_run:" if args.dry_run else "") + args.action + ("_permanent" if args.permanent else "")
    if args.permanent and not app.config.server.allow_permanent_delete:
        audit(NAME, connection.account_id, label, requested, ErrorCode.PERMISSION_DENIED.value)
        raise ToolFailure(
            ErrorCode.PERMISSION_DENIED,
            "Permanent delete is turned off; nothing was changed. delete without permanent moves the "
            "messages to Trash (recoverable). To allow it, the user sets allow_permanent_delete = true "
            "in [server].",
            details={"setting": "allow_permanent_delete"},
        )

    def work(progress: Progress) -> ToolResult[ApplyToMessagesData]:
        def operation(session: ImapSession) -> _Run:
            return _execute(app, session, args, account_id, groups, progress)

        try:
            run = connection.run(operation) if args.dry_run else connection.run_write(operation)
        except ToolFailure as failure:
            audit(NAME, connection.account_id, label, requested, failure.code.value)
            raise
        result = _result(args, connection.account_id, account_id, groups, run, requested)
        audit(NAME, connection.account_id, label, requested, result.data.status)
        return result

    outcome = app.operations.run(NAME, connection.account_id, requested, work, operation_state)
    if isinstance(outcome, Operation):
        return _accepted(args, connection.account_id, requested, outcome)
    result: ToolResult[ApplyToMessagesData] = outcome
    return result


def _accepted(
    args: ApplyToMessagesInput, account_id: str, requested: int, operation: Operation
) -> ToolResult[ApplyToMessagesData]:
    """The answer when the write continues in the background."""
    data = ApplyToMessagesData(
        status="ok",
        issues=[],
        next_action=follow_operation(operation),
        account_id=account_id,
        action=args.action,
        permanent=args.permanent,
        dry_run=args.dry_run,
        destination_mailbox=args.destination_mailbox,
        requested=requested,
        changed=0,
        mailboxes=[],
        results=[],
        undo=[],
        operation=operation.ref(),
    )
    return ToolResult(summary=accepted_summary(operation), data=data)


def _result(
    args: ApplyToMessagesInput,
    account_id: str,
    id_account: str,
    groups: list[_Group],
    run: _Run,
    requested: int,
) -> ToolResult[ApplyToMessagesData]:
    order: dict[str, int] = {}
    for index, text in enumerate(args.message_ids):
        order.setdefault(text, index)
    results = sorted(
        (
            MessageResult(
                message_id=text, new_message_id=run.outcomes[text][1], outcome=run.outcomes[text][0]
            )
            for group in groups
            for text, _ in group.refs
        ),
        key=lambda result: order[result.message_id],
    )
    changed = sum(1 for result in results if result.outcome in _CHANGED)
    mailboxes = [
        MailboxPlan(
            source_mailbox=group.mailbox,
            destination_mailbox=run.destination,
            messages=len(group.present),
            missing=len(group.refs) - len(group.present),
            method=run.method,
        )
        for group in groups
    ]
    status: Literal["ok", "partial"] = "partial" if run.issues else "ok"
    data = ApplyToMessagesData(
        status=status,
        issues=run.issues,
        next_action=_next_action(args, id_account, run),
        account_id=account_id,
        action=args.action,
        permanent=args.permanent,
        dry_run=args.dry_run,
        destination_mailbox=run.destination,
        requested=requested,
        changed=changed,
        mailboxes=mailboxes,
        results=results,
        undo=run.undo,
    )
    return ToolResult(
        summary=_summary(args, changed, requested, run), data=data, warnings=sorted(set(run.warnings))
    )


TOOL = ToolSpec(
    name=NAME,
    title=TITLE,
    description=DESCRIPTION,
    input_model=ApplyToMessagesInput,
    data_model=ApplyToMessagesData,
    handle=handle,
    errors=ERRORS,
    effect=Effect.DESTRUCTIVE,
    idempotent=False,
)

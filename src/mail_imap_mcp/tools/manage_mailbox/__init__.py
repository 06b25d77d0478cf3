"""imap_manage_mailbox: create, rename or delete a mailbox (folder), in the server's own spelling.

Names: the server's separator (from NAMESPACE, else LIST); where personal folders live below a prefix
(``INBOX.`` on Cyrus in its default namespace and on Courier, which refuse or misplace a top-level
name), a new name without it gets it added, and an existing name is looked up with it when it is not
found as given; the result says so. Hostile names (control characters, the LIST wildcards ``*`` and
``%``, empty levels, absurd lengths) are refused before anything is sent.

Safety: INBOX and the special-use folders (and the configured trash/drafts folders) are never renamed or
deleted, nor is a folder renamed into a name that makes it one or that searches of every mailbox leave
out (refused by their rule, undone at once if LIST shows it after); delete refuses a mailbox that holds
messages (Dovecot would delete them silently) or child mailboxes (Dovecot and Courier would leave them
orphaned), and deletes through a name aside (services/mailbox_changes.py). Rename and delete need
confirmation. A connection lost after the command was sent is ``outcome_unknown``.

Its spec and dispatch are here; the plan and the change sent are :mod:`.change`, its arguments and data
:mod:`.models`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mail_imap_mcp.asking.records import Confirm
from mail_imap_mcp.call import Call
from mail_imap_mcp.envelope import Issue, NextAction, ToolFailure, ToolResult, status_for
from mail_imap_mcp.mail.errors import OutcomeUnknown
from mail_imap_mcp.mail.name_errors import RenamedIntoSpecialUse
from mail_imap_mcp.operations.audit import AuditLine, audit
from mail_imap_mcp.presentation.writes import audited
from mail_imap_mcp.tools.manage_mailbox.models import ManageMailboxData, ManageMailboxInput
from mail_imap_mcp.tools.spec import DESTRUCTIVE_WRITING, ToolSpec

NAME = "imap_manage_mailbox"
TITLE = "Create, rename or delete a mailbox"
DESCRIPTION = (
    "Create, rename or delete a mailbox, named as imap_list_mailboxes shows. Only an empty mailbox "
    "without children is deleted; INBOX and special-use ones are kept. Rename and delete need the user's "
    "confirmation."
)
DETAILS = (
    "Create, rename or delete a mailbox (folder). Use the server's names and separator as "
    "imap_list_mailboxes shows them; where personal folders live below a prefix such as 'INBOX.', a "
    "name without it gets it added (data.mailbox says which name was used). Rename moves the mailbox "
    "with its messages and child mailboxes. Delete only removes an empty mailbox without child "
    "mailboxes: move or delete its messages first. INBOX and special-use folders (Sent, Drafts, Trash, "
    "...) are never renamed or deleted. Rename and delete need the user's confirmation "
    "(confirmation_required, then the same call with confirm_token). dry_run shows what would happen."
)
ERRORS = {
    "invalid_input": "A name is malformed, names INBOX or a special-use folder, already exists (create, "
    "rename destination), would make the renamed folder special-use or hidden from searches of every "
    "mailbox (renamed back at once; details say where), or the mailbox to delete has messages or children.",
    "not_found": "The account or the mailbox to rename or delete does not exist.",
    "confirmation_required": "Rename and delete: ask the user, then repeat the call with confirm_token.",
    "permission_denied": "Writes are off for this account (write_enabled), or the server does not allow it.",
    "limit_exceeded": "The server refused the mailbox: over quota.",
    "auth_failed": "The server rejected the credentials.",
    "unavailable": "The server cannot be reached; nothing was changed.",
    "timeout": "A command exceeded its time budget.",
}


def handle(app: Call, args: ManageMailboxInput) -> ToolResult[ManageMailboxData]:
    """``services.mailbox_names`` and ``mailbox_changes``; ``app.ask(Confirm)``; audited."""
    from mail_imap_mcp.services.mailbox_changes import lost_connection_issue, where_now, where_now_or_failure
    from mail_imap_mcp.tools.manage_mailbox.change import execute_change, plan_change

    if args.action == "rename" and args.destination_mailbox is None:
        raise ToolFailure.invalid_input("destination_mailbox", "rename needs the new name.")
    if args.action != "rename" and args.destination_mailbox is not None:
        raise ToolFailure.invalid_input("destination_mailbox", f"only rename takes it, not {args.action}.")
    connection = app.write_connection(args.account_id)
    account_id = connection.account_id
    mail = app.mail(account_id)
    action = f"dry_run:{args.action}" if args.dry_run else args.action
    with audited(lambda failure: audit(app.caller, NAME, account_id, action, 0, failure.code)):
        plan = plan_change(connection, mail, app, args)
        if not args.dry_run and args.action != "create":
            app.ask(Confirm(f"{plan.words()} in account {account_id!r}"))
        issues: list[Issue] = []
        result = {"create": plan.mailbox, "rename": plan.destination, "delete": None}[plan.action]
        if not args.dry_run:
            try:
                back = AuditLine(app.caller, NAME, account_id, "rename_back", plan.messages or 0)
                mail.changing_mailboxes(lambda changes: execute_change(changes, plan, account_id, back))
            except RenamedIntoSpecialUse as renamed:
                if renamed.now is not None:
                    raise
                raise renamed.located(where_now(mail, (plan.destination, plan.aside, plan.mailbox))) from None
            except OutcomeUnknown:
                now = where_now_or_failure(mail, (plan.destination, plan.aside, plan.mailbox))
                issues.append(lost_connection_issue(args.action, plan.mailbox, plan.aside, now))
                result = None if isinstance(now, Exception) else now
    audit(app.caller, NAME, account_id, action, plan.messages or 0, "outcome_unknown" if issues else "ok")
    changed = not args.dry_run and not issues
    if args.dry_run:
        summary = f"Dry run: would {plan.words()}; nothing was changed"
    elif issues:
        summary = f"Outcome unknown: the connection was lost after asking to {plan.words()}"
    else:
        summary = f"Done: {plan.words()}"
    data = ManageMailboxData(
        account_id=account_id,
        action=plan.action,
        mailbox=plan.mailbox,
        destination_mailbox=plan.destination,
        result_mailbox=result if not args.dry_run else None,
        messages=plan.messages,
        child_mailboxes=list(plan.children) if plan.action == "rename" else [],
        dry_run=args.dry_run,
        changed=changed,
        plan=plan.words()[0].upper() + plan.words()[1:] + ".",
        status=status_for(issues),
        issues=issues,
        next_action=NextAction(
            instruction=f"List the mailboxes {'as they are now' if args.dry_run else 'to see the result'}",
            tool="imap_list_mailboxes",
            arguments={"account_id": account_id},
        ),
    )
    return ToolResult(summary=summary, data=data, warnings=list(plan.notes))


def asked(arguments: Mapping[str, Any]) -> str | None:
    """What the call asks for in a failure's first words: its action's ("Delete a mailbox")."""
    action = arguments.get("action")
    return f"{action.capitalize()} a mailbox" if action in ("create", "rename", "delete") else None


TOOL = ToolSpec(
    name=NAME,
    title=TITLE,
    description=DESCRIPTION,
    details=DETAILS,
    input_model=ManageMailboxInput,
    data_model=ManageMailboxData,
    handle=handle,
    errors=ERRORS,
    capability=DESTRUCTIVE_WRITING,
    idempotent=False,
    asked=asked,
)

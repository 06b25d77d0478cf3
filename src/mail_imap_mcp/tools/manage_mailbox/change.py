"""One mailbox change planned and sent: :func:`plan_change` resolves the names and checks every refusal
(reads only: children, messages, protected names, a rename into itself); :func:`execute_change` sends it,
a delete through a name aside, a rename undone if it hid the folder's mail."""

from __future__ import annotations

from dataclasses import dataclass

from mail_imap_mcp.call import Call
from mail_imap_mcp.envelope import ErrorCode, NextAction, ToolFailure
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.directory import load_directory
from mail_imap_mcp.mail.backend import MailBackend, MailboxChanges
from mail_imap_mcp.mail.errors import CommandRefused, MailboxMissing
from mail_imap_mcp.operations.audit import AuditLine
from mail_imap_mcp.services.mailbox_changes import (
    aside_name,
    delete_if_empty,
    refused_as_argument,
    rename_undoing_special_use,
)
from mail_imap_mcp.services.mailbox_names import (
    existing_mailbox,
    new_destination,
    new_mailbox,
    refuse_protected,
)
from mail_imap_mcp.tools.manage_mailbox.models import Action, ManageMailboxInput


@dataclass
class MailboxPlan:
    action: Action
    mailbox: str
    destination: str | None = None
    messages: int | None = None
    children: tuple[str, ...] = ()
    selectable: bool = True
    notes: tuple[str, ...] = ()
    aside: str | None = None  # where a delete puts the mailbox before it deletes it

    def words(self) -> str:
        if self.action == "create":
            return f"create the mailbox {self.mailbox!r}"
        if self.action == "delete":
            return f"delete the empty mailbox {self.mailbox!r}"
        moved = f"{self.messages} message(s)" if self.messages is not None else "its messages"
        if self.children:
            moved += f" and {len(self.children)} child mailbox(es)"
        return f"rename the mailbox {self.mailbox!r} to {self.destination!r}, with {moved}"


def refuse_nonempty(mailbox: str, messages: int, account_id: str) -> ToolFailure:
    return ToolFailure(
        ErrorCode.INVALID_INPUT,
        f"Invalid 'mailbox': {mailbox!r} holds {messages} message(s); nothing was deleted. Move or delete "
        "them first (imap_apply_to_messages), then delete the empty mailbox.",
        details={"parameter": "mailbox", "mailbox": mailbox, "messages": messages},
        next_action=NextAction(
            instruction="See the messages still in the mailbox",
            tool="imap_search_messages",
            arguments={"account_id": account_id, "mailbox": mailbox},
        ),
    )


def plan_change(
    connection: AccountConnection, mail: MailBackend, app: Call, args: ManageMailboxInput
) -> MailboxPlan:
    """Resolve the names (the directory with its namespace) and check every refusal (reads only)."""
    account_id = connection.account_id
    account = app.config.accounts[account_id]
    names = connection.run(lambda session: load_directory(session, account, namespace=True))
    if args.action == "create":
        mailbox, notes = new_mailbox(names, args.mailbox, "mailbox")
        return MailboxPlan("create", mailbox, messages=0, notes=tuple(notes))
    mailbox, notes = existing_mailbox(names, args.mailbox, "mailbox")
    refuse_protected(names, mailbox, "mailbox", args.action)
    box = names.get(mailbox)
    assert box is not None  # INBOX, the one name not listed, is protected
    children = names.children(mailbox)
    messages = mail.messages(mailbox) if box.selectable else None
    if args.action == "delete":
        if children:
            shown = ", ".join(repr(c) for c in children[:5]) + (" ..." if len(children) > 5 else "")
            raise ToolFailure.invalid_input(
                "mailbox",
                f"{mailbox!r} has {len(children)} child mailbox(es) ({shown}); nothing was deleted. Delete "
                "or rename them first.",
                children=list(children[:50]),
            )
        if messages:
            raise refuse_nonempty(mailbox, messages, account_id)
        return MailboxPlan(
            "delete", mailbox, None, messages, (), box.selectable, tuple(notes), aside_name(mailbox)
        )
    assert args.destination_mailbox is not None
    destination, more = new_destination(names, mailbox, args.destination_mailbox)
    if names.separator and destination.startswith(mailbox + names.separator):
        raise ToolFailure.invalid_input(
            "destination_mailbox",
            f"{destination!r} lies inside {mailbox!r}: a mailbox cannot move into itself.",
        )
    return MailboxPlan(
        "rename", mailbox, destination, messages, children, box.selectable, tuple(notes + more)
    )


def execute_change(mail: MailboxChanges, plan: MailboxPlan, account_id: str, back: AuditLine) -> None:
    """Send the change: delete through a name aside, rename undone (``back``) if it hid the folder's mail."""
    try:
        if plan.action == "create":
            mail.create_mailbox(plan.mailbox)
        elif plan.action == "delete":
            assert plan.aside is not None
            messages = delete_if_empty(mail, plan.mailbox, plan.aside, selectable=plan.selectable)
            if messages:
                raise refuse_nonempty(plan.mailbox, messages, account_id)
        else:
            assert plan.destination is not None
            rename_undoing_special_use(mail, back, plan.mailbox, plan.destination)
    except (CommandRefused, MailboxMissing) as failure:
        raise refused_as_argument(failure, account_id, plan.action, plan.mailbox, plan.destination) from None

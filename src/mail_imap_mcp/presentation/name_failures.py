"""The words of the refusals of mailbox names (:mod:`mail_imap_mcp.mail.name_errors`), naming the
argument that gave the name. The failure registry (:mod:`.failures`) says each with these."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mail_imap_mcp.envelope import ErrorCode, NextAction, ToolFailure
from mail_imap_mcp.mail.directory import EXCLUDED_FROM_ALL
from mail_imap_mcp.mail.name_errors import (
    MailboxNameRefused,
    MailboxNameUnknown,
    NameProblem,
    RenamedIntoSpecialUse,
)
from mail_imap_mcp.presentation.call import Call


def _name_unknown(exc: MailboxNameUnknown, call: Call | None) -> ToolFailure:
    return ToolFailure(
        ErrorCode.NOT_FOUND,
        f"Mailbox {exc.name!r} ({exc.parameter}) does not exist; nothing was changed. Call "
        "imap_list_mailboxes for the names in the server's spelling.",
        details={"parameter": exc.parameter, "mailbox": exc.name},
    )


def _name_refused(exc: MailboxNameRefused, call: Call | None) -> ToolFailure:
    name, sep = exc.name, exc.separator
    if exc.problem == NameProblem.ONLY_SEPARATORS:
        problem = f"a name made only of separators ({sep!r}) names nothing."
    elif exc.problem == NameProblem.EMPTY_LEVEL:
        problem = f"{name!r} has an empty level (a leading, trailing or doubled separator {sep!r})."
    elif exc.problem == NameProblem.EXISTS:
        problem = f"mailbox {name!r} already exists; choose another name."
    elif exc.problem == NameProblem.SPECIAL_USE:
        problem = f"{name!r} is the special-use {exc.why} folder's name; choose another name."
    elif exc.problem == NameProblem.LEFT_OUT:
        problem = (
            f"{_taken_for(name, exc.why)}, so its mail would be hidden from searches of every mailbox "
            "(mailbox '*'); nothing was changed. Choose another name."
        )
    else:
        inside = "" if exc.contained is None else f" (it contains {exc.contained!r})"
        problem = f"{name!r} cannot be {exc.action}d{inside}: {exc.why} is never renamed or deleted."
    return ToolFailure.invalid_input(exc.parameter, problem)


def _taken_for(name: str, role: str) -> str:
    """Why a search of every mailbox leaves out a folder ``name`` where the server marks it with no role."""
    return f"searches of every mailbox take a folder named {name!r} for the {role} folder and leave it out"


def _renamed_into_special_use(exc: RenamedIntoSpecialUse, call: Call | None) -> ToolFailure:
    old, new, role = exc.mailbox, exc.destination, exc.role
    made = (
        f"this server makes a folder named {new!r} its special-use {role} folder"
        if exc.marked
        else f"{_taken_for(new, role)} (this server marks no {role} folder)"
    )
    details = {
        "mailbox_now": exc.now,
        ("special_use" if exc.marked else "taken_for"): role,
        "messages": exc.messages,
    }
    if exc.now == old:
        return ToolFailure.invalid_input(
            "destination_mailbox",
            f"{made}, so the rename was undone at once: the folder is {old!r} again, with its "
            f"{exc.messages} message(s). Choose another name.",
            **details,
        )
    where = (
        f"it is now {new!r}" + (f", the {role} folder" if exc.marked else "")
        if exc.now == new
        else f"whether it is now {old!r} or {new!r} could not be told (list the mailboxes to see)"
    )
    left_out = ", which searches of every mailbox leave out" if role in EXCLUDED_FROM_ALL else ""
    failed = (
        f"Invalid 'destination_mailbox': {made}. Renaming it back failed: {where}, with its "
        f"{exc.messages} message(s){left_out}."
    )
    if not exc.marked:  # an ordinary folder still: this tool renames it back
        back = {"action": "rename", "mailbox": new, "destination_mailbox": old}
        return ToolFailure(
            ErrorCode.INVALID_INPUT,
            f"{failed} Rename {new!r} back to {old!r}.",
            details={"parameter": "destination_mailbox", **details},
            next_action=NextAction(
                instruction=f"Rename {new!r} back to {old!r}",
                tool="imap_manage_mailbox",
                arguments={"account_id": exc.account_id, **back},
            ),
        )
    steps = [
        f"imap_manage_mailbox: create {old!r}",
        f"imap_search_messages in mailbox {new!r}, then imap_apply_to_messages: move every message "
        f"listed to {old!r}",
        f"or rename {new!r} back to {old!r} in another mail client (this tool never renames a "
        "special-use folder)",
    ]
    return ToolFailure(
        ErrorCode.INVALID_INPUT,
        f"{failed} To restore {old!r}: " + "; ".join(f"{n}. {step}" for n, step in enumerate(steps, 1)) + ".",
        details={"parameter": "destination_mailbox", **details, "steps": steps},
        next_action=NextAction(
            instruction=f"Step 1: create {old!r} again",
            tool="imap_manage_mailbox",
            arguments={"account_id": exc.account_id, "action": "create", "mailbox": old},
        ),
    )


#: The registry's lines of the refusals of mailbox names.
NAME_FAILURES: Mapping[type[BaseException], Callable[[Any, Call | None], ToolFailure]] = {
    MailboxNameUnknown: _name_unknown,
    MailboxNameRefused: _name_refused,
    RenamedIntoSpecialUse: _renamed_into_special_use,
}

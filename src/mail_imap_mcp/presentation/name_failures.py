"""The words of the refusals of mailbox names (:mod:`mail_imap_mcp.imap.name_errors`), naming the
argument that gave the name. The failure registry (:mod:`.failures`) says each with these."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.imap.name_errors import MailboxNameRefused, MailboxNameUnknown, NameProblem
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
    else:
        inside = "" if exc.contained is None else f" (it contains {exc.contained!r})"
        problem = f"{name!r} cannot be {exc.action}d{inside}: {exc.why} is never renamed or deleted."
    return ToolFailure.invalid_input(exc.parameter, problem)


#: The registry's lines of the refusals of mailbox names.
NAME_FAILURES: Mapping[type[BaseException], Callable[[Any, Call | None], ToolFailure]] = {
    MailboxNameUnknown: _name_unknown,
    MailboxNameRefused: _name_refused,
}

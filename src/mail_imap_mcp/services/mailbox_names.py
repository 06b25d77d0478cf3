"""The names of imap_manage_mailbox, resolved against the server's directory: an existing mailbox (as
given, else below the personal prefix), a new one (the prefix added, no empty level, not taken), and the
mailboxes never renamed or deleted (INBOX, Trash, Drafts, Sent...). Refusals name the argument."""

from __future__ import annotations

from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.imap.directory import MailboxDirectory
from mail_imap_mcp.imap.roles import INBOX


def existing_mailbox(names: MailboxDirectory, name: str, parameter: str) -> tuple[str, list[str]]:
    """The existing mailbox ``name`` means: as given, else with the personal prefix."""
    name = names.canonical(name)
    if name in names.names() or name == INBOX:
        return name, []
    prefixed = names.with_prefix(name)
    if prefixed is not None:
        return prefixed, [prefix_note(names.prefix, name)]
    raise ToolFailure(
        ErrorCode.NOT_FOUND,
        f"Mailbox {name!r} ({parameter}) does not exist; nothing was changed. Call "
        "imap_list_mailboxes for the names in the server's spelling.",
        details={"parameter": parameter, "mailbox": name},
    )


def new_mailbox(names: MailboxDirectory, name: str, parameter: str) -> tuple[str, list[str]]:
    """The server's spelling of a mailbox to be made; refused when it exists or is malformed."""
    name = names.canonical(name)
    notes = []
    sep, prefix = names.separator, names.prefix
    if sep and not name.strip(sep).strip():
        raise ToolFailure.invalid_input(parameter, f"a name made only of separators ({sep!r}) names nothing.")
    if prefix and name != INBOX and not name.startswith(prefix):
        notes.append(prefix_note(prefix, name))
        name = prefix + name
    if sep and any(not level.strip() for level in name.split(sep)):
        raise ToolFailure.invalid_input(
            parameter,
            f"{name!r} has an empty level (a leading, trailing or doubled separator {sep!r}).",
        )
    if name == INBOX or name in names.names():
        raise ToolFailure.invalid_input(parameter, f"mailbox {name!r} already exists; choose another name.")
    return name, notes


def refuse_protected(names: MailboxDirectory, name: str, parameter: str, action: str) -> None:
    protected = names.protected()
    for each in (name, *names.children(name)):
        why = protected.get(each)
        if why is not None:
            inside = "" if each == name else f" (it contains {each!r})"
            raise ToolFailure.invalid_input(
                parameter, f"{name!r} cannot be {action}d{inside}: {why} is never renamed or deleted."
            )


def prefix_note(prefix: str, name: str) -> str:
    return f"This server keeps personal mailboxes below {prefix!r}: {name!r} was taken as {prefix + name!r}."

"""The names of imap_manage_mailbox, resolved against the server's directory: an existing mailbox (as
given, else below the personal prefix), a new one (the prefix added, no empty level, not taken), and the
mailboxes never renamed or deleted (INBOX, Trash, Drafts, Sent...). Refusals name the argument."""

from __future__ import annotations

from mail_imap_mcp.mail.directory import MailboxDirectory
from mail_imap_mcp.mail.name_errors import MailboxNameRefused, MailboxNameUnknown, NameProblem
from mail_imap_mcp.mail.roles import INBOX


def existing_mailbox(names: MailboxDirectory, name: str, parameter: str) -> tuple[str, list[str]]:
    """The existing mailbox ``name`` means: as given, else with the personal prefix."""
    name = names.canonical(name)
    if name in names.names() or name == INBOX:
        return name, []
    prefixed = names.with_prefix(name)
    if prefixed is not None:
        return prefixed, [prefix_note(names.prefix, name)]
    raise MailboxNameUnknown(name, parameter)


def new_mailbox(names: MailboxDirectory, name: str, parameter: str) -> tuple[str, list[str]]:
    """The server's spelling of a mailbox to be made; refused when it exists or is malformed."""
    name = names.canonical(name)
    notes = []
    sep, prefix = names.separator, names.prefix
    if sep and not name.strip(sep).strip():
        raise MailboxNameRefused(parameter, NameProblem.ONLY_SEPARATORS, name, separator=sep)
    if prefix and name != INBOX and not name.startswith(prefix):
        notes.append(prefix_note(prefix, name))
        name = prefix + name
    if sep and any(not level.strip() for level in name.split(sep)):
        raise MailboxNameRefused(parameter, NameProblem.EMPTY_LEVEL, name, separator=sep)
    if name == INBOX or name in names.names():
        raise MailboxNameRefused(parameter, NameProblem.EXISTS, name)
    return name, notes


def refuse_protected(names: MailboxDirectory, name: str, parameter: str, action: str) -> None:
    protected = names.protected()
    for each in (name, *names.children(name)):
        why = protected.get(each)
        if why is not None:
            contained = None if each == name else each
            raise MailboxNameRefused(
                parameter, NameProblem.PROTECTED, name, action=action, contained=contained, why=why
            )


def refuse_special_use_name(names: MailboxDirectory, name: str, parameter: str) -> None:
    """Refuse a new name that LIST shows as a special-use folder's (as given or with the prefix)."""
    for candidate in (names.canonical(name), names.prefix + name):
        box = names.get(candidate)
        if box is not None and box.special_use:
            raise MailboxNameRefused(parameter, NameProblem.SPECIAL_USE, box.name, why=box.special_use)


def new_destination(names: MailboxDirectory, mailbox: str, given: str) -> tuple[str, list[str]]:
    """The server's spelling of the new name of ``mailbox`` (``destination_mailbox``: ``given``), refused
    where it is a special-use folder's, is taken or malformed (:func:`new_mailbox`), or would hide the
    mail a search of every mailbox finds in ``mailbox`` now (a name that search leaves out:
    :meth:`MailboxDirectory.left_out`, the rule the search itself follows)."""
    parameter = "destination_mailbox"
    refuse_special_use_name(names, given, parameter)
    destination, notes = new_mailbox(names, given, parameter)
    role = hidden_by_rename(names, mailbox, destination)
    if role is not None:
        raise MailboxNameRefused(parameter, NameProblem.LEFT_OUT, destination, why=role)
    return destination, notes


def hidden_by_rename(names: MailboxDirectory, mailbox: str, destination: str) -> str | None:
    """The role a search of every mailbox would take ``destination`` for, and leave out, once ``mailbox``
    (in ``names``) is renamed to it; None where it would search it, or left ``mailbox`` out already."""
    if mailbox in names.left_out():
        return None
    return names.renamed(mailbox, destination).left_out().get(destination)


def prefix_note(prefix: str, name: str) -> str:
    return f"This server keeps personal mailboxes below {prefix!r}: {name!r} was taken as {prefix + name!r}."

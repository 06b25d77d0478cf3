"""The refusals of the mailbox names imap_manage_mailbox is given, resolved against the server's
directory: a mailbox that does not exist, a new name that is malformed or taken, a mailbox never renamed
or deleted. Each carries the facts its words need, never the words (the failure registry of
``presentation/`` says them, with the argument that gave the name)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from mail_imap_mcp.mail.errors import MailError


class MailboxNameUnknown(MailError):
    """No mailbox ``name`` (the argument ``parameter``), as given or below the personal prefix."""

    def __init__(self, name: str, parameter: str) -> None:
        super().__init__(f"mailbox {name!r} ({parameter}) does not exist")
        self.name = name
        self.parameter = parameter


class NameProblem(StrEnum):
    """What is wrong with a mailbox name."""

    #: A new name made only of separators.
    ONLY_SEPARATORS = "only_separators"
    #: A new name with an empty level (a leading, trailing or doubled separator).
    EMPTY_LEVEL = "empty_level"
    #: A new name that is taken.
    EXISTS = "exists"
    #: A new name that is a special-use folder's (``why``: its role).
    SPECIAL_USE = "special_use"
    #: A mailbox (or one inside it) that is never renamed or deleted.
    PROTECTED = "protected"
    #: A new name a search of every mailbox leaves out (``why``: the role it is taken for).
    LEFT_OUT = "left_out"


class MailboxNameRefused(MailError):
    """The mailbox name ``name`` given as ``parameter`` is refused (``problem``). ``separator``: the
    server's hierarchy separator; for ``PROTECTED``: the ``action`` refused, the mailbox inside ``name``
    that is protected (``contained``, None for ``name`` itself) and ``why`` (which role it plays)."""

    def __init__(
        self,
        parameter: str,
        problem: NameProblem,
        name: str,
        *,
        separator: str = "",
        action: str = "",
        contained: str | None = None,
        why: str = "",
    ) -> None:
        super().__init__(f"mailbox name {name!r} ({parameter}) refused: {problem.value}")
        self.parameter = parameter
        self.problem = problem
        self.name = name
        self.separator = separator
        self.action = action
        self.contained = contained
        self.why = why


@dataclass(eq=False)
class RenamedIntoSpecialUse(MailError):
    """RENAME of the ordinary folder ``mailbox`` of ``account_id`` to ``destination`` made it the server's
    special-use ``role`` folder (the server gives that role by name), or (``marked`` False) a folder a
    search of every mailbox takes for ``role`` by its name and leaves out. ``now``: the name the folder
    has after the rename back was tried (``mailbox`` when undone, ``destination`` when the rename back
    was refused, None when unknown); ``messages``: what it holds."""

    account_id: str
    mailbox: str
    destination: str
    role: str
    messages: int
    now: str | None
    marked: bool = True

    def __post_init__(self) -> None:
        super().__init__(f"RENAME of {self.mailbox!r} to {self.destination!r} made it {self.role}")

    def located(self, now: str | None) -> RenamedIntoSpecialUse:
        """The same failure, the folder's name now found by a LIST on another connection."""
        return replace(self, now=now)

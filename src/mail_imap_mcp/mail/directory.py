"""The mailbox directory of an account: which mailbox plays which role, how names are spelled, what exists.

One place for what the tools look up by role: the special-use mailboxes (RFC 6154: Trash, Drafts, Sent,
Junk, Archive...) with the account's configured overrides (``trash_mailbox``, ``drafts_mailbox``) where
the server marks none, and usual names (``Sent Items``, ``Spam``...) where a read only needs a good
guess; INBOX, whose name is case-insensitive (RFC 3501 5.1), also as the head of a hierarchy
(``inbox.Projects`` is ``INBOX.Projects``); the hierarchy separator and the personal namespace prefix;
and whether a name exists and can be selected. ``imap/directory.py`` loads it from one LIST.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.mail.mailboxes import MailboxInfo
from mail_imap_mcp.mail.roles import ALL, DRAFTS, FLAGGED, IMPORTANT, INBOX, JUNK, SENT, TRASH
from mail_imap_mcp.mail.write_errors import RoleMailboxMissing

#: The account setting naming the mailbox of a role where the server marks none.
ROLE_SETTINGS = {TRASH: "trash_mailbox", DRAFTS: "drafts_mailbox", SENT: "sent_mailbox"}
#: Left out of a search of every mailbox unless named: deleted mail, spam, and virtual views that hold
#: copies of mail kept elsewhere (Gmail's All Mail, Important and Starred; Dovecot's virtual folders).
EXCLUDED_FROM_ALL = (TRASH, JUNK, ALL, FLAGGED, IMPORTANT)
#: Last name parts that usually stand for a role, for reads where the server marks no mailbox with it.
USUAL_NAMES = {
    TRASH: frozenset({"trash", "deleted items", "deleted messages", "bin"}),
    JUNK: frozenset({"junk", "spam", "junk e-mail", "junk email", "bulk mail"}),
    SENT: frozenset({"sent", "sent items", "sent messages", "sent mail"}),
}


def canonical_inbox(name: str) -> str:
    """``INBOX`` for any spelling of it (RFC 3501 5.1: case-insensitive); other names as they are."""
    return INBOX if name.upper() == INBOX else name


def same_mailbox(a: str, b: str) -> bool:
    """Whether two names name the same mailbox (INBOX in any case)."""
    return canonical_inbox(a) == canonical_inbox(b)


def configured_roles(account: AccountConfig | None) -> dict[str, str]:
    """The mailboxes the account's settings name, by role."""
    if account is None:
        return {}
    named = {role: getattr(account, setting) for role, setting in ROLE_SETTINGS.items()}
    return {role: name for role, name in named.items() if name}


@dataclass
class MailboxDirectory:
    """The mailboxes of one account as one LIST showed them, and the account's role settings."""

    boxes: list[MailboxInfo]
    #: role -> mailbox named in the configuration (:data:`ROLE_SETTINGS`).
    configured: dict[str, str] = field(default_factory=dict)
    #: The personal namespace's prefix ("INBOX." on Cyrus and Courier, "" on Dovecot).
    prefix: str = ""
    #: The hierarchy separator, None where the server has no hierarchy.
    separator: str | None = None
    #: The account's settings (to tell the user which one to set).
    account: AccountConfig | None = None

    def canonical(self, name: str) -> str:
        """``name`` with INBOX in its canonical case, also as the head of a hierarchy."""
        if self.separator and name.upper().startswith(INBOX + self.separator):
            return INBOX + name[len(INBOX) :]
        return canonical_inbox(name)

    def get(self, name: str) -> MailboxInfo | None:
        """The mailbox ``name`` names (INBOX in any case), selectable or not."""
        wanted = self.canonical(name)
        return next((box for box in self.boxes if self.canonical(box.name) == wanted), None)

    def selectable(self, name: str) -> str | None:
        """The server's spelling of ``name`` when it exists and can be selected."""
        box = self.get(name)
        return box.name if box is not None and box.selectable else None

    def names(self) -> set[str]:
        return {box.name for box in self.boxes}

    def inbox(self) -> str | None:
        """INBOX as LIST spells it, when LIST shows it."""
        return next((box.name for box in self.boxes if box.name.upper() == INBOX), None)

    def marked(self, role: str) -> str | None:
        """The first selectable mailbox the server marks with the special-use ``role``."""
        return next((box.name for box in self.boxes if box.special_use == role and box.selectable), None)

    def special_use(self, role: str) -> str | None:
        """The mailbox of ``role`` for a write: the one the server marks, else the configured one when it
        exists (None when neither; :attr:`configured` tells the two cases apart)."""
        marked = self.marked(role)
        if marked is not None:
            return marked
        configured = self.configured.get(role)
        return self.selectable(configured) if configured else None

    def require(self, role: str, account_id: str, advice: str = "") -> str:
        """:meth:`special_use`, else :class:`RoleMailboxMissing` (the failure registry names the setting
        the user sets, or corrects); ``advice`` ends its message (what else the caller can do)."""
        found = self.special_use(role)
        if found is not None:
            return found
        setting = ROLE_SETTINGS[role]
        raise RoleMailboxMissing(role, account_id, setting, self.configured.get(role), advice, self.account)

    def with_role(self, role: str) -> list[str]:
        """For reads: the selectable mailboxes marked with ``role``, else those with a usual name for it."""
        marked = [box.name for box in self.boxes if box.special_use == role and box.selectable]
        if marked:
            return marked
        usual = USUAL_NAMES.get(role, frozenset())
        return [box.name for box in self.boxes if box.selectable and self.last_part(box) in usual]

    @staticmethod
    def last_part(box: MailboxInfo) -> str:
        """The last level of ``box``'s name, case-folded."""
        name = box.name.rsplit(box.delimiter, 1)[-1] if box.delimiter else box.name
        return name.casefold()

    def searchable(self) -> list[str]:
        """The mailboxes a search of every mailbox (``mailbox: "*"``) covers, in LIST order: every
        selectable one but those it leaves out (:meth:`left_out`)."""
        left_out = self.left_out()
        return [box.name for box in self.boxes if box.selectable and box.name not in left_out]

    def left_out(self) -> dict[str, str]:
        """The mailboxes a search of every mailbox leaves out unless named, each with the role it is taken
        for: :data:`EXCLUDED_FROM_ALL` by special use, the configured Trash, and, where the server marks
        no Trash or Junk mailbox, ones with their usual names (:meth:`with_role`)."""
        left_out = {
            box.name: box.special_use
            for box in self.boxes
            if box.selectable and box.special_use is not None and box.special_use in EXCLUDED_FROM_ALL
        }
        for role in (TRASH, JUNK):
            left_out.update({name: role for name in self.with_role(role) if name not in left_out})
        configured = self.configured.get(TRASH)
        if configured is not None:
            left_out.setdefault(configured, TRASH)
        return left_out

    def renamed(self, mailbox: str, destination: str) -> MailboxDirectory:
        """This directory as it would be once ``mailbox`` (with the mailboxes below it) is ``destination``."""

        def moved(box: MailboxInfo) -> MailboxInfo:
            inside = bool(box.delimiter) and box.name.startswith(f"{mailbox}{box.delimiter}")
            if box.name != mailbox and not inside:
                return box
            return replace(box, name=destination + box.name[len(mailbox) :])

        return replace(self, boxes=[moved(box) for box in self.boxes])

    def children(self, name: str) -> tuple[str, ...]:
        """The mailboxes below ``name`` in the hierarchy, by name."""
        if not self.separator:
            return ()
        below = name + self.separator
        return tuple(sorted(box.name for box in self.boxes if box.name.startswith(below)))

    def with_prefix(self, name: str) -> str | None:
        """The existing mailbox ``name`` means when given without the personal prefix, if any."""
        if not self.prefix or name.startswith(self.prefix):
            return None
        prefixed = self.prefix + name
        return prefixed if prefixed in self.names() else None

    def protected(self) -> dict[str, str]:
        """The mailboxes never renamed or deleted, and why: INBOX, every special-use mailbox, and the
        ones the configuration names for a role."""
        protected = {INBOX: INBOX}
        for box in self.boxes:
            if box.special_use:
                protected[box.name] = f"the special-use folder {box.name!r} ({box.special_use})"
        for role, name in self.configured.items():
            protected.setdefault(name, f"the {ROLE_SETTINGS[role]} {name!r} of this account")
        return protected


def directory_of(
    boxes: list[MailboxInfo],
    account: AccountConfig | None = None,
    prefix: str = "",
    separator: str | None = None,
) -> MailboxDirectory:
    """The directory of ``boxes`` as one listing showed them, with ``account``'s role settings; the
    separator, where none is given, the one the listing shows; ``prefix``: the personal namespace's."""
    if separator is None:
        separator = next((box.delimiter for box in boxes if box.delimiter), None)
    if prefix and prefix.upper() == f"{INBOX}{separator}":
        prefix = f"{INBOX}{separator}"
    return MailboxDirectory(boxes, configured_roles(account), prefix, separator or None, account)

"""Where a search looks: ``mailbox`` or ``mailboxes`` as given; else the query's ``in:`` (a mailbox found
by its name, its last level or its role, or every mailbox with Trash and Junk: ``in:anywhere``); else every
mailbox with a query (or a search by meaning: ``about``, ``like``) and INBOX without one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from mail_imap_mcp.call import Call
from mail_imap_mcp.mail.directory import canonical_inbox, directory_of
from mail_imap_mcp.mail.roles import ALL, ARCHIVE, DRAFTS, INBOX, JUNK, SENT, TRASH
from mail_imap_mcp.query import Anywhere, InMailbox, Scope
from mail_imap_mcp.services.search_args import ALL_MAILBOXES, ScopeArgs

#: What ``in:`` words name by role (RFC 6154 special use, else a usual name), as Gmail users write them.
ROLE_WORDS = {
    "sent": SENT,
    "drafts": DRAFTS,
    "draft": DRAFTS,
    "trash": TRASH,
    "bin": TRASH,
    "spam": JUNK,
    "junk": JUNK,
    "archive": ARCHIVE,
    "all": ALL,
}
#: The roles ``in:anywhere`` adds to a search of every mailbox.
ANYWHERE_ROLES = (TRASH, JUNK)


def scope_mailbox(app: Call, account_id: str, name: str) -> str:
    """The mailbox ``in:<name>`` means. INBOX (in any case) without asking the server; else, from one
    LIST: the mailbox of that name, else the one with the role ``name`` is a word for (``sent``,
    ``trash``...), else the one whose last level is ``name`` in any case when just one is; else ``name``
    as written (the search then says it does not exist)."""
    if canonical_inbox(name) == INBOX:
        return INBOX
    account = app.config.accounts[account_id]
    directory = directory_of(app.mail(account_id).mailboxes(), account)
    if directory.selectable(name) is not None:
        return directory.canonical(name)
    role = ROLE_WORDS.get(name.casefold())
    by_role = directory.with_role(role) if role is not None else []
    if by_role:
        return by_role[0]
    by_level = [
        box.name for box in directory.boxes if box.selectable and directory.last_part(box) == name.casefold()
    ]
    return by_level[0] if len(by_level) == 1 else name


@dataclass(frozen=True)
class Searched:
    """The search's arguments with its mailboxes resolved (a :class:`~.search_args.SearchArgs`)."""

    account_id: str
    mailbox: str
    mailboxes: list[str] | None
    sort: Literal["arrival", "date", "relevance"]
    limit: int
    snippet_chars: int
    cursor: str | None


def searched_where(app: Call, account_id: str, args: ScopeArgs, scope: Scope | None) -> Searched:
    """Where the search of ``args`` looks (``scope``: its query's ``in:``, which the caller has checked
    is not given with ``mailbox`` or ``mailboxes``)."""
    mailbox = args.mailbox
    # A search by meaning (about, like) is by content, as one with a query; always best match first.
    by_meaning = args.about is not None or args.like is not None
    if isinstance(scope, Anywhere):
        mailbox = ALL_MAILBOXES
    elif isinstance(scope, InMailbox):
        mailbox = scope_mailbox(app, account_id, scope.name)
    elif mailbox is None:
        mailbox = ALL_MAILBOXES if args.query is not None or by_meaning else INBOX
    sort: Literal["arrival", "date", "relevance"] = "relevance" if by_meaning else args.sort
    return Searched(account_id, mailbox, args.mailboxes, sort, args.limit, args.snippet_chars, args.cursor)

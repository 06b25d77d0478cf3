"""The mailboxes of an account as a listing shows them: name, hierarchy separator, attributes, the role
they play (special-use) and, where asked, their counts."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class MailboxCounts:
    messages: int | None
    unseen: int | None
    uidvalidity: int | None
    uidnext: int | None
    #: HIGHESTMODSEQ (CONDSTORE), where it was asked for and the server keeps it.
    highestmodseq: int | None = None


@dataclass
class MailboxInfo:
    name: str
    delimiter: str | None
    attributes: list[str]
    special_use: str | None
    selectable: bool
    counts: MailboxCounts | None = None

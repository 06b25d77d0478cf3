"""What EXAMINE or SELECT said of a mailbox, as a plain record (the plans of ``search/`` read it with no
session and no IMAP library; :mod:`.view` keeps it up to date with the server's later updates)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class MailboxState:
    """What EXAMINE (``readonly``) or SELECT told us about the selected mailbox."""

    name: str
    uidvalidity: int
    uidnext: int
    exists: int
    readonly: bool = True
    #: PERMANENTFLAGS of the SELECT answer (``\\*``: new keywords allowed); None when the server sent none.
    permanent_flags: frozenset[str] | None = None
    #: The mailbox keeps MODSEQs (False: its SELECT answered ``NOMODSEQ``, RFC 7162 3.1.2: no CONDSTORE
    #: command may be used on it, whatever the server advertises).
    modseqs: bool = True

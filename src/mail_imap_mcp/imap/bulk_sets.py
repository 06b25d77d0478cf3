"""The IMAP steps of a run on a whole search (``mail/bulk.py``) on one session: the set's mailbox selected
with its UIDVALIDITY checked, which of its UIDs still exist, and what a run does to a chunk on the session
(:class:`SessionWork`: :class:`Flagging` here, ``imap/bulk_moves.py``'s ``Moving``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.imap.uidplus import CopyUid, format_uid_set
from mail_imap_mcp.mail.bulk import CHUNK, FlagChanges, SearchSet
from mail_imap_mcp.mail.errors import UidValidityChanged
from mail_imap_mcp.mail.write_records import FlagOperation


class SessionWork(Protocol):
    """What a run does on the session: ``prepare`` once before the first chunk (its own calls), ``send``
    each chunk's command once (the mailbox selected; a move answers its COPYUID), and ``settle`` a chunk
    whose answer was lost, on a fresh connection: find out what happened and finish it (what it answers
    is done)."""

    def prepare(self, connection: AccountConnection, source: SearchSet, targets: list[int]) -> None: ...
    def send(self, session: ImapSession, uids: list[int]) -> CopyUid | None: ...
    def settle(self, session: ImapSession, uids: list[int]) -> CopyUid | None: ...


def select_set(session: ImapSession, approved: SearchSet) -> None:
    """The set's mailbox selected read-write; :class:`UidValidityChanged` naming it where it was made
    again since the set was fixed (nothing is sent)."""
    try:
        session.select(approved.mailbox, uidvalidity=approved.uidvalidity)
    except UidValidityChanged as exc:
        raise UidValidityChanged(exc.expected, exc.actual, approved.mailbox) from None


def existing(session: ImapSession, uids: Sequence[int], *, ahead: SearchSet | None = None) -> list[int]:
    """Those of ``uids`` that exist in the selected mailbox, :data:`CHUNK` per SEARCH; with ``ahead``, in
    that set's mailbox, selected read-write with the first SEARCH (one round trip: its answer taken only
    once the selection's UIDVALIDITY is the set's, :class:`UidValidityChanged` naming it otherwise)."""
    found: list[int] = []
    try:
        if ahead is not None:
            session.select_ahead(ahead.mailbox, uidvalidity=ahead.uidvalidity)
        for start in range(0, len(uids), CHUNK):
            found += search_uids(session, uids[start : start + CHUNK])
    except UidValidityChanged as exc:
        if ahead is None:
            raise
        raise UidValidityChanged(exc.expected, exc.actual, ahead.mailbox) from None
    return found


def search_uids(session: ImapSession, uids: Sequence[int]) -> list[int]:
    """Those of ``uids`` that exist in the selected mailbox (one UID SEARCH)."""
    return session.uid_search([b"UID", format_uid_set(list(uids)).encode("ascii")])


@dataclass
class Flagging:
    """Adding or removing ``flags`` on each chunk (FETCH FLAGS, then one UID STORE), noting in ``changes``
    which messages each flag changed on; a chunk whose answer was lost is stored again (a STORE of flags
    a message has changes nothing)."""

    operation: FlagOperation
    flags: tuple[str, ...]
    changes: FlagChanges
    source: SearchSet | None = None

    def prepare(self, connection: AccountConnection, source: SearchSet, targets: list[int]) -> None:
        self.source = source

    def send(self, session: ImapSession, uids: list[int]) -> CopyUid | None:
        before = session.fetch_flags(uids)
        for flag in self.flags:
            for uid, state in before.items():
                has = flag.lower() in {f.lower() for f in state.flags}
                if has != (self.operation == "add"):
                    self.changes.flags[flag].add(uid)
        session.store_flags(uids, self.mode, self.flags)
        return None

    @property
    def mode(self) -> str:
        return "+" if self.operation == "add" else "-"

    def settle(self, session: ImapSession, uids: list[int]) -> CopyUid | None:
        assert self.source is not None
        session.select(self.source.mailbox, uidvalidity=self.source.uidvalidity)
        found = search_uids(session, uids)
        if found:
            session.store_flags(found, self.mode, self.flags)
        return None

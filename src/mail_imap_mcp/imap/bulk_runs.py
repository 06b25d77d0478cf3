"""Runs on a whole search (``mail/bulk.py``'s :class:`~mail_imap_mcp.mail.bulk.MailRuns`) over one
account's IMAP connection, each step one call as the chunk loop of ``operations/bulk.py`` asks for it:
the set fixed (EXAMINE, then UID SEARCH in the server's dialect), searched again read-write when the run
starts (SELECT with its UIDVALIDITY checked) and read-only when it ends, each chunk's command sent once
(``run_write``: never replayed), a chunk whose answer was lost settled on a fresh connection, and where a
move or delete by search takes its messages (one LIST)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.imap.bulk_moves import Moving
from mail_imap_mcp.imap.bulk_sets import Flagging, SessionWork, existing, select_set
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.directory import load_directory, matching_directory
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.imap.uidplus import CopyUid, copied_of
from mail_imap_mcp.mail.bulk import ChunkAction, FlagChanges, LinkUse, SearchSet
from mail_imap_mcp.mail.errors import UidValidityChanged
from mail_imap_mcp.mail.write_records import Copied, FlagOperation
from mail_imap_mcp.query import DIALECTS, Query, best_dialect, needs_utf8


class ImapRuns:
    """The runs family of ``imap/backend.py``'s ``ImapMail`` (on its ``_connection``)."""

    _connection: AccountConnection

    def fixed(self, mailbox: str, query: Query) -> SearchSet:
        def find(session: ImapSession) -> SearchSet:
            session.examine_ahead(mailbox)  # EXAMINE with the SEARCH: one round trip
            found = sorted(_search(session, query))
            return SearchSet(mailbox, session.examine(mailbox).uidvalidity, tuple(found))

        return self._connection.run(find)

    def targets(self, approved: SearchSet, query: Query | None) -> tuple[list[int], set[int]]:
        def look(session: ImapSession) -> tuple[list[int], set[int]]:
            if query is None:  # SELECT sent with the UID SEARCH of the set: one round trip
                return sorted(existing(session, approved.uids, ahead=approved)), set()
            select_set(session, approved)
            now, wanted = set(_search(session, query)), set(approved.uids)
            return sorted(now & wanted), now - wanted

        return self._connection.run_write(look)

    def arrived(self, approved: SearchSet, query: Query) -> set[int]:
        def search(session: ImapSession) -> set[int]:
            session.examine_ahead(approved.mailbox, uidvalidity=approved.uidvalidity)
            try:
                return set(_search(session, query)) - set(approved.uids)
            except UidValidityChanged:
                return set()

        return self._connection.run(search)

    def moving(self, approved: SearchSet, to: str) -> ChunkAction:
        return SessionChunks(self._connection, approved, Moving(to))

    def flagging(
        self, approved: SearchSet, operation: FlagOperation, flags: tuple[str, ...], changes: FlagChanges
    ) -> ChunkAction:
        return SessionChunks(self._connection, approved, Flagging(operation, flags, changes))

    def deletes_to(self, account: AccountConfig | None) -> str:
        account_id = self._connection.account_id

        def look(session: ImapSession) -> str:
            directory = load_directory(session, account)
            return directory.require(session.personality.deletes_to, account_id)

        return self._connection.run(look)

    def selectable(self, name: str) -> str | None:
        return self._connection.run(lambda session: matching_directory(session, name).selectable(name))


def _search(session: ImapSession, query: Query) -> list[int]:
    """UID SEARCH of ``query`` in the selected mailbox, in the best dialect the server's search speaks."""
    personality = session.personality
    compile_keys = DIALECTS[best_dialect(personality.search_dialects, personality.name)]
    return session.uid_search(compile_keys(query), charset="UTF-8" if needs_utf8(query) else None)


@dataclass
class SessionChunks:
    """A :class:`SessionWork` on a set as the chunk loop runs it: each chunk's command one never-replayed
    call, a lost answer settled in one call. The set's mailbox is selected (its UIDVALIDITY checked) before
    a chunk unless the last chunk's call left it selected read-write and nothing was sent on the account's
    connection since: then the chunk acts on that SELECT's view as a second command of one call would
    (the same session, nothing between), and costs the link one round trip, not two."""

    connection: AccountConnection
    approved: SearchSet
    work: SessionWork
    #: The shortest wait for an answer seen on the connection of a chunk's call (about its round trip).
    fastest_wait_s: float = math.inf
    #: The account's commands sent when the last chunk's call ended with the set's mailbox selected.
    held_at: int | None = None

    def prepare(self, targets: list[int]) -> None:
        self.work.prepare(self.connection, self.approved, targets)

    def send(self, uids: list[int]) -> Copied | None:
        def chunk(session: ImapSession) -> CopyUid | None:
            if not self._still_selected():
                select_set(session, self.approved)
            self.held_at = None  # a chunk whose answer is lost leaves the session unknown
            sent = self.work.send(session, uids)
            self.held_at = self.connection.commands_sent
            self.fastest_wait_s = min(self.fastest_wait_s, session.client.fastest_wait_s)
            return sent

        return copied_of(self.connection.run_write(chunk))

    def _still_selected(self) -> bool:
        selected = self.connection.selected
        return (
            self.held_at == self.connection.commands_sent
            and selected is not None
            and not selected.readonly
            and selected.name == self.approved.mailbox
            and selected.uidvalidity == self.approved.uidvalidity
        )

    def link(self) -> LinkUse:
        fastest = self.fastest_wait_s
        return LinkUse(self.connection.round_trips, 0.0 if fastest == math.inf else fastest)

    def settle(self, uids: list[int]) -> Copied | None:
        self.held_at = None
        return copied_of(self.connection.run_write(lambda session: self.work.settle(session, uids)))

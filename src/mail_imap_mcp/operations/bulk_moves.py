"""A run on a whole search that moves its set (a move or delete by search, and the undo of one), chunk by
chunk, such that no message is lost or copied twice (:class:`Moving`, the
:class:`~mail_imap_mcp.operations.bulk.ChunkWork` of :func:`~mail_imap_mcp.operations.bulk.run_on_set`).

Each message of the set is known by its :class:`MessageKey` (Message-ID, size and arrival time: what a
copy keeps), read before the first chunk. Where the server has no MOVE (Courier: COPY, then STORE
``\\Deleted`` and UID EXPUNGE), a message the destination already holds (a copy a run cut before its
EXPUNGE left there) is not copied again: its original is only removed. A chunk whose answer was lost is
settled on a fresh connection: what left the source moved (its new UID found by its key among the
destination's new messages); what is still there and already in the destination is removed from the
source; what is still there and not in the destination is moved now.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial

from mail_imap_mcp import mime
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.errors import UidValidityChanged
from mail_imap_mcp.imap.fetch import expunged, find_item
from mail_imap_mcp.imap.search.watermark import imap_date
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.imap.uidplus import CopyUid
from mail_imap_mcp.operations.bulk import CHUNK, SearchSet, search_uids

_KEY_ITEMS = ["RFC822.SIZE", "INTERNALDATE", "BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"]


@dataclass(frozen=True)
class MessageKey:
    """What a message and its copy share: its Message-ID, its size and its INTERNALDATE."""

    message_id: str
    size: int
    arrived: datetime


def message_keys(session: ImapSession, uids: Sequence[int]) -> dict[int, MessageKey]:
    """The keys of those of ``uids`` in the selected mailbox that have a Message-ID."""
    keys: dict[int, MessageKey] = {}
    for start in range(0, len(uids), CHUNK):
        for uid, response in session.fetch_range(uids[start : start + CHUNK], _KEY_ITEMS).items():
            header = find_item(response, b"BODY[HEADER.FIELDS")
            arrived, size = response.get(b"INTERNALDATE"), response.get(b"RFC822.SIZE")
            if expunged(response) or not isinstance(arrived, datetime) or not isinstance(size, int):
                continue
            found = mime.parse_header_block(header or b"").get("message-id") or [""]
            message_id = " ".join(found[0].split())
            if message_id:
                keys[uid] = MessageKey(message_id, size, arrived)
    return keys


@dataclass
class Moving:
    """Moving a set from its mailbox to ``to`` (see the module)."""

    to: str
    source: SearchSet | None = None
    #: The set's messages by UID, as read before the first chunk.
    keys: dict[int, MessageKey] = field(default_factory=dict)
    #: Of the set, those the destination already holds, and their UID there (no MOVE only).
    present: dict[int, int] = field(default_factory=dict)
    #: The destination's UIDVALIDITY, and a UID at or below that of every message moved in after now.
    to_uidvalidity: int = 0
    to_next: int = 1
    #: Destination UIDs already accounted to a message of the set.
    claimed: set[int] = field(default_factory=set)

    def prepare(self, connection: AccountConnection, source: SearchSet, targets: list[int]) -> None:
        """Read the set's keys and the destination's state (each piece its own call); without MOVE, find
        the messages the destination already holds."""
        self.source = source
        for start in range(0, len(targets), CHUNK):
            piece = targets[start : start + CHUNK]
            self.keys.update(connection.run(partial(self._keys_in_source, uids=piece)))
        earliest = min((key.arrived for key in self.keys.values()), default=None)
        held = connection.run(lambda session: self._destination(session, earliest))
        keys: dict[int, MessageKey] = {}
        for start in range(0, len(held), CHUNK):
            piece = held[start : start + CHUNK]
            keys.update(connection.run(partial(self._keys_in, uids=piece)))
        self.present = self._matching(targets, keys)

    def _keys_in_source(self, session: ImapSession, uids: list[int]) -> dict[int, MessageKey]:
        assert self.source is not None
        state = session.examine(self.source.mailbox)
        if state.uidvalidity != self.source.uidvalidity:
            raise UidValidityChanged(self.source.uidvalidity, state.uidvalidity, self.source.mailbox)
        return message_keys(session, uids)

    def _destination(self, session: ImapSession, earliest: datetime | None) -> list[int]:
        state = session.examine(self.to)
        self.to_uidvalidity, self.to_next = state.uidvalidity, state.uidnext
        if session.profile.moves or earliest is None:
            return []  # a MOVE leaves no message in both mailboxes: nothing held twice to find
        # A day early: SEARCH compares dates in the server's zone, INTERNALDATE carries its own.
        return session.uid_search([b"SINCE", imap_date((earliest - timedelta(days=1)).date())])

    def _keys_in(self, session: ImapSession, uids: list[int]) -> dict[int, MessageKey]:
        if session.examine(self.to).uidvalidity != self.to_uidvalidity:
            return {}
        return message_keys(session, uids)

    def send(self, session: ImapSession, uids: list[int]) -> CopyUid | None:
        """Move ``uids`` (the source selected): those the destination holds are only removed."""
        present = [uid for uid in uids if uid in self.present]
        rest = [uid for uid in uids if uid not in self.present]
        copied = session.uid_move(rest, self.to) if rest else None
        if present:
            session.uid_expunge(present)
        return self._account(copied, {uid: self.present[uid] for uid in present})

    def settle(self, session: ImapSession, uids: list[int]) -> CopyUid | None:
        """Find out where the messages of a chunk whose answer was lost are, and finish moving them."""
        assert self.source is not None
        session.select(self.source.mailbox, uidvalidity=self.source.uidvalidity)
        still = set(search_uids(session, uids))
        found = {uid: self.present[uid] for uid in uids if uid in self.present}
        if session.examine(self.to).uidvalidity == self.to_uidvalidity:
            found.update(self._arrivals(session, [uid for uid in uids if uid not in found]))
        session.select(self.source.mailbox, uidvalidity=self.source.uidvalidity)
        held = [] if session.profile.moves else [uid for uid in uids if uid in still and uid in found]
        unmoved = [uid for uid in uids if uid in still and uid not in held]
        if held:
            session.uid_expunge(held)
        copied = session.uid_move(unmoved, self.to) if unmoved else None
        return self._account(copied, {uid: new for uid, new in found.items() if uid not in unmoved})

    def _arrivals(self, session: ImapSession, uids: list[int]) -> dict[int, int]:
        """The destination's messages since :attr:`to_next` that carry the key of one of ``uids``."""
        arrived = [
            uid
            for uid in session.uid_search([b"UID", f"{self.to_next}:*".encode("ascii")])
            if uid >= self.to_next and uid not in self.claimed
        ]
        return self._matching(uids, message_keys(session, arrived))

    def _matching(self, uids: list[int], there: dict[int, MessageKey]) -> dict[int, int]:
        """Each of ``uids`` whose key one of the messages ``there`` carries, and that message's UID (each
        message of ``there`` given to one of ``uids`` at most)."""
        by_key: dict[MessageKey, list[int]] = defaultdict(list)
        for held, carried in sorted(there.items()):
            by_key[carried].append(held)
        found: dict[int, int] = {}
        for uid in uids:
            key = self.keys.get(uid)
            if key is not None and by_key.get(key):
                found[uid] = by_key[key].pop(0)
        return found

    def _account(self, copied: CopyUid | None, also: dict[int, int]) -> CopyUid | None:
        """The chunk's new UIDs (the server's COPYUID and those found), noted as claimed."""
        new_uids = {**also, **(copied.new_uids if copied is not None else {})}
        self.claimed.update(new_uids.values())
        if new_uids:
            self.to_next = max(self.to_next, max(new_uids.values()) + 1)
        if copied is None and not also:
            return None
        return CopyUid(copied.uidvalidity if copied is not None else self.to_uidvalidity, new_uids)

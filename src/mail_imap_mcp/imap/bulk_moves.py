"""A run on a whole search that moves its set (a move or delete by search, and the undo of one), chunk by
chunk, such that no message is lost or copied twice (:class:`Moving`, the
:class:`~mail_imap_mcp.imap.bulk_sets.SessionWork` of ``imap/bulk_runs.py``'s ``moving``).

A message and its copy share a :class:`MessageKey` (Message-ID, size and arrival time). Before the first
chunk the set's sizes and times are read (the server's index, no message opened), :data:`READ_PIECE` UIDs a
call with the destination's state, so a slow link costs them a few round trips, not one per 500 UIDs. Where the server has
no MOVE (Courier: COPY, then STORE ``\\Deleted`` and UID EXPUNGE), a message the destination already
holds (a copy a run cut before its EXPUNGE left there) is not copied again: its original is only
removed; only messages of a size and time found on both sides are opened to compare their Message-ID.
A chunk whose answer was lost is settled on a fresh connection: what is still in the source and already
in the destination is removed from the source; what is still there and not in the destination is moved
now; what left the source moved (its new UID found by its key, or by its size and time where those name
one message).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any, TypeVar

from mail_imap_mcp import mime
from mail_imap_mcp.imap.bulk_sets import search_uids
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.fetch import expunged, find_item
from mail_imap_mcp.imap.search.position import imap_date
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.imap.uidplus import CopyUid
from mail_imap_mcp.mail.bulk import CHUNK, SearchSet

T = TypeVar("T")

_SHAPE_ITEMS = ["RFC822.SIZE", "INTERNALDATE"]
_KEY_ITEMS = [*_SHAPE_ITEMS, "BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"]

#: UIDs whose sizes and dates (or keys) one call reads before a run: its FETCHes of :data:`CHUNK` UIDs are
#: sent at once, so the link's round trip is paid once per call, not once per FETCH.
READ_PIECE = 5000

#: A set of at most this many messages has its Message-IDs read before the first chunk too (one FETCH):
#: a message a lost chunk moved is then found by its whole key even where others share its size and date.
KEYED_UP_TO = 500

#: A message's size and INTERNALDATE: read without opening it (the server's index, Courier's file name).
Shape = tuple[int, datetime]


@dataclass(frozen=True)
class MessageKey:
    """What a message and its copy share: its Message-ID, its size and its INTERNALDATE."""

    message_id: str
    size: int
    arrived: datetime

    @property
    def shape(self) -> Shape:
        return self.size, self.arrived


def shapes_of(session: ImapSession, uids: Sequence[int]) -> dict[int, Shape]:
    """The size and INTERNALDATE of those of ``uids`` in the selected mailbox (:data:`CHUNK` a FETCH, all
    sent at once)."""
    shapes: dict[int, Shape] = {}
    for uid, response in session.fetch_ranges(uids, _SHAPE_ITEMS, CHUNK).items():
        shape = _shape(response)
        if shape is not None:
            shapes[uid] = shape
    return shapes


def message_keys(
    session: ImapSession, uids: Sequence[int], among: set[Shape] | None = None
) -> dict[int, MessageKey]:
    """The keys of those of ``uids`` in the selected mailbox that have a Message-ID; with ``among``, only
    of those whose size and date are one of these (read first, so that only they are opened)."""
    if among is not None:
        uids = [uid for uid, shape in shapes_of(session, uids).items() if shape in among]
    keys: dict[int, MessageKey] = {}
    for uid, response in session.fetch_ranges(uids, _KEY_ITEMS, CHUNK).items():
        header, shape = find_item(response, b"BODY[HEADER.FIELDS"), _shape(response)
        found = mime.parse_header_block(header or b"").get("message-id") or [""]
        message_id = " ".join(found[0].split())
        if message_id and shape is not None and not expunged(response):
            keys[uid] = MessageKey(message_id, *shape)
    return keys


def _shape(response: dict[bytes, Any]) -> Shape | None:
    arrived, size = response.get(b"INTERNALDATE"), response.get(b"RFC822.SIZE")
    return (size, arrived) if isinstance(arrived, datetime) and isinstance(size, int) else None


def matching(mine: dict[int, MessageKey], there: dict[int, MessageKey]) -> dict[int, int]:
    """Each message of ``mine`` whose key a message ``there`` carries, and that message's UID (each
    message there given to one of mine at most)."""
    by_key: dict[MessageKey, list[int]] = defaultdict(list)
    for held, carried in sorted(there.items()):
        by_key[carried].append(held)
    return {uid: by_key[key].pop(0) for uid, key in sorted(mine.items()) if by_key.get(key)}


def by_shape(gone: dict[int, Shape], arrived: dict[int, MessageKey]) -> dict[int, int]:
    """Each message ``gone`` (by its size and time) whose size and time exactly one of ``arrived`` has, and
    no other of ``gone``: that arrival's UID."""
    ours = Counter(gone.values())
    theirs: dict[Shape, list[int]] = defaultdict(list)
    for uid, key in sorted(arrived.items()):
        theirs[key.shape].append(uid)
    return {
        uid: theirs[shape][0] for uid, shape in gone.items() if ours[shape] == 1 and len(theirs[shape]) == 1
    }


def _pieces(uids: list[int]) -> list[list[int]]:
    """``uids`` in pieces of :data:`READ_PIECE`, each read in one call."""
    return [uids[start : start + READ_PIECE] for start in range(0, len(uids), READ_PIECE)]


@dataclass
class Moving:
    """Moving a set from its mailbox to ``to`` (see the module)."""

    to: str
    source: SearchSet | None = None
    #: The set's messages' sizes and dates by UID, as read before the first chunk.
    shapes: dict[int, Shape] = field(default_factory=dict)
    #: The set's messages' keys by UID, read before the first chunk where the set is small.
    keys: dict[int, MessageKey] = field(default_factory=dict)
    #: Of the set, those the destination already holds, and their UID there (no MOVE only).
    present: dict[int, int] = field(default_factory=dict)
    #: The destination's UIDVALIDITY, and a UID at or below that of every message moved in after now.
    to_uidvalidity: int = 0
    to_next: int = 1
    #: Destination UIDs already accounted to a message of the set.
    claimed: set[int] = field(default_factory=set)

    def prepare(self, connection: AccountConnection, source: SearchSet, targets: list[int]) -> None:
        """Read the set's sizes and dates and the destination's state (each piece its own call); without
        MOVE, find the messages the destination already holds (only those of a size and date of the set
        are opened)."""
        self.source = source
        pieces = _pieces(targets) or [[]]
        held: list[int] = []
        for piece in pieces:
            last = piece is pieces[-1]
            held = connection.run(partial(self._shapes_then_destination, uids=piece, last=last))
        there: dict[int, MessageKey] = {}
        for piece in _pieces(held):
            there.update(connection.run(partial(self._in_destination, uids=piece)))
        shown = {key.shape for key in there.values()}
        candidates = [uid for uid in targets if self.shapes.get(uid) in shown]
        mine: dict[int, MessageKey] = {}
        for piece in _pieces(candidates):
            mine.update(connection.run(partial(self._in_source, uids=piece, read=message_keys)))
        self.present = matching(mine, there)

    def _shapes_then_destination(self, session: ImapSession, uids: list[int], *, last: bool) -> list[int]:
        """The shapes of ``uids`` noted; after the last piece, the destination looked at (its UIDs to
        compare, without MOVE), in the same call: each costs the link a round trip."""
        if len(uids) <= KEYED_UP_TO:  # a small set (a move by ids): its Message-IDs too, same round trip
            self.keys.update(self._in_source(session, uids, message_keys))
            self.shapes.update({uid: key.shape for uid, key in self.keys.items()})
        self.shapes.update(
            self._in_source(session, [uid for uid in uids if uid not in self.shapes], shapes_of)
        )
        if not last:
            return []
        earliest = min((arrived for _, arrived in self.shapes.values()), default=None)
        return self._destination(session, earliest)

    def _in_source(
        self, session: ImapSession, uids: list[int], read: Callable[[ImapSession, list[int]], dict[int, T]]
    ) -> dict[int, T]:
        assert self.source is not None
        # EXAMINE sent with the read, one round trip: its answer is discarded where UIDVALIDITY changed.
        session.examine_ahead(self.source.mailbox, uidvalidity=self.source.uidvalidity)
        return read(session, uids)

    def _destination(self, session: ImapSession, earliest: datetime | None) -> list[int]:
        state = session.examine(self.to)
        # Courier's EXAMINE may leave out UIDNEXT (0 here): from 1, every unclaimed message there is looked at.
        self.to_uidvalidity, self.to_next = state.uidvalidity, max(state.uidnext, 1)
        if session.profile.moves or earliest is None:
            return []  # a MOVE leaves no message in both mailboxes: nothing held twice to find
        # A day early: SEARCH compares dates in the server's zone, INTERNALDATE carries its own.
        return session.uid_search([b"SINCE", imap_date((earliest - timedelta(days=1)).date())])

    def _in_destination(self, session: ImapSession, uids: list[int]) -> dict[int, MessageKey]:
        if session.examine(self.to).uidvalidity != self.to_uidvalidity:
            return {}
        return message_keys(session, uids, set(self.shapes.values()))

    def send(self, session: ImapSession, uids: list[int]) -> CopyUid | None:
        """Move ``uids`` (the source selected): those the destination holds are only removed."""
        present = [uid for uid in uids if uid in self.present]
        rest = [uid for uid in uids if uid not in self.present]
        copied = session.uid_move(rest, self.to) if rest else None
        if present:
            session.uid_expunge(present)
        return self._account(copied, {uid: self.present[uid] for uid in present})

    def settle(self, session: ImapSession, uids: list[int]) -> CopyUid | None:
        """Find out where the messages of a chunk whose answer was lost are, and finish moving them: one
        still in the source is matched by its whole key (read now), one gone by its key read before (a
        small set), else by its size and date where only one message of the destination's new ones has them."""
        assert self.source is not None
        session.select(self.source.mailbox, uidvalidity=self.source.uidvalidity)
        still = set(search_uids(session, uids))
        found = {uid: self.present[uid] for uid in uids if uid in self.present}
        mine = message_keys(session, [uid for uid in uids if uid in still and uid not in found])
        if session.examine(self.to).uidvalidity == self.to_uidvalidity:
            arrived = self._arrivals(session)
            found.update(matching(mine, arrived))
            gone = [uid for uid in uids if uid not in still and uid not in found]
            left = {uid: key for uid, key in arrived.items() if uid not in found.values()}
            found.update(matching({uid: self.keys[uid] for uid in gone if uid in self.keys}, left))
            gone = [uid for uid in gone if uid not in found]
            left = {uid: key for uid, key in left.items() if uid not in found.values()}
            found.update(by_shape({uid: self.shapes[uid] for uid in gone if uid in self.shapes}, left))
        session.select(self.source.mailbox, uidvalidity=self.source.uidvalidity)
        held = [] if session.profile.moves else [uid for uid in uids if uid in still and uid in found]
        unmoved = [uid for uid in uids if uid in still and uid not in held]
        if held:  # marked \Deleted already where the lost chunk's STORE was done: not stored again
            flags = session.fetch_flags(held)
            marked = {uid for uid, state in flags.items() if "\\deleted" in map(str.lower, state.flags)}
            session.uid_expunge(held, marked)
        copied = session.uid_move(unmoved, self.to) if unmoved else None
        return self._account(copied, {uid: new for uid, new in found.items() if uid not in unmoved})

    def _arrivals(self, session: ImapSession) -> dict[int, MessageKey]:
        """The keys of the destination's messages since :attr:`to_next` not yet accounted for."""
        arrived = [
            uid
            for uid in session.uid_search([b"UID", f"{self.to_next}:*".encode("ascii")])
            if uid >= self.to_next and uid not in self.claimed
        ]
        return message_keys(session, arrived)

    def _account(self, copied: CopyUid | None, also: dict[int, int]) -> CopyUid | None:
        """The chunk's new UIDs (the server's COPYUID and those found), noted as claimed."""
        new_uids = {**also, **(copied.new_uids if copied is not None else {})}
        self.claimed.update(new_uids.values())
        if new_uids:
            self.to_next = max(self.to_next, max(new_uids.values()) + 1)
        if copied is None and not also:
            return None
        return CopyUid(copied.uidvalidity if copied is not None else self.to_uidvalidity, new_uids)

"""The cursor of every search page, in one place: opaque, sealed (:mod:`~mail_imap_mcp.mail.sealing`),
self-contained, so a fresh server process with the same key follows it; every number decoded is
range-checked before it reaches UID arithmetic.

:class:`StreamCursor`: a page of one mailbox (one named alone, or Gmail's All Mail for every folder):
the search's account, a digest of what it searches, its order, the total and the messages returned so
far, and where in the mailbox (its stream) the next page continues; packed binary, as it travels in every
page an agent reads. The one-mailbox cursor of earlier versions (:class:`CursorState`, packed or JSON)
still decodes into it. A stream cursor of several mailboxes (a row each, merged page by page), made
before every search of several mailboxes was read by one position, is refused: search again.

:class:`PositionCursor`: a page of several mailboxes in arrival order on a server that sorts: one
position in the order of every message searched (:mod:`.position`) and a digest of the mailboxes, the
same size whatever their number.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from mail_imap_mcp.mail import sealing
from mail_imap_mcp.mail.ids import MAX_UINT32

SortOrder = Literal["arrival", "date"]
#: UIDs of the last messages a page took from a mailbox, kept in the cursor to continue after them.
ANCHORS = 3

CURSOR_VERSION = 1


class CursorError(ValueError):
    """The cursor is garbled, from another version, or does not fit the request."""


class ForeignCursor(CursorError):
    """The cursor is this server's, sealed for another user (:func:`~mail_imap_mcp.mail.sealing.sealed_for_another`)."""


class CursorMismatch(CursorError):
    """The cursor is sound but belongs to another search: another account, mailbox, filters or order."""


#: First byte of a packed cursor's body (a JSON body starts with ``[`` or ``{``): the one-mailbox
#: cursor of earlier versions, and the stream cursor.
PACKED_TAG = 1
STREAMS_TAG = 2
POSITION_TAG = 3
INDEX_TAG = 4
#: A cursor keeps this many hex digits of its search's digest (6 bytes: the seal, not the digest, is what
#: stops a forged cursor; the digest only tells one search from another).
DIGEST_CHARS = 12
#: The bytes of an index engine's own place in an index cursor at most (:data:`mail_imap_mcp.index.store.RESUME_BYTES`).
RESUME_BYTES = 64
_HEX_DIGEST = re.compile(rf"[0-9a-f]{{{DIGEST_CHARS}}}")


def _varints(values: list[int]) -> bytes:
    out = bytearray()
    for value in values:
        while value >= 0x80:
            out.append(value & 0x7F | 0x80)
            value >>= 7
        out.append(value)
    return bytes(out)


class _Reader:
    """Reads a packed cursor body; any shortfall is a :class:`CursorError`."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, count: int) -> bytes:
        if self.pos + count > len(self.data):
            raise CursorError("cursor is garbled or truncated")
        chunk = self.data[self.pos : self.pos + count]
        self.pos += count
        return chunk

    def varint(self) -> int:
        value = shift = 0
        while True:
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7
            if shift > 35:
                raise CursorError("cursor is garbled")

    def text(self) -> str:
        try:
            return self.take(self.varint()).decode()
        except UnicodeDecodeError:
            raise CursorError("cursor is garbled") from None


_PACKED_TAGS = tuple(bytes([tag]) for tag in (PACKED_TAG, STREAMS_TAG, POSITION_TAG, INDEX_TAG))


def seal_packed(body: bytes, user: str) -> str:
    """An opaque cursor from a binary body behind its seal (6 bytes, a team user's with their mark:
    :func:`~mail_imap_mcp.mail.sealing.seal_size`), URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(sealing.mac(body, 6, user) + body).decode().rstrip("=")


def unseal_packed(token: str, user: str) -> bytes | None:
    """The body of a cursor made by :func:`seal_packed`, None when ``token`` is not one (e.g. JSON)."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):
        return None
    size = sealing.seal_size(6, user)
    check, body = raw[:size], raw[size:]
    if body[:1] not in _PACKED_TAGS:
        return None
    if not sealing.matches(body, check, user):
        if sealing.sealed_for_another(check, user):
            raise ForeignCursor("no such cursor")
        return None
    return body


def unseal(token: str, user: str) -> bytes:
    """The JSON body of a cursor made by :func:`seal`; :class:`CursorError` when garbled."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):
        raise CursorError("cursor is not valid base64") from None
    size = sealing.seal_size(6, user)
    check, body = raw[:size], raw[size:]
    if len(raw) >= size + 2 and sealing.sealed_for_another(check, user):
        raise ForeignCursor("no such cursor")
    if len(raw) < size + 2 or not sealing.matches(body, check, user):
        raise CursorError(
            "cursor is garbled, truncated or edited, or was made by a server with another key (after a "
            "restart without its state_dir)"
        )
    return body


@dataclass
class CursorState:
    """The cursor of a one-mailbox, arrival-order search of earlier versions (packed, or JSON with or
    without field names): decoded into a :class:`StreamCursor` of that one mailbox."""

    account_id: str
    mailbox: str
    uidvalidity: int
    filter_digest: str
    upper_uid: int
    anchor_uid: int
    total: int
    returned: int
    v: int = field(default=CURSOR_VERSION)

    def stream_cursor(self) -> StreamCursor:
        """The same position as a stream cursor: its digest is of the filters alone, as a one-mailbox
        search in arrival order binds its cursors."""
        stream = StreamState(self.mailbox, self.uidvalidity, self.upper_uid, [self.anchor_uid])
        return StreamCursor(
            self.account_id, self.filter_digest[:DIGEST_CHARS], "arrival", self.total, self.returned, stream
        )

    @classmethod
    def decode(cls, token: str, user: str) -> CursorState:
        packed = unseal_packed(token, user)
        if packed is not None and packed[:1] != bytes([PACKED_TAG]):
            raise CursorError("cursor comes from another kind of search")
        if packed is not None:
            state = cls._unpack(packed)
        else:
            body = unseal(token, user)  # a CursorError of its own: garbled, or sealed with another key
            try:
                fields: list[Any] | dict[str, Any] = json.loads(body)
                state = cls(**fields) if isinstance(fields, dict) else cls(*fields)
            except (ValueError, TypeError):
                raise CursorError("cursor has an unknown format") from None
        if state.v != CURSOR_VERSION:
            raise CursorError("cursor comes from another version of this server")
        if not state._well_typed():
            # The checksum only detects accidents; a hand-made cursor must not reach the UID arithmetic.
            raise CursorError("cursor is garbled")
        return state

    @classmethod
    def _unpack(cls, body: bytes) -> CursorState:
        reader = _Reader(body[1:])
        account_id, mailbox = reader.text(), reader.text()
        digest = reader.take(8).hex()
        numbers = [reader.varint() for _ in range(5)]
        if reader.pos != len(reader.data):
            raise CursorError("cursor is garbled")
        return cls(account_id, mailbox, numbers[0], digest, *numbers[1:])

    def _well_typed(self) -> bool:
        texts = (self.account_id, self.mailbox, self.filter_digest)
        numbers = (self.uidvalidity, self.upper_uid, self.anchor_uid, self.total, self.returned)
        return all(isinstance(t, str) for t in texts) and all(
            isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= MAX_UINT32 for n in numbers
        )


STREAM_CURSOR_VERSION = 2


@dataclass
class StreamState:
    """Where one mailbox's stream stands between pages (serialised as a list in the cursor)."""

    mailbox: str
    uidvalidity: int = 0
    #: Highest UID of the snapshot; 0 before the first page.
    upper: int = 0
    #: The last UIDs taken from this mailbox, oldest taken first.
    after: list[int] = field(default_factory=list)
    #: Sort key (epoch seconds) of the last message taken; re-locates the stream when its anchors are gone.
    key: int | None = None
    #: Without SORT, date order: the UID range of the window being read (0, 0 before the first).
    window_lo: int = 0
    window_hi: int = 0


def _uint(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_UINT32


_SORTS: tuple[SortOrder, ...] = ("arrival", "date")
#: Bits of a packed stream's flags byte: which optional values follow (2 was a merge key of several).
_KEY, _WINDOW = 1, 4


def _zigzag(value: int) -> int:
    """A signed key (epoch seconds: a Date header may be before 1970) as an unsigned varint value."""
    return value * 2 if value >= 0 else -value * 2 - 1


def _unzigzag(value: int) -> int:
    return value // 2 if value % 2 == 0 else -(value + 1) // 2


@dataclass
class StreamCursor:
    """The cursor of a page of one mailbox (see the module's docstring): checksummed, stateless."""

    account_id: str
    #: A digest of what the search searches: its filters (one mailbox in arrival order), or its filters,
    #: mailboxes and order (any other search); a cursor fits only the search that made it.
    filter_digest: str
    sort: SortOrder
    total: int
    returned: int
    stream: StreamState

    def encode(self, user: str) -> str:
        # Packed binary (varints): JSON spent about twice the bytes, in every page an agent reads. The
        # order shares a varint with the number of streams (one; earlier versions wrote several), and the
        # stream's flags with its anchors'.
        if not _HEX_DIGEST.fullmatch(self.filter_digest):
            raise ValueError(f"a cursor's digest is {DIGEST_CHARS} hex digits")
        stream = self.stream
        body = bytearray([STREAMS_TAG])
        body += _text(self.account_id) + bytes.fromhex(self.filter_digest)
        body += _varints([2 + _SORTS.index(self.sort), self.total, self.returned])
        flags = (stream.key is not None) * _KEY | bool(stream.window_lo or stream.window_hi) * _WINDOW
        body += _text(stream.mailbox)
        body += _varints([stream.uidvalidity, stream.upper, len(stream.after) << 3 | flags, *stream.after])
        optional = [_zigzag(stream.key)] if stream.key is not None else []
        optional += [stream.window_lo, stream.window_hi] if flags & _WINDOW else []
        body += _varints(optional)
        return seal_packed(bytes(body), user)

    @classmethod
    def decode(cls, token: str, user: str) -> StreamCursor:
        """The cursor ``token`` stands for (this version's, or an earlier one-mailbox cursor), sealed
        for ``user``."""
        packed = unseal_packed(token, user)
        if packed is not None and packed[:1] == bytes([STREAMS_TAG]):
            cursor = cls._unpack(packed)
        elif packed is not None and packed[:1] == bytes([POSITION_TAG]):
            raise CursorError("cursor comes from another kind of search")
        else:  # packed or JSON: the one-mailbox cursor of earlier versions, else garbled
            return CursorState.decode(token, user).stream_cursor()
        if not all(_uint(n) for n in (cursor.total, cursor.returned)):
            raise CursorError("cursor is garbled")
        return cursor

    @classmethod
    def _unpack(cls, body: bytes) -> StreamCursor:
        reader = _Reader(body[1:])
        account_id = reader.text()
        digest = reader.take(DIGEST_CHARS // 2).hex()
        counted, total, returned = (reader.varint() for _ in range(3))
        count, sort = divmod(counted, 2)
        if count > 1:
            raise CursorError(
                "cursor comes from an earlier version of this server (a row per mailbox), which no longer "
                "continues"
            )
        if count != 1:
            raise CursorError("cursor is garbled")
        mailbox = reader.text()
        uidvalidity, upper, packed = reader.varint(), reader.varint(), reader.varint()
        anchors, flags = packed >> 3, packed & 7
        if anchors > ANCHORS or flags & ~(_KEY | _WINDOW):
            raise CursorError("cursor is garbled")
        after = [reader.varint() for _ in range(anchors)]
        key = _unzigzag(reader.varint()) if flags & _KEY else None
        lo, hi = (reader.varint(), reader.varint()) if flags & _WINDOW else (0, 0)
        stream = StreamState(mailbox, uidvalidity, upper, after, key, lo, hi)
        if not all(_uint(n) for n in (uidvalidity, upper, lo, hi, *after)):
            raise CursorError("cursor is garbled")
        if reader.pos != len(reader.data):
            raise CursorError("cursor is garbled")
        return cls(account_id, digest, _SORTS[sort], total, returned, stream)


def _text(value: str) -> bytes:
    encoded = value.encode()
    return _varints([len(encoded)]) + encoded


class MailboxesChanged(Exception):
    """The mailboxes a cursor's search covers are no longer those it started with: one was created,
    deleted, renamed or recreated (a new UIDVALIDITY) since the first page."""

    for_caller = True


@dataclass
class PositionCursor:
    """The cursor of a page of several mailboxes in arrival order, read by :mod:`.position`: the last
    message taken (its INTERNALDATE, its mailbox's place in the list, its UID), a digest of the mailboxes
    (their names and UIDVALIDITYs, in order) and which of them the search left (empty when it started,
    or failed): a few dozen bytes, whatever the number of mailboxes."""

    account_id: str
    #: The search's filters, mailboxes and order (as :attr:`StreamCursor.filter_digest`).
    filter_digest: str
    mailboxes_digest: str
    #: Mailboxes in the search's list, and the places of those not read (a bit each).
    count: int
    skipped: int
    total: int
    returned: int
    key: int
    index: int
    uid: int
    #: Messages read with the last one's key, at or before it (listed): more of them on the next page
    #: were filed meanwhile where the order had passed (:func:`~.position.tied_before`).
    tied: int = 0

    def encode(self, user: str) -> str:
        if not (_HEX_DIGEST.fullmatch(self.filter_digest) and _HEX_DIGEST.fullmatch(self.mailboxes_digest)):
            raise ValueError(f"a cursor's digests are {DIGEST_CHARS} hex digits")
        body = bytearray([POSITION_TAG]) + _text(self.account_id)
        body += bytes.fromhex(self.filter_digest) + bytes.fromhex(self.mailboxes_digest)
        skipped = self.skipped.to_bytes((self.skipped.bit_length() + 7) // 8, "little")
        body += _varints([self.count, len(skipped)]) + skipped
        body += _varints([self.total, self.returned, _zigzag(self.key), self.index, self.uid, self.tied])
        return seal_packed(bytes(body), user)

    @classmethod
    def decode(cls, token: str, user: str) -> PositionCursor:
        packed = unseal_packed(token, user)
        if packed is None or packed[:1] != bytes([POSITION_TAG]):
            raise CursorError("cursor comes from another kind of search")
        reader = _Reader(packed[1:])
        account_id = reader.text()
        digests = reader.take(DIGEST_CHARS // 2).hex(), reader.take(DIGEST_CHARS // 2).hex()
        count = reader.varint()
        skipped = int.from_bytes(reader.take(reader.varint()), "little")
        total, returned = reader.varint(), reader.varint()
        key, index, uid = _unzigzag(reader.varint()), reader.varint(), reader.varint()
        tied = reader.varint() if reader.pos < len(reader.data) else 0  # none in an earlier version's
        if reader.pos != len(reader.data):
            raise CursorError("cursor is garbled")
        if not 1 <= count <= 1000 or skipped >> count or index >= count:
            raise CursorError("cursor is garbled")
        if not all(_uint(n) for n in (total, returned, uid, tied)) or not 0 <= key + 2**40 <= 2**41:
            raise CursorError("cursor is garbled")
        return cls(account_id, *digests, count, skipped, total, returned, key, index, uid, tied)


@dataclass(frozen=True)
class IndexCursor:
    """Where a ranked page of the local index continues: the search (account, digest of its filters,
    mailboxes and order), how many matched when it started, how many pages returned (its offset), and a
    mark of the index's contents then (0: not known, a cursor of an earlier build), and the key of the
    places its first page kept (0: none), or where an index engine that pages by key goes on (its own
    bytes, at most :data:`RESUME_BYTES`; empty: none)."""

    account_id: str
    digest: str
    total: int
    returned: int
    mark: int = 0
    places: int = 0
    resume: bytes = b""

    def encode(self, user: str) -> str:
        if not _HEX_DIGEST.fullmatch(self.digest):
            raise ValueError(f"a cursor's digest is {DIGEST_CHARS} hex digits")
        if len(self.resume) > RESUME_BYTES:
            raise ValueError(f"an index cursor's resume is {RESUME_BYTES} bytes at most")
        body = bytearray([INDEX_TAG]) + _text(self.account_id) + bytes.fromhex(self.digest)
        body += _varints([self.total, self.returned, self.mark, self.places])
        if self.resume:
            body += _varints([len(self.resume)]) + self.resume
        return seal_packed(bytes(body), user)

    @classmethod
    def decode(cls, token: str, user: str) -> IndexCursor | None:
        """The cursor, None when ``token`` is a cursor of another kind (or none of this server)."""
        packed = unseal_packed(token, user)
        if packed is None or packed[:1] != bytes([INDEX_TAG]):
            return None
        reader = _Reader(packed[1:])
        account_id = reader.text()
        digest = reader.take(DIGEST_CHARS // 2).hex()
        total, returned = reader.varint(), reader.varint()
        mark = reader.varint() if reader.pos < len(reader.data) else 0
        places = reader.varint() if reader.pos < len(reader.data) else 0
        resume = b""
        if reader.pos < len(reader.data):
            size = reader.varint()
            if not 0 < size <= RESUME_BYTES:
                raise CursorError("cursor is garbled")
            resume = reader.take(size)
        if reader.pos != len(reader.data) or not all(map(_uint, (total, returned, mark, places))):
            raise CursorError("cursor is garbled")
        return cls(account_id, digest, total, returned, mark, places, resume)


def decode_search_cursor(token: str, user: str) -> StreamCursor | PositionCursor:
    """Any search page's cursor, of whichever kind and version of this server, sealed for ``user``."""
    packed = unseal_packed(token, user)
    if packed is not None and packed[:1] == bytes([POSITION_TAG]):
        return PositionCursor.decode(token, user)
    return StreamCursor.decode(token, user)

"""Search with stateless cursors over UID windows: bounded work per page, no cap on matches.

Results are newest first (UID descending, i.e. arrival order). A page searches downward from
its anchor in UID windows that grow until it has ``limit + 1`` matches, so a page of a
100,000-message mailbox costs about what a page of a small one does. The cursor is an opaque,
checksummed token carrying everything the next page needs (mailbox, UIDVALIDITY, a digest of
the filters, the snapshot's upper UID and the anchor), so it survives a server restart.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import astuple, dataclass, field
from typing import Any

from mail_imap_mcp.imap import sealing
from mail_imap_mcp.imap.errors import UidValidityChanged
from mail_imap_mcp.imap.ids import MAX_UINT32
from mail_imap_mcp.imap.search.plan import UidWindows, first_window
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.imap.view import MailboxState
from mail_imap_mcp.query import Query, needs_utf8, search_keys

CURSOR_VERSION = 1


class CursorError(ValueError):
    """The cursor is garbled, from another version, or does not fit the request."""


def seal(payload: Any) -> str:
    """An opaque cursor: compact JSON behind its seal (:mod:`~mail_imap_mcp.imap.sealing`), URL-safe base64."""
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(sealing.mac(body, 6) + body).decode().rstrip("=")


#: First byte of a packed cursor's body (a JSON body starts with ``[`` or ``{``).
PACKED_TAG = 1
_HEX_DIGEST = re.compile(r"[0-9a-f]{16}")


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


def seal_packed(body: bytes) -> str:
    """An opaque cursor from a binary body behind a 6-byte seal, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(sealing.mac(body, 6) + body).decode().rstrip("=")


def unseal_packed(token: str) -> bytes | None:
    """The body of a cursor made by :func:`seal_packed`, None when ``token`` is not one (e.g. JSON)."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):
        return None
    body = raw[6:]
    if body[:1] != bytes([PACKED_TAG]) or not sealing.matches(body, raw[:6]):
        return None
    return body


def unseal(token: str) -> bytes:
    """The JSON body of a cursor made by :func:`seal`; :class:`CursorError` when garbled."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):
        raise CursorError("cursor is not valid base64") from None
    check, body = raw[:6], raw[6:]
    if len(raw) < 8 or not sealing.matches(body, check):
        raise CursorError(
            "cursor is garbled, truncated or edited, or was made by a server with another key (after a "
            "restart without its state_dir)"
        )
    return body


@dataclass
class CursorState:
    """Everything the next page needs; serialised into the opaque cursor string."""

    account_id: str
    mailbox: str
    uidvalidity: int
    filter_digest: str
    upper_uid: int
    anchor_uid: int
    total: int
    returned: int
    v: int = field(default=CURSOR_VERSION)

    def encode(self) -> str:
        # Packed binary: the cursor travels in every page an agent reads, and JSON spent twice the
        # bytes. (JSON cursors, with or without field names, as earlier versions wrote them, still decode.)
        if self.v != CURSOR_VERSION or not _HEX_DIGEST.fullmatch(self.filter_digest):
            return seal(list(astuple(self)))
        names = b"".join(_varints([len(t)]) + t for t in (self.account_id.encode(), self.mailbox.encode()))
        numbers = _varints([self.uidvalidity, self.upper_uid, self.anchor_uid, self.total, self.returned])
        return seal_packed(bytes([PACKED_TAG]) + names + bytes.fromhex(self.filter_digest) + numbers)

    @classmethod
    def decode(cls, token: str) -> CursorState:
        packed = unseal_packed(token)
        if packed is not None:
            state = cls._unpack(packed)
        else:
            try:
                fields: list[Any] | dict[str, Any] = json.loads(unseal(token))
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


@dataclass
class SearchPage:
    """One page of UIDs, newest first, plus what is needed to describe and continue it."""

    mailbox: MailboxState
    uids: list[int]
    total: int
    has_more: bool
    next_cursor: CursorState | None


def search_page(
    session: ImapSession,
    *,
    account_id: str,
    mailbox: str,
    search: Query,
    limit: int,
    cursor: CursorState | None,
    filter_digest: str,
) -> SearchPage:
    """Return the next ``limit`` matching UIDs, newest first, continuing from ``cursor``."""
    state = session.examine(mailbox)
    if cursor is not None and cursor.uidvalidity != state.uidvalidity:
        raise UidValidityChanged(cursor.uidvalidity, state.uidvalidity)
    charset = "UTF-8" if needs_utf8(search) else None
    criteria = search_keys(search)

    total = cursor.total if cursor else None
    counted: list[tuple[int, int]] | None = None
    # A first window that reaches UID 1 finds every match: their number is the total, no COUNT needed.
    whole_mailbox = total is None and first_window(state, limit + 1, filtered=True) >= state.uidnext - 1
    if total is None and criteria and not whole_mailbox:
        # One scan gives the total and every match (ESEARCH's COUNT ALL, else the plain SEARCH's list).
        total, counted = session.uid_search_counted(criteria, charset=charset)
        if total == 0:
            return SearchPage(state, [], 0, False, None)

    matches, upper = newest_matches(
        session,
        state,
        criteria,
        charset=charset,
        wanted=limit + 1,
        below=None if cursor is None else cursor.anchor_uid,
        upper=cursor.upper_uid if cursor else None,
        counted=counted,
    )

    if whole_mailbox and criteria:
        total = len(matches)
    if total is None and criteria:
        total = session.uid_search_count(criteria, charset=charset)
    if total is None:
        total = session.refresh_counts(state).exists
    page = matches[:limit]
    returned = (cursor.returned if cursor else 0) + len(page)
    has_more = len(matches) > limit
    next_cursor = None
    if has_more and page:
        next_cursor = CursorState(
            account_id=account_id,
            mailbox=mailbox,
            uidvalidity=state.uidvalidity,
            filter_digest=filter_digest,
            upper_uid=upper,
            anchor_uid=page[-1],
            total=total,
            returned=returned,
        )
    return SearchPage(state, page, total, bool(next_cursor), next_cursor)


def newest_matches(
    session: ImapSession,
    state: MailboxState,
    criteria: list[bytes | str | int],
    *,
    charset: str | None,
    wanted: int,
    below: int | None,
    upper: int | None,
    counted: list[tuple[int, int]] | None = None,
) -> tuple[list[int], int]:
    """Up to about ``wanted`` matching UIDs below ``below`` (None: up to '*') and at most ``upper``,
    newest first, searched in UID windows that grow until enough are found; and the snapshot's upper UID
    (``upper``, or on a first search the highest UID seen, so later arrivals stay out of later pages).
    ``counted``: every match of the mailbox as runs (a first page's one scan): the newest are taken from
    it, as the windows would find them, and no search is sent."""
    if counted is not None:
        newest = newest_of(counted, wanted)
        return newest, max([max(state.uidnext - 1, 1), *newest[:1]])
    windows = UidWindows.start(state, wanted, filtered=bool(criteria), below=below, upper=upper)
    while not windows.done:
        found = session.uid_search([b"UID", windows.uid_set().encode(), *criteria], charset=charset)
        windows.take(found, state.uidnext)
        if not windows.done:
            windows.widen()
    return windows.matches, windows.upper or 0


def newest_of(runs: list[tuple[int, int]], wanted: int) -> list[int]:
    """The ``wanted`` highest UIDs of ascending ``(first, last)`` runs, newest first."""
    newest: list[int] = []
    for first, last in reversed(runs):
        newest.extend(range(last, max(first, last - (wanted - len(newest)) + 1) - 1, -1))
        if len(newest) >= wanted:
            break
    return newest

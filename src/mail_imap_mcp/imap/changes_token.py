"""The changes token and the page cursor of imap_get_changes: opaque, self-contained, versioned and
sealed (:mod:`.sealing`), every number range-checked when read. What they mean and the plans that use
them: :mod:`.changes`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import itertools
import json
import zlib
from dataclasses import dataclass
from typing import Any

from mail_imap_mcp.imap.uidplus import MalformedUidSet, format_uid_set, parse_uid_set
from mail_imap_mcp.mail import sealing
from mail_imap_mcp.mail.ids import MAX_UINT32

#: Messages whose UIDs (and, without CONDSTORE, flags) a token tracks: the newest ones, as many of them
#: as keep the token within :data:`~mail_imap_mcp.imap.changes.TOKEN_CHARS`.
DIGEST_MESSAGES = 300
#: Distinct flag sets a digest can name (one character each); a message with yet another is not tracked.
PALETTE_CHARS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
TOKEN_VERSION = 2
_TOKEN_PREFIX = f"chg{TOKEN_VERSION}."
#: Tokens of version 1 (each message's flag set as one character) are still read.
_V1_TOKEN_PREFIX = "chg1."
_CURSOR_PREFIX = f"chgp{TOKEN_VERSION}."
_MAX_BODY_BYTES = 256 * 1024


class ChangesTokenError(ValueError):
    """A token (argument ``since``) or page cursor (``cursor``) that does not decode or does not fit."""

    def __init__(self, parameter: str, problem: str) -> None:
        super().__init__(problem)
        self.parameter = parameter


class ForeignChangesToken(ChangesTokenError):
    """A token or page cursor of this server, sealed for another user
    (:func:`~mail_imap_mcp.mail.sealing.sealed_for_another`)."""


Flags = tuple[str, ...]


@dataclass(frozen=True)
class ChangesToken:
    """The state a later call compares with (see the module's docstring)."""

    account_id: str
    mailbox: str
    uidvalidity: int
    uidnext: int
    #: HIGHESTMODSEQ (CONDSTORE); 0 where the server has none.
    modseq: int
    #: Messages below UIDNEXT the digest does not track.
    older: int
    #: The tracked messages' UIDs, ascending.
    uids: tuple[int, ...] = ()
    #: Their flags, in the same order, where the server has no CONDSTORE; None with CONDSTORE.
    flags: tuple[Flags, ...] | None = None

    def encode(self, user: str) -> str:
        """The token, sealed for ``user``."""
        uid_set = _uid_field(self.uids)
        palette: list[Flags] = []
        indexes = []
        for flags in self.flags or ():
            if flags not in palette:
                palette.append(flags)
            indexes.append(palette.index(flags))
        marks = _packed(indexes, len(palette))
        payload = [
            self.account_id,
            self.mailbox,
            self.uidvalidity,
            self.uidnext,
            self.modseq,
            self.older,
            uid_set,
            None if self.flags is None else [" ".join(flags) for flags in palette],
            marks,
        ]
        return _seal(_TOKEN_PREFIX, payload, user)

    @classmethod
    def decode(cls, token: str, user: str) -> ChangesToken:
        """The token ``token`` stands for, sealed for ``user``."""
        v1 = token.startswith(_V1_TOKEN_PREFIX)
        prefix = _V1_TOKEN_PREFIX if v1 else _TOKEN_PREFIX
        fields = _unseal(prefix, token, "since", "a changes token", user)
        if len(fields) != 9:
            raise ChangesTokenError("since", "it is not a changes token of this version")
        account_id, mailbox, uidvalidity, uidnext, modseq, older, uid_set, palette, marks = fields
        if not all(isinstance(text, str) for text in (account_id, mailbox, uid_set, marks)) or not all(
            _is_number(n) for n in (uidvalidity, uidnext, modseq, older)
        ):
            raise ChangesTokenError("since", "the token is garbled")
        try:
            uids = _uids_of(uid_set, packed=not v1)
        except MalformedUidSet:
            raise ChangesTokenError("since", "the token is garbled") from None
        flags: tuple[Flags, ...] | None = None
        if palette is not None:
            if not isinstance(palette, list) or not all(isinstance(p, str) for p in palette):
                raise ChangesTokenError("since", "the token is garbled")
            sets = [tuple(p.split()) for p in palette]
            if v1:
                indexes = [PALETTE_CHARS.find(mark) for mark in marks]
            else:
                indexes = _unpacked(marks, len(uids), len(sets))
            if len(indexes) != len(uids) or any(not 0 <= i < len(sets) for i in indexes):
                raise ChangesTokenError("since", "the token is garbled")
            flags = tuple(sets[i] for i in indexes)
        # Every number in range (RFC 3501 and 7162), even behind a valid seal: a server answers BAD to an
        # impossible UID, and an impossible count would become as many "expunged" messages.
        if (
            not (0 < uidvalidity <= MAX_UINT32 and 0 < uidnext <= MAX_UINT32)
            or any(not 0 < u < uidnext for u in uids)
            or older + len(uids) > uidnext - 1
        ):
            raise ChangesTokenError("since", "the token is garbled")
        return cls(account_id, mailbox, uidvalidity, uidnext, modseq, older, uids, flags)


@dataclass(frozen=True)
class PageCursor:
    """Where a page of ``new`` ended: the next page lists the new messages below ``anchor``. Carries the
    ``changes_token`` of the first page, which every page returns, and a fingerprint of ``since``."""

    since_digest: str
    anchor: int
    changes_token: str

    def encode(self, user: str) -> str:
        return _seal(_CURSOR_PREFIX, [self.since_digest, self.anchor, self.changes_token], user)

    @classmethod
    def decode(cls, text: str, user: str) -> PageCursor:
        fields = _unseal(_CURSOR_PREFIX, text, "cursor", "a cursor of imap_get_changes", user)
        if len(fields) != 3 or not isinstance(fields[0], str) or not isinstance(fields[2], str):
            raise ChangesTokenError("cursor", "the cursor is garbled")
        if not _is_number(fields[1]) or not 0 < fields[1] <= MAX_UINT32:
            raise ChangesTokenError("cursor", "the cursor is garbled")
        return cls(fields[0], fields[1], fields[2])


def _uid_field(uids: tuple[int, ...]) -> str:
    """The tracked UIDs in the shortest of three forms once compressed: an IMAP UID set (``1:40,52``:
    runs), ``+<first>:<bitmap>`` (a bit for each UID from the first on: UIDs that expunges left dense) or
    ``~<first>:<gaps>`` (each gap to the next UID in 7-bit groups: sparse ones), both in base64. As a
    UID set alone, 55 UIDs scattered among 550 filled a token with their flags (47 tracked)."""
    if not uids:
        return ""
    span = uids[-1] - uids[0] + 1
    value = 0
    for uid in uids:
        value |= 1 << (span - 1 - (uid - uids[0]))
    size = (span + 7) // 8
    bitmap = (value << (size * 8 - span)).to_bytes(size, "big")
    gaps = bytearray()
    for low, high in itertools.pairwise(uids):
        gap = high - low
        while gap >= 0x80:
            gaps.append(gap & 0x7F | 0x80)
            gap >>= 7
        gaps.append(gap)
    forms = [
        format_uid_set(uids),
        f"+{uids[0]}:" + base64.b64encode(bitmap).decode(),
        f"~{uids[0]}:" + base64.b64encode(bytes(gaps)).decode(),
    ]
    return min(forms, key=lambda form: len(zlib.compress(form.encode(), 9)))


def _uids_of(field: str, *, packed: bool) -> tuple[int, ...]:
    """The UIDs :func:`_uid_field` wrote (:class:`MalformedUidSet` where garbled)."""
    if not field:
        return ()
    if not (packed and field[0] in "+~"):
        return tuple(parse_uid_set(field))
    first, _, encoded = field[1:].partition(":")
    try:
        raw = base64.b64decode(encoded, validate=True)
        uids = [int(first)]
    except (binascii.Error, ValueError):
        raise MalformedUidSet(field) from None
    if field[0] == "+":
        value, bits = int.from_bytes(raw, "big"), len(raw) * 8
        uids = [uids[0] + n for n in range(bits) if value >> (bits - 1 - n) & 1]
    else:
        gap = shift = 0
        for byte in raw:
            gap |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                uids.append(uids[-1] + gap)
                gap = shift = 0
        if shift or any(b <= a for a, b in itertools.pairwise(uids)):
            raise MalformedUidSet(field)
    if not uids or uids[0] < 1 or str(uids[0]) != first:
        raise MalformedUidSet(field)
    return tuple(uids)


def _width(sets: int) -> int:
    """Bits per message that tell ``sets`` flag sets apart (at least one)."""
    return max(1, (sets - 1).bit_length())


def _packed(indexes: list[int], sets: int) -> str:
    """Each message's flag set (its index among ``sets``) in as few bits as tell them apart, as base64:
    a bit a message where there are two sets (it was a character each: about 49 messages of varied
    flags filled a token)."""
    if not indexes:
        return ""
    width = _width(sets)
    value = 0
    for index in indexes:
        value = value << width | index
    size = (len(indexes) * width + 7) // 8
    value <<= size * 8 - len(indexes) * width
    return base64.b64encode(value.to_bytes(size, "big")).decode()


def _unpacked(marks: str, count: int, sets: int) -> list[int]:
    """The ``count`` indexes :func:`_packed` wrote; an index out of ``sets`` where the text is garbled."""
    if not count:
        return [] if not marks else [-1]
    width = _width(sets)
    try:
        raw = base64.b64decode(marks, validate=True)
    except (binascii.Error, ValueError):
        return [-1]
    if len(raw) != (count * width + 7) // 8:
        return [-1]
    value = int.from_bytes(raw, "big") >> (len(raw) * 8 - count * width)
    mask = (1 << width) - 1
    return [value >> (width * (count - 1 - n)) & mask for n in range(count)]


def since_digest(since: str) -> str:
    """The fingerprint of a ``since`` token that a page cursor is bound to."""
    return hashlib.sha256(since.encode()).hexdigest()[:16]


def _is_number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 2**63 - 1


def _seal(prefix: str, payload: list[Any], user: str) -> str:
    body = zlib.compress(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode(), 9)
    check = sealing.mac(prefix.encode() + body, 8, user)
    return prefix + base64.urlsafe_b64encode(check + body).decode().rstrip("=")


def _unseal(prefix: str, text: str, parameter: str, what: str, user: str) -> list[Any]:
    if not text.startswith(prefix):
        raise ChangesTokenError(parameter, f"it is not {what} (or comes from another version of this server)")
    encoded = text[len(prefix) :]
    try:
        raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    except (binascii.Error, ValueError):
        raise ChangesTokenError(parameter, "it is not valid base64") from None
    size = sealing.seal_size(8, user)
    check, body = raw[:size], raw[size:]
    if len(raw) > size and sealing.sealed_for_another(check, user):
        raise ForeignChangesToken(parameter, f"no such {what}")
    if len(raw) <= size or not sealing.matches(prefix.encode() + body, check, user):
        raise ChangesTokenError(
            parameter,
            "it is garbled, truncated or was edited, or was made by a server with another key (after a "
            "restart without its state_dir); start over without it",
        )
    try:
        inflater = zlib.decompressobj()
        data = inflater.decompress(body, _MAX_BODY_BYTES)
        fields = json.loads(data) if not inflater.unconsumed_tail else None
    except (zlib.error, ValueError):
        fields = None
    if not isinstance(fields, list):
        raise ChangesTokenError(parameter, "it is garbled")
    return fields


def decode_since(
    since: str | None, cursor: str | None, account_id: str, mailbox: str, user: str
) -> tuple[ChangesToken | None, PageCursor | None]:
    """The token (argument ``since``) and page cursor (``cursor``) of an imap_get_changes call, sealed
    for ``user``, each checked against the call's account and mailbox, and the cursor against its token;
    :class:`ChangesTokenError` naming the argument that does not fit."""
    if since is None:
        if cursor is not None:
            raise ChangesTokenError("cursor", "it continues a page of changes; pass the same since with it")
        return None, None
    token = ChangesToken.decode(since, user)
    if (token.account_id, token.mailbox) != (account_id, mailbox):
        raise ChangesTokenError(
            "since",
            "it was made for another account or mailbox; pass the token of this account_id and mailbox",
        )
    page = PageCursor.decode(cursor, user) if cursor is not None else None
    if page is not None:
        try:
            inner = ChangesToken.decode(page.changes_token, user)
        except ChangesTokenError as exc:
            raise type(exc)("cursor", str(exc)) from None
        if page.since_digest != since_digest(since) or (inner.account_id, inner.mailbox) != (
            account_id,
            mailbox,
        ):
            raise ChangesTokenError(
                "cursor", "it belongs to another since token; pass the since of the first page"
            )
    return token, page

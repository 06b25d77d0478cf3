"""The changes token and the page cursor of imap_get_changes: opaque, self-contained, versioned and
sealed (:mod:`.sealing`), every number range-checked when read. What they mean and the plans that use
them: :mod:`.changes`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import zlib
from dataclasses import dataclass
from typing import Any

from mail_imap_mcp.imap import sealing
from mail_imap_mcp.imap.ids import MAX_UINT32
from mail_imap_mcp.imap.uidplus import MalformedUidSet, format_uid_set, parse_uid_set

#: Distinct flag sets a digest can name (one character each); a message with yet another is not tracked.
PALETTE_CHARS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
TOKEN_VERSION = 1
_TOKEN_PREFIX = f"chg{TOKEN_VERSION}."
_CURSOR_PREFIX = f"chgp{TOKEN_VERSION}."
_MAX_BODY_BYTES = 256 * 1024


class ChangesTokenError(ValueError):
    """A token (argument ``since``) or page cursor (``cursor``) that does not decode or does not fit."""

    def __init__(self, parameter: str, problem: str) -> None:
        super().__init__(problem)
        self.parameter = parameter


class ForeignChangesToken(ChangesTokenError):
    """A token or page cursor of this server, sealed for another user
    (:func:`~mail_imap_mcp.imap.sealing.sealed_for_another`)."""


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

    def encode(self) -> str:
        uid_set = format_uid_set(self.uids) if self.uids else ""
        palette: list[Flags] = []
        marks = ""
        for flags in self.flags or ():
            if flags not in palette:
                palette.append(flags)
            marks += PALETTE_CHARS[palette.index(flags)]
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
        return _seal(_TOKEN_PREFIX, payload)

    @classmethod
    def decode(cls, token: str) -> ChangesToken:
        fields = _unseal(_TOKEN_PREFIX, token, "since", "a changes token")
        if len(fields) != 9:
            raise ChangesTokenError("since", "it is not a changes token of this version")
        account_id, mailbox, uidvalidity, uidnext, modseq, older, uid_set, palette, marks = fields
        if not all(isinstance(text, str) for text in (account_id, mailbox, uid_set, marks)) or not all(
            _is_number(n) for n in (uidvalidity, uidnext, modseq, older)
        ):
            raise ChangesTokenError("since", "the token is garbled")
        try:
            uids = tuple(parse_uid_set(uid_set)) if uid_set else ()
        except MalformedUidSet:
            raise ChangesTokenError("since", "the token is garbled") from None
        flags: tuple[Flags, ...] | None = None
        if palette is not None:
            if not isinstance(palette, list) or not all(isinstance(p, str) for p in palette):
                raise ChangesTokenError("since", "the token is garbled")
            sets = [tuple(p.split()) for p in palette]
            indexes = [PALETTE_CHARS.find(mark) for mark in marks]
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

    def encode(self) -> str:
        return _seal(_CURSOR_PREFIX, [self.since_digest, self.anchor, self.changes_token])

    @classmethod
    def decode(cls, text: str) -> PageCursor:
        fields = _unseal(_CURSOR_PREFIX, text, "cursor", "a cursor of imap_get_changes")
        if len(fields) != 3 or not isinstance(fields[0], str) or not isinstance(fields[2], str):
            raise ChangesTokenError("cursor", "the cursor is garbled")
        if not _is_number(fields[1]) or not 0 < fields[1] <= MAX_UINT32:
            raise ChangesTokenError("cursor", "the cursor is garbled")
        return cls(fields[0], fields[1], fields[2])


def since_digest(since: str) -> str:
    """The fingerprint of a ``since`` token that a page cursor is bound to."""
    return hashlib.sha256(since.encode()).hexdigest()[:16]


def _is_number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 2**63 - 1


def _seal(prefix: str, payload: list[Any]) -> str:
    body = zlib.compress(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode(), 9)
    check = sealing.mac(prefix.encode() + body, 8)
    return prefix + base64.urlsafe_b64encode(check + body).decode().rstrip("=")


def _unseal(prefix: str, text: str, parameter: str, what: str) -> list[Any]:
    if not text.startswith(prefix):
        raise ChangesTokenError(parameter, f"it is not {what} (or comes from another version of this server)")
    encoded = text[len(prefix) :]
    try:
        raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    except (binascii.Error, ValueError):
        raise ChangesTokenError(parameter, "it is not valid base64") from None
    size = sealing.seal_size(8)
    check, body = raw[:size], raw[size:]
    if len(raw) > size and sealing.sealed_for_another(check):
        raise ForeignChangesToken(parameter, f"no such {what}")
    if len(raw) <= size or not sealing.matches(prefix.encode() + body, check):
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
    since: str | None, cursor: str | None, account_id: str, mailbox: str
) -> tuple[ChangesToken | None, PageCursor | None]:
    """The token (argument ``since``) and page cursor (``cursor``) of an imap_get_changes call, each
    checked against the call's account and mailbox, and the cursor against its token;
    :class:`ChangesTokenError` naming the argument that does not fit."""
    if since is None:
        if cursor is not None:
            raise ChangesTokenError("cursor", "it continues a page of changes; pass the same since with it")
        return None, None
    token = ChangesToken.decode(since)
    if (token.account_id, token.mailbox) != (account_id, mailbox):
        raise ChangesTokenError(
            "since",
            "it was made for another account or mailbox; pass the token of this account_id and mailbox",
        )
    page = PageCursor.decode(cursor) if cursor is not None else None
    if page is not None:
        try:
            inner = ChangesToken.decode(page.changes_token)
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

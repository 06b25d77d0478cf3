"""UID sets and the COPYUID response code (RFC 4315, UIDPLUS): which new UID each copied message got.

A server with UIDPLUS answers ``UID COPY`` with ``OK [COPYUID <uidvalidity> <source uids> <new uids>]``
and ``UID MOVE`` (RFC 6851) with the same code, in an untagged ``OK`` before its ``EXPUNGE``\\ s. The
two UID sets list the messages in the same order, so the n-th source UID became the n-th new UID. The
sets themselves are written and read by ``mail/uid_sets.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from mail_imap_mcp.mail.uid_sets import MalformedUidSet as MalformedUidSet
from mail_imap_mcp.mail.uid_sets import format_uid_set as format_uid_set
from mail_imap_mcp.mail.uid_sets import parse_uid_set as parse_uid_set
from mail_imap_mcp.mail.write_records import Copied

_COPYUID = re.compile(r"^\s*(?:\[COPYUID\s+)?([0-9]+) ([0-9:,]+) ([0-9:,]+)(?:\]|\s|$)", re.IGNORECASE)


@dataclass(frozen=True)
class CopyUid:
    """What a COPYUID code says: the destination's UIDVALIDITY and each source UID's new UID."""

    uidvalidity: int
    new_uids: dict[int, int]

    def merged(self, other: CopyUid) -> CopyUid:
        """Both answers of one command (a server may split a MOVE's COPYUID in parts)."""
        if other.uidvalidity != self.uidvalidity:
            raise MalformedUidSet("COPYUID parts with different UIDVALIDITY")
        return CopyUid(self.uidvalidity, {**self.new_uids, **other.new_uids})


def copied_of(code: CopyUid | None) -> Copied | None:
    """The mail domain's record of where messages landed, from a COPYUID code (none without UIDPLUS)."""
    return Copied(code.uidvalidity, dict(code.new_uids)) if code is not None else None


def parse_copyuid(data: bytes | str) -> CopyUid:
    """Parse the arguments of one COPYUID code (``b"1234 4:6,9 10:13"``; with or without the brackets
    and ``COPYUID``, and any text after the code)."""
    text = data.decode("ascii", "replace") if isinstance(data, bytes) else data
    match = _COPYUID.match(text)
    if match is None:
        raise MalformedUidSet(f"not a COPYUID code: {text[:80]!r}")
    uidvalidity = int(match.group(1))
    source, new = parse_uid_set(match.group(2)), parse_uid_set(match.group(3))
    if uidvalidity == 0 or len(source) != len(new) or len(set(source)) != len(source):
        raise MalformedUidSet(f"COPYUID sets do not match: {text[:80]!r}")
    return CopyUid(uidvalidity, dict(zip(source, new, strict=True)))


def parse_copyuids(responses: Iterable[bytes | str]) -> CopyUid | None:
    """The COPYUID answers of one command, merged; ``None`` when there were none (no UIDPLUS)."""
    result: CopyUid | None = None
    for data in responses:
        part = parse_copyuid(data)
        result = part if result is None else result.merged(part)
    return result

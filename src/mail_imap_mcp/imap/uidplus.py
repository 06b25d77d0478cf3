"""UID sets and the COPYUID response code (RFC 4315, UIDPLUS): which new UID each copied message got.

A server with UIDPLUS answers ``UID COPY`` with ``OK [COPYUID <uidvalidity> <source uids> <new uids>]``
and ``UID MOVE`` (RFC 6851) with the same code, in an untagged ``OK`` before its ``EXPUNGE``\\ s. The
two UID sets list the messages in the same order, so the n-th source UID became the n-th new UID.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_UID_SET = re.compile(r"^[0-9]+(:[0-9]+)?(,[0-9]+(:[0-9]+)?)*$")
_COPYUID = re.compile(r"^\s*(?:\[COPYUID\s+)?([0-9]+) ([0-9:,]+) ([0-9:,]+)(?:\]|\s|$)", re.IGNORECASE)
#: Most UIDs one set may name: more means a malformed or hostile answer, not a copy of ours.
MAX_SET_UIDS = 100_000


class MalformedUidSet(ValueError):
    """Text that is not a UID set of RFC 4315 (``4:6,9``)."""


def parse_uid_set(text: str) -> list[int]:
    """The UIDs of ``text`` in its order (``4:6,9`` is 4, 5, 6, 9); a range runs low to high either way
    round (RFC 4315: ``2:4`` and ``4:2`` are the same)."""
    if not _UID_SET.match(text):
        raise MalformedUidSet(f"not a UID set: {text[:80]!r}")
    uids: list[int] = []
    for part in text.split(","):
        first, _, last = part.partition(":")
        low, high = sorted((int(first), int(last or first)))
        if low == 0 or len(uids) + high - low >= MAX_SET_UIDS:
            raise MalformedUidSet(f"UID set out of range: {text[:80]!r}")
        uids.extend(range(low, high + 1))
    return uids


def format_uid_set(uids: Iterable[int]) -> str:
    """The shortest UID set for ``uids`` (sorted, runs as ranges): ``[9, 4, 5, 6]`` is ``4:6,9``."""
    parts: list[str] = []
    ordered = sorted(set(uids))
    start = previous = None
    for uid in [*ordered, None]:
        if start is not None and previous is not None and uid != previous + 1:
            parts.append(str(start) if start == previous else f"{start}:{previous}")
            start = None
        if start is None:
            start = uid
        previous = uid
    if not parts:
        raise ValueError("an empty UID set")
    return ",".join(parts)


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

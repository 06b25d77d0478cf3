"""A set of a mailbox's UIDs written short, as RFC 4315 writes it (``4:6,9``): how a run on a whole search
keeps its set and its undo in the state store, whatever the protocol (IMAP sends the same text in its
commands and its COPYUID answers: ``imap/uidplus.py``)."""

from __future__ import annotations

import re
from collections.abc import Iterable

_UID_SET = re.compile(r"^[0-9]+(:[0-9]+)?(,[0-9]+(:[0-9]+)?)*$")
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

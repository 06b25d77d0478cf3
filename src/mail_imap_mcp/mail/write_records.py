"""What a write on mail is asked and answers, whatever the protocol: how a flag change applies, and where
copied or moved messages landed (``mail/backend.py``'s writing family and ``mail/bulk.py``'s runs)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: How a flag change applies: add the flags, remove them, or make them the message's only ones.
FlagOperation = Literal["add", "remove", "replace"]


@dataclass(frozen=True)
class Copied:
    """Where copied or moved messages landed: the destination's UIDVALIDITY and each source UID's new
    UID there."""

    uidvalidity: int
    uids: dict[int, int]

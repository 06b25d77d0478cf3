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
    UID there; ``unnamed``, the source UIDs copied or moved whose new UID the server did not say (IMAP:
    no COPYUID), which are in the destination under UIDs not known."""

    uidvalidity: int
    uids: dict[int, int]
    unnamed: tuple[int, ...] = ()

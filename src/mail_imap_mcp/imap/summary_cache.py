"""Parsed search-result summaries, kept for messages already seen.

A message's content never changes under its UID while the mailbox keeps its UIDVALIDITY (RFC 9051
2.3.1.1): only its flags do. So the parsed part of a summary (headers, structure, snippet) is kept,
keyed by mailbox, UIDVALIDITY, UID and ``snippet_chars``; a page whose messages are all kept asks the
server for their flags alone, and none of them is parsed again. A new UIDVALIDITY gives new keys, so
nothing kept under the old one is used. Bounded: least recently used entries leave first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import NamedTuple

from mail_imap_mcp.imap.models import MessageSummary


class SummaryKey(NamedTuple):
    mailbox: str
    uidvalidity: int
    uid: int
    snippet_chars: int


class SummaryCache:
    """At most ``entries`` summaries (0: keep none), least recently used first out; thread-safe."""

    def __init__(self, entries: int) -> None:
        self.entries = entries
        self._kept: OrderedDict[SummaryKey, MessageSummary] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, key: SummaryKey) -> MessageSummary | None:
        """The kept summary of ``key`` (its flags empty: give it today's with :func:`with_flags`), or None."""
        with self._lock:
            kept = self._kept.get(key)
            if kept is None:
                self.misses += 1
                return None
            self._kept.move_to_end(key)
            self.hits += 1
            return kept

    def put(self, key: SummaryKey, summary: MessageSummary) -> None:
        """Keep a copy of ``summary`` (its flags are not kept: they are asked anew each time)."""
        if self.entries <= 0:
            return
        kept = with_flags(summary, [])
        with self._lock:
            self._kept[key] = kept
            self._kept.move_to_end(key)
            while len(self._kept) > self.entries:
                self._kept.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()


def with_flags(summary: MessageSummary, flags: list[str]) -> MessageSummary:
    """A copy of ``summary`` with ``flags`` (the private short recipients come along)."""
    return summary.model_copy(update={"flags": list(flags)})

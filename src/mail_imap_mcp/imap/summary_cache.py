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
from dataclasses import replace
from typing import NamedTuple

from mail_imap_mcp.mail.records import SummaryRecord


class SummaryKey(NamedTuple):
    mailbox: str
    uidvalidity: int
    uid: int
    snippet_chars: int


#: Characters of text the kept summaries of one account may hold in all: 2,000 ordinary summaries
#: (about 600 characters each with a 200-character snippet) take about 1.2 million, while hostile
#: mail with every field at its cap (2,000-character subject and addresses) could otherwise make the
#: allowed entries weigh tens of megabytes.
MAX_KEPT_CHARS = 4_000_000


class SummaryCache:
    """At most ``entries`` summaries (0: keep none) holding at most ``max_chars`` characters of text,
    least recently used first out; thread-safe."""

    def __init__(self, entries: int, *, max_chars: int = MAX_KEPT_CHARS) -> None:
        self.entries = entries
        self.max_chars = max_chars
        self._kept: OrderedDict[SummaryKey, tuple[SummaryRecord, int]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, key: SummaryKey) -> SummaryRecord | None:
        """The kept summary of ``key`` (its flags empty: give it today's with :func:`with_flags`), or None."""
        with self._lock:
            kept = self._kept.get(key)
            if kept is None:
                return None
            self._kept.move_to_end(key)
            return kept[0]

    def put(self, key: SummaryKey, summary: SummaryRecord) -> None:
        """Keep a copy of ``summary`` (its flags are not kept: they are asked anew each time)."""
        if self.entries <= 0:
            return
        weight = _chars(summary)
        if weight > self.max_chars:
            return
        kept = with_flags(summary, [])
        with self._lock:
            previous = self._kept.pop(key, None)
            if previous is not None:
                self._chars -= previous[1]
            self._kept[key] = (kept, weight)
            self._chars += weight
            while len(self._kept) > self.entries or self._chars > self.max_chars:
                _, (_, dropped) = self._kept.popitem(last=False)
                self._chars -= dropped

    @property
    def chars(self) -> int:
        """Characters of text held now."""
        return self._chars

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self._chars = 0


def _chars(summary: SummaryRecord) -> int:
    """The summary's text, in characters, with the short recipients; numbers and lists count as 64."""
    texts: list[str | None] = [
        summary.message_id,
        summary.message_uri,
        summary.message_raw_uri,
        summary.mailbox,
        summary.date,
        summary.from_,
        summary.to,
        summary.cc,
        summary.subject,
        summary.snippet,
        summary.short_recipients,
    ]
    return sum(len(text) for text in texts if text) + 64


def with_flags(summary: SummaryRecord, flags: list[str]) -> SummaryRecord:
    """A copy of ``summary`` with ``flags``."""
    return replace(summary, flags=list(flags))

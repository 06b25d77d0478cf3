"""Bytes an agent reads in search pages: per summary, per field, and the envelope around them.

Shared by ``scripts/token-report`` (which prints and documents the figures) and the test that keeps
the compact shape within its budget.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

#: Issue 12's goals for a compact search page: bytes per summary besides the snippet's text, and of
#: the envelope outside the summaries.
GOAL_SUMMARY_NON_SNIPPET = 220
GOAL_ENVELOPE = 400


def json_bytes(value: Any) -> int:
    """Bytes of ``value`` as compact JSON in UTF-8, the way the server writes its text block."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


@dataclass
class ShapeFigures:
    """Figures of one shape (compact or full) over every page of the mailbox."""

    pages: int = 0
    page_bytes: list[int] = field(default_factory=list)
    summary_bytes: list[int] = field(default_factory=list)
    snippet_text_bytes: list[int] = field(default_factory=list)
    envelope_bytes: list[int] = field(default_factory=list)
    first_page_bytes: int = 0
    first_envelope_bytes: int = 0
    #: Per key: bytes spent on it over every summary (key, value and comma; a snippet's text excluded),
    #: and in how many summaries it appears.
    field_bytes: Counter[str] = field(default_factory=Counter)
    field_count: Counter[str] = field(default_factory=Counter)

    def add_page(self, text: str, envelope: dict[str, Any]) -> None:
        messages = envelope["data"]["messages"]
        total = len(text.encode())
        summaries = [json_bytes(m) for m in messages]
        # Everything outside the summaries, the commas between them included, is envelope.
        outside = total - sum(summaries) - max(len(messages) - 1, 0)
        if not self.pages:
            self.first_page_bytes, self.first_envelope_bytes = total, outside
        self.pages += 1
        self.page_bytes.append(total)
        self.summary_bytes += summaries
        self.snippet_text_bytes += [len((m.get("snippet") or "").encode()) for m in messages]
        self.envelope_bytes.append(outside)
        for message in messages:
            for key, value in message.items():
                # {"key":value} less its braces, plus the comma that joins it to the next key.
                spent = json_bytes({key: value}) - 2 + 1
                if key == "snippet":
                    spent -= len((value or "").encode())
                self.field_bytes[key] += spent
                self.field_count[key] += 1

    @property
    def per_summary(self) -> float:
        return statistics.mean(self.summary_bytes)

    @property
    def per_summary_non_snippet(self) -> float:
        return statistics.mean(
            s - t for s, t in zip(self.summary_bytes, self.snippet_text_bytes, strict=True)
        )

    @property
    def envelope(self) -> float:
        return statistics.mean(self.envelope_bytes)

    @property
    def max_envelope(self) -> int:
        return max(self.envelope_bytes)

"""Collect cleaned text chunks up to a window and stop early (stdlib only; used in the child).

A document is read as a deterministic stream of chunks; each is cleaned
(:func:`clean_extracted_text`) and appended until ``offset + max_chars + 1`` characters
exist, so windows of the same document always come from the same text and concatenated
windows equal the whole text.
"""

from __future__ import annotations

from typing import Any

from .text import clean_extracted_text, cluster_safe_cut


def _leading_newlines(text: str) -> int:
    return len(text) - len(text.lstrip("\n"))


class TextCollector:
    """Accumulates cleaned text; :meth:`add` returns False once the window is complete."""

    def __init__(self, *, offset: int, max_chars: int, hard_cap: int) -> None:
        self.offset = max(offset, 0)
        self.max_chars = max(max_chars, 0)
        self.hard_cap = hard_cap
        self.pieces: list[str] = []
        self.length = 0
        self.trailing_newlines = 0
        self.more_text = False
        # One character past the window tells whether more text follows.
        self.wanted = min(self.offset + self.max_chars, hard_cap) + 1

    @property
    def full(self) -> bool:
        return self.more_text

    def add(self, chunk: str) -> bool:
        """Append a raw chunk (cleaned here); False when no more text is needed."""
        if self.full:
            return False
        text = clean_extracted_text(chunk)
        if not self.length:
            text = text.lstrip("\n")
        elif self.trailing_newlines:
            excess = self.trailing_newlines + _leading_newlines(text) - 2
            if excess > 0:
                text = text[excess:]
        if not text:
            return True
        before = self.length
        self.pieces.append(text)
        self.length += len(text)
        if self.length >= self.wanted:
            # Whitespace at the very end of a document is dropped; keep reading past a blank
            # overhang so that "truncated" is only reported when real text follows.
            self.more_text = bool(text[max(self.wanted - 1 - before, 0) :].strip())
        stripped = text.rstrip("\n")
        self.trailing_newlines = len(text) - len(stripped) if stripped else self.trailing_newlines + len(text)
        return not self.full

    def finish(self, *, complete: bool) -> dict[str, Any]:
        """The window as ExtractedText fields; ``complete`` = the whole document was read."""
        whole = "".join(self.pieces)
        if complete:
            whole = whole.rstrip()
        capped = len(whole) > self.hard_cap
        if capped:
            whole = whole[: self.hard_cap]
        end = cluster_safe_cut(whole, self.offset + self.max_chars)
        window = whole[self.offset : end] if self.offset < len(whole) else ""
        more = len(whole) > end
        return {
            "text": window,
            "offset": self.offset,
            "truncated": more or capped,
            "total_chars": len(whole) if complete and not capped else None,
            "next_offset": end if more else None,
            "cut_at_limit": capped,
        }

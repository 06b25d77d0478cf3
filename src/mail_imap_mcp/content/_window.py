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
        #: Characters of pieces dropped from the front: they end before the window, and text that is not
        #: whitespace follows them (so the final rstrip cannot reach them). Bounds memory to the window.
        self.dropped = 0
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
        if text.strip():
            self._drop_before_window()
        self.pieces.append(text)
        self.length += len(text)
        if self.length >= self.wanted:
            # Whitespace at the very end of a document is dropped; keep reading past a blank
            # overhang so that "truncated" is only reported when real text follows.
            self.more_text = bool(text[max(self.wanted - 1 - before, 0) :].strip())
        stripped = text.rstrip("\n")
        self.trailing_newlines = len(text) - len(stripped) if stripped else self.trailing_newlines + len(text)
        return not self.full

    def _drop_before_window(self) -> None:
        """Forget the pieces that end before the window (called before text that is not whitespace)."""
        keep, before = 0, min(self.offset, self.hard_cap)
        while keep < len(self.pieces) and self.dropped + len(self.pieces[keep]) <= before:
            self.dropped += len(self.pieces[keep])
            keep += 1
        del self.pieces[:keep]

    def finish(self, *, complete: bool) -> dict[str, Any]:
        """The window as ExtractedText fields; ``complete`` = the whole document was read."""
        # ``rest`` is the text from character ``self.dropped`` on; indexes below are of the whole text.
        rest = "".join(self.pieces)
        if complete:
            rest = rest.rstrip()
        length = self.dropped + len(rest)
        capped = length > self.hard_cap
        if capped:
            rest = rest[: self.hard_cap - self.dropped]
            length = self.hard_cap
        end = self.dropped + cluster_safe_cut(rest, self.offset + self.max_chars - self.dropped)
        if end <= self.offset < length:
            # One combining sequence longer than the window (e.g. "Zalgo" text): split it rather than
            # answer an empty window whose next offset is its own (a reader would loop forever).
            end = min(self.offset + max(self.max_chars, 1), length)
        window = rest[self.offset - self.dropped : end - self.dropped] if self.offset < length else ""
        more = length > end
        return {
            "text": window,
            "offset": self.offset,
            "truncated": more or capped,
            "total_chars": length if complete and not capped else None,
            "next_offset": end if more else None,
            "cut_at_limit": capped,
        }

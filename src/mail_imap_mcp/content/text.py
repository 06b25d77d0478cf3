"""Text cleaning shared by message bodies and extracted attachment text.

Pure functions, stdlib only (the extraction child imports this module, so it must stay
cheap to import). Everything an agent reads from a mailbox passes through here: terminal
control sequences, bidi overrides and invisible filler characters must not reach whoever
displays or reasons about the text.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = [
    "BIDI_CONTROLS",
    "INVISIBLE",
    "clean_extracted_text",
    "cluster_safe_cut",
    "collapse_whitespace",
    "remove_unsafe_characters",
    "strip_controls",
    "truncate",
]

# C0 controls except tab, LF and CR, plus DEL and the C1 controls (0x9b is a one-byte CSI).
_BODY_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]+")

# Bidi embedding/override/isolate controls: "invoice\u202egpj.exe" displays as "invoiceexe.jpg".
BIDI_CONTROLS = dict.fromkeys([*range(0x202A, 0x202F), *range(0x2066, 0x206A)])

# Invisible filler characters used to pad preheaders; ZWNJ/ZWJ are handled separately
# because they are meaningful inside words in some scripts and in emoji sequences.
INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b\u2060\ufeff"))
# Searching is much cheaper than str.translate, and most text has none of them.
_ANY_INVISIBLE = re.compile("[" + "".join(map(chr, INVISIBLE)) + "]")

_EXTRACTED_DROP = {**INVISIBLE, **BIDI_CONTROLS}
_BLANK_RUNS = re.compile(r"\n{3,}")


def strip_controls(text: str) -> str:
    """Remove control characters other than tab, CR and LF (NUL, ESC, BEL, DEL, C1...)."""
    return _BODY_CONTROL.sub("", text)


def remove_unsafe_characters(text: str) -> str:
    """Controls (as for bodies), bidi embedding/override/isolate controls and invisible filler
    removed; character by character, so already clean text is returned unchanged."""
    return strip_controls(text).translate(_EXTRACTED_DROP)


def clean_extracted_text(text: str) -> str:
    """Clean text extracted from an attachment: the body's control-character rule plus
    bidi embedding/override/isolate controls and invisible filler removed, line ends
    normalised to LF, trailing spaces on lines and runs of blank lines collapsed.

    Idempotent.
    """
    if not text:
        return ""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = remove_unsafe_characters(text).split("\n")
    # Per line, not a regex: "[ \t]+(?=\n)" backtracks quadratically on a long run of spaces.
    lines[:-1] = [line.rstrip(" \t") for line in lines[:-1]]
    return _BLANK_RUNS.sub("\n\n", "\n".join(lines))


def collapse_whitespace(text: str) -> str:
    """Collapse all whitespace runs to single spaces, drop invisible filler characters, strip."""
    if not text:
        return ""
    if _ANY_INVISIBLE.search(text):
        text = text.translate(INVISIBLE)
    words = text.split()
    if "\u200c" in text or "\u200d" in text:
        words = [word for word in words if word.strip("\u200c\u200d")]
    return " ".join(words)


def _is_cluster_continuation(ch: str) -> bool:
    return (
        unicodedata.combining(ch) != 0
        or ch in "\u200d\u20e3"
        or "\ufe00" <= ch <= "\ufe0f"
        or "\U0001f3fb" <= ch <= "\U0001f3ff"
        or "\U000e0020" <= ch <= "\U000e007f"
    )


def _cluster_start(text: str, cut: int) -> int:
    while cut > 0 and (_is_cluster_continuation(text[cut]) or text[cut - 1] == "\u200d"):
        cut -= 1
    return cut


def cluster_safe_cut(text: str, cut: int) -> int:
    """The largest index ``<= cut`` that does not split a combining or emoji sequence
    (never below 1 when ``cut >= 1``, so a window always makes progress)."""
    if cut >= len(text) or cut <= 0:
        return max(min(cut, len(text)), 0)
    return _cluster_start(text, cut) or cut


def truncate(text: str, max_chars: int) -> tuple[str, bool]:
    """Cut ``text`` to at most ``max_chars`` characters; returns (text, was_truncated).

    Never splits a combining sequence or emoji sequence, prefers a word boundary within
    the last third (at most 40 characters), strips trailing whitespace and adds no
    ellipsis (the caller decides how to mark truncation).
    """
    if len(text) <= max_chars:
        return text, False
    if max_chars <= 0:
        return "", True
    cut = _cluster_start(text, max_chars)
    if cut > 0 and not text[cut].isspace() and not text[cut - 1].isspace():
        window = min(40, max(cut // 3, 1))
        for index in range(cut - 1, cut - 1 - window, -1):
            if text[index].isspace():
                cut = index
                break
    return text[:cut].rstrip(), True

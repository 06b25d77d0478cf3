"""The content words of a text, as the meaning set's checks compare them: words lower-cased, function
words of English, German and French left out (:data:`STOP_WORDS`), each cut to a simple stem, so that
"radiators" and "radiator", or "paying" and "pay", are one word."""

from __future__ import annotations

import re
from pathlib import Path

#: Function words of the set's three languages (``stop_words.txt``).
STOP_WORDS = frozenset(
    word
    for line in (Path(__file__).parent / "stop_words.txt").read_text(encoding="utf-8").splitlines()
    if not line.startswith("#")
    for word in line.split()
)
#: Endings cut from a word (the first that fits, leaving at least three letters).
_ENDINGS = (
    "ations", "ation", "ements", "ement", "ments", "ment", "ings", "ing", "ies", "ied", "ers", "er", "ed",
    "es", "ly", "en", "e", "s",
)  # fmt: skip
_WORD = re.compile(r"\w+")


def stem(word: str) -> str:
    """``word`` (lower case) without the first of :data:`_ENDINGS` it ends with."""
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)]
    return word


def content_words(text: str) -> list[str]:
    """The words of ``text`` that are not :data:`STOP_WORDS`, lower case, in order (digits left out)."""
    words = (word for word in _WORD.findall(text.casefold()) if not word.isdigit())
    return [word for word in words if word not in STOP_WORDS]


def content_stems(text: str) -> set[str]:
    """The stems of the content words of ``text``."""
    return {stem(word) for word in content_words(text)}

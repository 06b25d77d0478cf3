"""What of a message is embedded: its passages, from the text columns the index keeps of it
(:data:`~mail_imap_mcp.index.store.TEXT_COLUMNS`).

A passage is the subject, then a piece of what the sender wrote: the ``body`` column,
which is already the new text (quoted replies and signatures are in ``quoted``, left out, as the snippet
leaves them out), cut at sentence ends into pieces of about :data:`PASSAGE_CHARS`, and the head of the
attachments' extracted text. A static model averages a passage's words, so a long text in one passage
would average to nothing in particular: a message ranks by its best passage instead. Links, addresses and
runs of symbols are dropped: they say nothing of the meaning and cost tokens. At most
:data:`MAX_PASSAGES` per message."""

from __future__ import annotations

import re
from collections.abc import Sequence

from mail_imap_mcp.index.store import TEXT_COLUMNS

#: Characters of a message's text in one passage (about 100-150 tokens), beside its subject.
PASSAGE_CHARS = 600
#: Passages of the body at most: its first 1,800 characters of new text.
MAX_BODY_PASSAGES = 3
#: Characters of the attachments' extracted text read, in one passage of its own.
ATTACHMENT_HEAD_CHARS = 600
#: Passages of one message at most.
MAX_PASSAGES = MAX_BODY_PASSAGES + 1

_SUBJECT, _BODY, _ATTACHMENT_TEXT = (
    TEXT_COLUMNS.index(name) for name in ("subject", "body", "attachment_text")
)
#: Characters of the body read: what its passages hold, and a third more for the noise taken out.
BODY_CHARS_READ = PASSAGE_CHARS * MAX_BODY_PASSAGES * 4 // 3
#: Links and mail addresses (the text is searched for them only where it holds ``@``, ``://`` or ``www.``).
_LINKS = re.compile(r"(?<!\S)(?:[^\w\s]*(?:https?://|www\.)\S+|[^\s@]+@\S+)")
#: Runs of three or more symbols (rules, quote marks, ``====``).
_SYMBOLS = re.compile(r"[^\w\s][^\w\s][^\w\s]+")
#: Words of 40 letters or more (encoded data, hashes, tracking ids), matched from their start only: a
#: pattern tried inside every word costs its length squared.
_LONG_WORDS = re.compile(r"\b\w{40,}")
#: The longest word kept (:data:`_LONG_WORDS`).
_LONGEST_WORD = 39
_ENDS = ".!?;:"
#: Where a piece may end: after a sentence's end, else at a space.
_SENTENCE_END = re.compile(r"[.!?;:](?=\s)")
#: Subject prefixes of replies and forwards (English, German, French, Dutch, Spanish, Scandinavian).
_REPLY_PREFIX = re.compile(r"^(?:\s*(?:re|fwd?|aw|wg|tr|sv|vs|antw|rv)\s*(?:\[\d+\])?\s*:\s*)+", re.I)


def passages(texts: Sequence[str]) -> list[str]:
    """The passages of a message whose text columns are ``texts`` (in :data:`TEXT_COLUMNS`' order), at
    least one (a message with no text at all: one empty passage, which the model makes a zero vector)."""
    head = _clean(_REPLY_PREFIX.sub("", texts[_SUBJECT]))
    pieces = _pieces(_clean(texts[_BODY][:BODY_CHARS_READ]), MAX_BODY_PASSAGES)
    found = [_joined(head, piece) for piece in pieces] or [head]
    attached = _pieces(_clean(texts[_ATTACHMENT_TEXT][: ATTACHMENT_HEAD_CHARS * 2]), 1)
    found += [_joined(head, piece) for piece in attached]
    return found


def _joined(*parts: str) -> str:
    """The parts as sentences: each but the last ended by a full stop unless it ends in one of its own."""
    kept = [part for part in parts if part]
    last = len(kept) - 1
    return " ".join(part if n == last or part[-1] in _ENDS else f"{part}." for n, part in enumerate(kept))


def _clean(text: str) -> str:
    """``text`` without links, addresses, runs of symbols and overlong words, its spaces made single. Each
    pattern is looked for only where it may be: one pattern of them all, tried at every character, took
    half of the making of passages."""
    if "@" in text or "://" in text or "www." in text:
        text = _LINKS.sub(" ", text)
    words = _SYMBOLS.sub(" ", text).split()
    if max(map(len, words), default=0) > _LONGEST_WORD:
        words = _LONG_WORDS.sub(" ", " ".join(words)).split()
    return " ".join(words)


def _pieces(text: str, most: int) -> list[str]:
    """Up to ``most`` pieces of ``text``, each at most :data:`PASSAGE_CHARS` long, cut after a sentence's
    end in its second half where there is one, else at a space."""
    found: list[str] = []
    while text and len(found) < most:
        if len(text) <= PASSAGE_CHARS:
            found.append(text)
            break
        window = text[: PASSAGE_CHARS + 1]
        ends = [match.end() for match in _SENTENCE_END.finditer(window, PASSAGE_CHARS // 2)]
        cut = ends[-1] if ends else window.rfind(" ", PASSAGE_CHARS // 2)
        cut = cut if cut > 0 else PASSAGE_CHARS
        found.append(text[:cut].strip())
        text = text[cut:].strip()
    return found

"""The snippet of a ranked hit: the stretch of what the sender wrote where the query's words are."""

from __future__ import annotations

import re

from mail_imap_mcp.content.text import collapse_whitespace
from mail_imap_mcp.mime.summary import cut_snippet
from mail_imap_mcp.query.tree import AllOf, AnyOf, Contains, Query

#: Characters of context kept before the first matched word.
LEAD_CHARS = 40


def matched_words(query: Query) -> list[str]:
    """The words and phrases the query looks for (not those under NOT), in order."""
    if isinstance(query, Contains):
        return [query.value]
    if isinstance(query, AllOf | AnyOf):
        return [word for part in query.parts for word in matched_words(part)]
    return []


def snippet_around(text: str, words: list[str], chars: int) -> str | None:
    """``chars`` characters of ``text`` (whitespace collapsed) from a little before the first of ``words``
    it holds as a word, with ``…`` where the start was cut; None when it holds none of them."""
    collapsed = collapse_whitespace(text)
    starts = [
        found.start()
        for word in words
        if (found := re.search(rf"(?<!\w){re.escape(word)}(?!\w)", collapsed, re.IGNORECASE))
    ]
    if not starts or chars <= 0:
        return None
    start = max(min(starts) - LEAD_CHARS, 0)
    if start:
        space = collapsed.find(" ", start)
        start = space + 1 if 0 <= space < min(starts) else start
    cut = cut_snippet(collapsed[start:], chars - (1 if start else 0))
    return ("…" + cut if start else cut) if cut else None

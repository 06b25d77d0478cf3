"""What tests/pure/test_index_fts5.py shares with other test modules."""

from __future__ import annotations

import re
from datetime import date

from hypothesis import strategies as st

from mail_imap_mcp.index.store import TEXT_COLUMNS, TEXT_FIELDS, IndexedMessage
from mail_imap_mcp.query import (
    AllOf,
    AnyOf,
    Contains,
    DateBound,
    Filename,
    HasAttachment,
    HasFlag,
    HasKeyword,
    Not,
    Query,
    SizeBound,
)

WORDS = ("alpha", "beta", "gamma", "delta", "omega")


FLAGS = ("\\Seen", "\\Flagged", "$Work")


@st.composite
def messages(draw: st.DrawFn) -> list[IndexedMessage]:
    count = draw(st.integers(1, 12))
    found = []
    for uid in range(1, count + 1):
        subject = " ".join(draw(st.lists(st.sampled_from(WORDS), max_size=3)))
        body = " ".join(draw(st.lists(st.sampled_from(WORDS), max_size=4)))
        flags = tuple(draw(st.lists(st.sampled_from(FLAGS), unique=True)))
        texts = tuple(subject if c == "subject" else body if c == "body" else "" for c in TEXT_COLUMNS)
        day = 20260101 + draw(st.integers(0, 5))
        names = tuple(draw(st.lists(st.sampled_from(["report.pdf", "x.docx", "photo.jpg"]), max_size=2)))
        size = draw(st.integers(100, 200))
        found.append(IndexedMessage(uid, uid * 10, day, size, flags, bool(names), texts, names))
    return found


def trees(depth: int = 2) -> st.SearchStrategy[Query]:
    leaves = st.one_of(
        st.builds(Contains, st.sampled_from(["text", "subject", "body"]), st.sampled_from(WORDS)),
        st.builds(HasFlag, st.sampled_from(["seen", "flagged"]), st.booleans()),
        st.builds(HasKeyword, st.just("$work"), st.booleans()),
        st.builds(
            DateBound, st.sampled_from(["since", "before"]), st.dates(date(2026, 1, 1), date(2026, 1, 6))
        ),
        st.builds(SizeBound, st.sampled_from(["larger", "smaller"]), st.integers(100, 200)),
        st.just(HasAttachment()),
        st.builds(Filename, st.sampled_from(["pdf", "Report", "x.doc"])),
    )
    if depth == 0:
        return leaves
    inner = trees(depth - 1)
    return st.one_of(
        leaves,
        st.builds(Not, inner),
        st.builds(lambda parts: AllOf(tuple(parts)), st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda parts: AnyOf(tuple(parts)), st.lists(inner, min_size=1, max_size=3)),
    )


def matches(query: Query, message: IndexedMessage) -> bool:
    words = {c: set(re.findall(r"\w+", t)) for c, t in zip(TEXT_COLUMNS, message.texts, strict=True)}
    if isinstance(query, Contains):
        columns = TEXT_FIELDS[query.field] or TEXT_COLUMNS
        return any(query.value in words[c] for c in columns)
    if isinstance(query, HasFlag):
        return (("\\" + query.flag.title()) in message.flags) == query.present
    if isinstance(query, HasKeyword):
        return ("$Work" in message.flags) == query.present
    if isinstance(query, DateBound):
        day = query.day.year * 10000 + query.day.month * 100 + query.day.day
        return message.arrival_day >= day if query.bound == "since" else message.arrival_day < day
    if isinstance(query, SizeBound):
        return message.size > query.octets if query.bound == "larger" else message.size < query.octets
    if isinstance(query, HasAttachment):
        return message.has_attachment
    if isinstance(query, Filename):
        return any(query.value.lower() in name for name in message.filenames)
    if isinstance(query, Not):
        return not matches(query.part, message)
    if isinstance(query, AllOf):
        return all(matches(part, message) for part in query.parts)
    assert isinstance(query, AnyOf)
    return any(matches(part, message) for part in query.parts)

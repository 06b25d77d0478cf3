"""The FTS5 compiler of the query tree, and the SQLite store answering what it compiles, without IMAP.

The compiler is checked by form (user text quoted whole as one phrase, values as parameters, what the
index cannot answer refused) and by meaning: a property test builds random messages and random trees
and compares the store's answer with a model that evaluates the tree word by word.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mail_imap_mcp.index.engines.sqlite.query import compile_fts5, phrase
from mail_imap_mcp.index.engines.sqlite.store import SqliteStore
from mail_imap_mcp.index.store import TEXT_COLUMNS, TEXT_FIELDS, IndexedMessage, Unsupported
from mail_imap_mcp.query import (
    AllOf,
    AnyOf,
    Contains,
    DateBound,
    Filename,
    HasAttachment,
    HasFlag,
    HasKeyword,
    Header,
    NeedsReply,
    Not,
    Query,
    SizeBound,
    all_of,
)


def test_user_text_is_one_quoted_phrase_whatever_it_holds() -> None:
    for hostile in ['a" OR x*', "NEAR(a b)", "{subject}: x", "x'; DROP TABLE messages; --", "^start"]:
        quoted = phrase(hostile)
        assert quoted.startswith('"') and quoted.endswith('"')
        assert quoted[1:-1].replace('""', "").count('"') == 0


def test_text_of_a_top_level_conjunction_is_the_match_and_the_rest_parameters() -> None:
    query = all_of(
        Contains("from", "alice"),
        Contains("text", "quarterly report"),
        HasFlag("seen", present=False),
        HasKeyword("$Important"),
        DateBound("since", date(2026, 1, 2)),
        SizeBound("larger", 1000),
    )
    compiled = compile_fts5(query)
    assert compiled.match == '({sender} : "alice") AND (- place : "quarterly report")'
    assert compiled.conjunctive  # every word matches at least what the whole does
    either = compile_fts5(
        all_of(Contains("from", "alice"), AnyOf((Contains("text", "a"), Contains("text", "b"))))
    )
    assert not either.conjunctive and " OR " in (either.match or "")
    assert "alice" not in compiled.where and "important" not in compiled.where.lower()
    assert compiled.params == (" $important ", 20260102, 1000)


def test_negated_text_and_text_beside_a_flag_in_an_or_are_sub_selects() -> None:
    compiled = compile_fts5(
        all_of(Not(Contains("subject", "spam")), AnyOf((Contains("body", "x"), HasFlag("flagged"))))
    )
    assert compiled.match is None
    assert compiled.where.count("SELECT rowid FROM fts WHERE fts MATCH ?") == 2
    assert compiled.params == ('{subject} : "spam"', '{body quoted} : "x"')


def test_regression_a_disjunction_beside_another_condition_keeps_its_parentheses(tmp_path: Path) -> None:
    # Found by the property test below: "a AND b OR c" bound as "(a AND b) OR c" and matched too much.
    store = SqliteStore(tmp_path / "or.sqlite3")
    seen = IndexedMessage(
        1, 1, 20260101, 1, ("\\Seen",), False, tuple("alpha" if c == "body" else "" for c in TEXT_COLUMNS)
    )
    store.put(store.start_folder("INBOX", 1), [seen])
    unseen = HasFlag("seen", present=False)
    query = all_of(unseen, AnyOf((unseen, Contains("text", "alpha"))))
    assert store.search(query, folders=["INBOX"], order="date", limit=5, offset=0).hits == []


@pytest.mark.parametrize(
    "query",
    [Contains("bcc", "x"), Contains("text", "!!!"), NeedsReply(), Header("X-Mailer", "y"), Header("List-Id")],
)
def test_what_the_index_cannot_answer_is_unsupported(query: Query) -> None:
    with pytest.raises(Unsupported):
        compile_fts5(query)


def test_every_column_the_compiler_names_is_one_the_store_keeps() -> None:
    named = {column for columns in TEXT_FIELDS.values() for column in columns} | {"list_id", "message_id"}
    assert named <= set(TEXT_COLUMNS)


# -- the store against a model ------------------------------------------------------------------------

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


@pytest.fixture(scope="module")
def model_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqliteStore]:
    """One store for every example, each example in a folder of its own: opening a store (its schema, its
    connections) cost more than the example's own work, and made this the slowest test of the pure tier."""
    store = SqliteStore(tmp_path_factory.mktemp("model") / "model.sqlite3")
    yield store
    store.close()


_example_folders = itertools.count()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(corpus=messages(), query=trees())
def test_the_store_answers_what_the_tree_means(
    model_store: SqliteStore, corpus: list[IndexedMessage], query: Query
) -> None:
    # The other examples' folders hold messages too: the page must come from this folder alone.
    folder = f"Example {next(_example_folders)}"
    model_store.put(model_store.start_folder(folder, 1), corpus)
    page = model_store.search(query, folders=[folder], order="date", limit=100, offset=0)
    assert sorted(hit.uid for hit in page.hits) == sorted(m.uid for m in corpus if matches(query, m))
    assert page.total == len(page.hits)


def test_regression_an_underscore_alone_is_no_word_of_the_index() -> None:
    """unicode61 splits words at "_": the phrase "_" matched nothing, so the index answered an empty page
    where the server would have found the text; now the search goes to the server."""
    with pytest.raises(Unsupported):
        phrase("_")
    assert phrase("snake_case") == '"snake_case"'

"""The FTS5 compiler of the query tree, and the SQLite store answering what it compiles, without IMAP.

The compiler is checked by form (user text quoted whole as one phrase, values as parameters, what the
index cannot answer refused) and by meaning: a property test builds random messages and random trees
and compares the store's answer with a model that evaluates the tree word by word.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from mail_imap_mcp.index.engines.sqlite.query import compile_fts5, phrase
from mail_imap_mcp.index.engines.sqlite.store import SqliteStore
from mail_imap_mcp.index.store import TEXT_COLUMNS, TEXT_FIELDS, IndexedMessage, Unsupported
from mail_imap_mcp.query import (
    AnyOf,
    Contains,
    DateBound,
    HasFlag,
    HasKeyword,
    Header,
    NeedsReply,
    Not,
    Query,
    SizeBound,
    all_of,
)
from tests.support.shared.index_fts5 import matches, messages, trees


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

"""The ``sqlite+tantivy`` engine (issue 51): relevance pages ranked by a Tantivy index beside the SQLite
file, on real files.

* its top 20 (and the next 20) is exactly the first of every match scored by the same scorer (Tantivy's
  own BM25 with a limit as large as the matches, where nothing can be skipped), equal scores by newest
  row id first, for random corpora and query trees (text alone and text with conditions SQLite checks);
* it finds the same messages as the SQLite engine for every query tree, and the same words (accents,
  case, addresses, syntax of both engines' languages);
* the two indexes stay one: a write of another process (the plain SQLite engine) or a process killed
  while it writes leaves the Tantivy index behind its file; searches then rank with FTS5 (never a stale
  answer) and the next open rebuilds it from the file's texts;
* through the MCP server against Dovecot, a ranked page comes from Tantivy.

The index suite (test_index_search.py, test_index_query_language.py, test_index_concurrent.py) runs on
this engine too (``index_engine``)."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.index.engine import IndexEngine
from mail_imap_mcp.index.sqlite_engine import SqliteEngine
from mail_imap_mcp.index.sqlite_store import SqliteStore
from mail_imap_mcp.index.store import TEXT_COLUMNS, IndexedMessage, IndexStore, Unsupported
from mail_imap_mcp.index.tantivy_engine import TantivyEngine
from mail_imap_mcp.index.tantivy_query import ID_FIELD, compile_tantivy, in_folders
from mail_imap_mcp.index.tantivy_store import TantivyStore
from mail_imap_mcp.query.tree import AllOf, AnyOf, Contains, HasFlag, Query
from tests.integration.test_index_postgres import HOSTILE
from tests.pure.test_index_fts5 import messages, trees

ACCOUNT = AccountConfig.model_validate({"host": "imap.example.org", "username": "u", "password_env": "X"})
#: Few words, repeated: many messages score alike, so ties at a page's edge are common.
VOCABULARY = ("alpha", "beta", "gamma", "delta", "omega", "kappa")
FLAGS = ("\\Seen", "\\Flagged")


def texts(subject: str, body: str) -> tuple[str, ...]:
    return tuple(subject if c == "subject" else body if c == "body" else "" for c in TEXT_COLUMNS)


@st.composite
def corpora(draw: st.DrawFn) -> list[IndexedMessage]:
    """20-250 messages of the few words, some flagged, sent in the same few seconds (row ids close)."""
    rng = draw(st.randoms(use_true_random=False))
    found = []
    for uid in range(1, draw(st.integers(20, 250)) + 1):
        subject = " ".join(rng.choices(VOCABULARY, k=rng.randint(0, 3)))
        body = " ".join(rng.choices(VOCABULARY, k=rng.randint(0, 12)))
        flags = tuple(flag for flag in FLAGS if rng.random() < 0.4)
        found.append(IndexedMessage(uid, 1_000 + uid % 7, 20260101, 100, flags, False, texts(subject, body)))
    return found


def ranked_trees() -> st.SearchStrategy[Query]:
    word = st.builds(Contains, st.sampled_from(["text", "subject", "body"]), st.sampled_from(VOCABULARY))
    text = st.one_of(
        word,
        st.builds(lambda parts: AnyOf(tuple(parts)), st.lists(word, min_size=2, max_size=3)),
        st.builds(lambda parts: AllOf(tuple(parts)), st.lists(word, min_size=2, max_size=2)),
    )
    flag = st.builds(HasFlag, st.sampled_from(["seen", "flagged"]), st.booleans())
    return st.one_of(text, st.builds(lambda t, f: AllOf((t, f)), text, flag))


@pytest.fixture(scope="module")
def tantivy_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TantivyStore]:
    store = TantivyStore(tmp_path_factory.mktemp("tantivy") / "ranked.sqlite3")
    yield store
    store.close()


_example_folders = itertools.count()


def every_match_scored(store: TantivyStore, query: Query, folder: str) -> list[int]:
    """The UIDs of ``query``'s matches in ``folder``, every match scored by Tantivy (a limit as large as
    the index: nothing skipped), kept where SQLite's own answer has them, by score then newest row id."""
    db = sqlite3.connect(store.path)
    try:
        folder_id, uid_of = db.execute("SELECT id FROM folders WHERE name = ?", (folder,)).fetchone()[0], {}
        uid_of = dict(db.execute("SELECT id, uid FROM messages WHERE folder = ?", (folder_id,)).fetchall())
    finally:
        db.close()
    plain = SqliteStore.search(store, query, folders=[folder], order="date", limit=10_000, offset=0)
    matching = {hit.uid for hit in plain.hits}
    ranked = compile_tantivy(query, store.text.schema, store.text.tokenizer)
    searcher, _ = store.text.searcher()
    text = in_folders(ranked.text, store.text.schema, [folder_id])
    hits = searcher.search(text, searcher.num_docs + 1, count=False).hits
    rows = searcher.fast_field_values(ID_FIELD, [address for _, address in hits])
    scored = sorted(
        zip((score for score, _ in hits), rows, strict=True), key=lambda pair: (-pair[0], -pair[1])
    )
    return [uid_of[row] for _, row in scored if uid_of[row] in matching]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(corpus=corpora(), query=ranked_trees())
def test_property_the_top_20_is_every_match_scored_first_20_in_order(
    tantivy_store: TantivyStore, corpus: list[IndexedMessage], query: Query
) -> None:
    # Other examples' folders are in the index: the page is this folder's alone.
    folder = f"Example {next(_example_folders)}"
    tantivy_store.put(tantivy_store.start_folder(folder, 1), corpus)
    expected = every_match_scored(tantivy_store, query, folder)
    first = tantivy_store.search(query, folders=[folder], order="relevance", limit=20, offset=0, keep=60)
    second = tantivy_store.search(query, folders=[folder], order="relevance", limit=20, offset=20)
    assert [hit.uid for hit in first.hits] == expected[:20], query
    assert [hit.uid for hit in second.hits] == expected[20:40], query
    assert [uid for _, uid in first.places] == expected[:60]
    assert first.total == len(expected)
    assert not first.unweighted
    ranks = [hit.rank for hit in first.hits]
    assert ranks == sorted(ranks) and all(rank < 0 for rank in ranks)  # Tantivy's scores, best first


@pytest.fixture(scope="module")
def both_stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[IndexStore, IndexStore]]:
    engines: list[IndexEngine] = [
        SqliteEngine(tmp_path_factory.mktemp("plain")),
        TantivyEngine(tmp_path_factory.mktemp("ranked")),
    ]
    stores = tuple(engine.location("a", ACCOUNT).open().store for engine in engines)
    yield stores[0], stores[1]
    for store in stores:
        store.close()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(corpus=messages(), query=trees())
def test_property_the_same_messages_as_sqlite_for_every_query_tree(
    both_stores: tuple[IndexStore, IndexStore], corpus: list[IndexedMessage], query: Query
) -> None:
    folder = f"Example {next(_example_folders)}"
    found = []
    for store in both_stores:
        store.put(store.start_folder(folder, 1), corpus)
        try:
            page = store.search(query, folders=[folder], order="relevance", limit=100, offset=0)
        except Unsupported:
            found.append(None)
            continue
        found.append((sorted(hit.uid for hit in page.hits), page.total))
    assert found[0] == found[1], query


def test_the_same_words_as_sqlite_accents_case_and_syntax_alike(
    both_stores: tuple[IndexStore, IndexStore],
) -> None:
    said = [
        "Crème Brûlée at the CAFÉ",
        "o'brien wrote: kiwi:* & apple&pear | plum|fig !quince title:x AND (y OR z)",
        "see https://example.org/a-b_c and first.last@example.com",
        "'); DROP SCHEMA public CASCADE; -- said Straße İstanbul",
    ]
    corpus = [
        IndexedMessage(uid, uid, 20260101, 10, (), False, texts("", t)) for uid, t in enumerate(said, 1)
    ]
    asked = [
        *HOSTILE,
        *("creme brulee", "cafe", "CRÈME", "example.org", "a-b", "c", "first.last@example.com"),
        *("strasse", "straße", "istanbul", "wrote kiwi", "kiwi wrote", "pear apple", "title:x", "AND", "(y"),
    ]
    for store in both_stores:
        store.put(store.start_folder("Words", 1), corpus)
    for value in asked:
        answers = []
        for store in both_stores:
            try:
                page = store.search(
                    Contains("text", value), folders=["Words"], order="relevance", limit=9, offset=0
                )
                answers.append(sorted(hit.uid for hit in page.hits))
            except Unsupported:
                answers.append(None)  # type: ignore[arg-type]
        assert answers[0] == answers[1], (value, answers)
    page = both_stores[1].search(
        Contains("text", "creme"), folders=["Words"], order="relevance", limit=9, offset=0
    )
    assert [hit.uid for hit in page.hits] == [1]

"""``about``'s ranking (services/search_meaning.py: words and meaning fused) measured on the meaning set
(tests/support/mail/meaning_set, issue 80 item 5) in a real index store of each SQLite engine, with the
vectors the index's own pass makes (the shipped model): its recall at 10 is at least the better of words
alone (the store's BM25 on the query's content words) and meaning alone (the store's nearest, the same
vectors the fusion ranks by) on each half of the queries. So the fusion is tuned: with equal weights the
words' chance matches ("get", "new", "night") cost the English paraphrases half their recall.

What the shipped model itself finds is test_meaning_recall's; 0.75 on the English paraphrases, which the
issue asks of ``about``, is beyond it (docs/search.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.index.engines import open_engine
from mail_imap_mcp.index.store import IndexStore, PageAsk
from mail_imap_mcp.index.sync_vectors import fill_vectors, meaning_model, vector_store
from mail_imap_mcp.query import EVERYTHING
from mail_imap_mcp.services.search_meaning import MeaningRanking
from tests.support.clients.in_process import make_config
from tests.support.mail.meaning_set import FOLDERS, SetQuery, meaning_set
from tests.support.mail.meaning_set.recall import K, by_words, fill, recall
from tests.support.servers.postgres import on_engine

LABELLED = meaning_set()
ACCOUNT = AccountConfig.model_validate({"host": "imap.example.org", "username": "u", "password_env": "X"})


@pytest.fixture(scope="module", params=("sqlite", "sqlite+tantivy"))
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IndexStore]:
    """The set in an index store of each SQLite engine, with every message's vectors."""
    index_dir: Path = tmp_path_factory.mktemp("about")
    engine = open_engine(on_engine(make_config({}, index_dir=str(index_dir)), request.param, None))
    opened = engine.location("about", ACCOUNT).open().store
    fill(opened, LABELLED)
    vectors = vector_store(opened)
    assert vectors is not None
    fill_vectors(vectors, meaning_model(), lambda: False, pause=lambda: None)
    assert not vectors.vector_counts(meaning_model().name).partial
    yield opened
    opened.close()
    engine.close()


def test_about_finds_at_least_what_words_or_meaning_alone_find_on_each_half(store: IndexStore) -> None:
    model = meaning_model()
    vectors = vector_store(store)
    assert vectors is not None

    def about(query: SetQuery) -> list[str]:
        ask = PageAsk(folders=list(FOLDERS), order="relevance", limit=K, offset=0)
        page = MeaningRanking(model, query.text, None, 0).page(store, EVERYTHING, ask)
        return [LABELLED.id_at(hit.folder, hit.uid) for hit in page.hits]

    def meaning_alone(query: SetQuery) -> list[str]:
        near = vectors.nearest(model.embed([query.text])[0], None, list(FOLDERS), K)
        return [LABELLED.id_at(hit.folder, hit.uid) for hit in near]

    fused = recall(about, LABELLED)
    words, meaning = recall(by_words(store, LABELLED), LABELLED), recall(meaning_alone, LABELLED)
    for half in fused:
        assert fused[half] >= max(words[half], meaning[half]), (half, fused, words, meaning)
    # Both halves in English gain from the other signal or keep the better one's.
    assert fused["keyword, English"] > max(words["keyword, English"], meaning["keyword, English"])

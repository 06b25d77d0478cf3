"""Search by meaning, measured on the meaning set (tests/support/mail/meaning_set, issue 80 item 5):
recall at 10 per half of its queries, of words alone (each engine's BM25 on a real index store of the
set: SQLite, sqlite+tantivy, PostgreSQL) and of meaning alone (the shipped model, exact cosine over the
messages' passages). Words find what shares their words and, by the set's making, no paraphrase; the
model finds paraphrases words cannot. scripts/meaning_recall.py prints the figures (docs/search.md)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mail_imap_mcp.index.store import IndexStore
from mail_imap_mcp.meaning.model import ENGLISH, shipped_model
from tests.support.mail.meaning_set import meaning_set
from tests.support.mail.meaning_set.recall import by_meaning, by_words, labelled_store, recall
from tests.support.servers.postgres import ENGINES, engine_of

LABELLED = meaning_set()


@pytest.fixture(scope="module", params=ENGINES)
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IndexStore]:
    """The set in an index store of each engine, as the application opens it."""
    name, server = engine_of(request, request.param)
    with labelled_store(tmp_path_factory.mktemp("meaning"), name, server) as store:
        yield store


@pytest.fixture(scope="module")
def meaning_alone() -> dict[str, float]:
    return recall(by_meaning(shipped_model(ENGLISH), LABELLED), LABELLED)


def test_words_alone_find_the_keywords_and_no_paraphrase(store: IndexStore) -> None:
    found = recall(by_words(store, LABELLED), LABELLED)
    assert found["keyword, English"] >= 0.8, found
    assert found["keyword, German and French"] >= 0.9, found
    assert found["paraphrase, English"] == 0, found


def test_meaning_alone_finds_paraphrases_that_words_cannot(meaning_alone: dict[str, float]) -> None:
    """The shipped model finds 0.41 of the English paraphrases' messages (0.83 of the keywords'): far
    from the 0.75 the issue asks of ``about`` on them (docs/search.md: what it does poorly)."""
    assert meaning_alone["paraphrase, English"] >= 0.35, meaning_alone
    assert meaning_alone["keyword, English"] >= 0.75, meaning_alone

"""``about``'s ranking (services/search_meaning.py: words and meaning fused) measured on the meaning set
(tests/support/mail/meaning_set, issue 80 item 5) in a real index store of each engine (SQLite,
sqlite+tantivy, PostgreSQL: its vectors in a table, and with pgvector), with the vectors the index's own
pass makes (the shipped model): its recall at 10 is at least the better of words alone (the store's BM25
on the query's content words) and meaning alone (the ranking the fusion takes: the store's nearest with
hubness reduced, sought again from the description's vector fed back, services/search_meaning_near.py)
on each half of the queries; 0.95 on the English keywords, 0.78 on the English paraphrases (the issue
asks 0.75) and 0.9 on the German and French ones (0.96, 0.79 and 0.95 on every engine). So the fusion
is tuned: with equal weights the words' chance matches ("get", "new", "night") cost the English
paraphrases half their recall.

What the shipped model's plain cosine finds is test_meaning_recall's (0.39 of the English paraphrases'
messages); hubness reduction and the feedback take the meaning's ranking to 0.79 (docs/search.md)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mail_imap_mcp.index.store import IndexStore
from mail_imap_mcp.meaning.model import shipped_model
from tests.support.mail.meaning_set import meaning_set
from tests.support.mail.meaning_set.recall import by_about, by_nearest, by_words, labelled_store, recall

LABELLED = meaning_set()


#: Each engine, and the PostgreSQL server it runs on: Debian's (vectors ranked in the instance from its
#: quantised copy) and one that carries pgvector.
ENGINE_SERVERS = {
    "sqlite": None,
    "sqlite+tantivy": None,
    "postgresql": "postgres",
    "postgresql+pgvector": "postgres_vector",
}


@pytest.fixture(scope="module", params=tuple(ENGINE_SERVERS))
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IndexStore]:
    """The set in an index store of each engine."""
    server_fixture = ENGINE_SERVERS[request.param]
    server = request.getfixturevalue(server_fixture) if server_fixture else None
    name = request.param.removesuffix("+pgvector")
    with labelled_store(tmp_path_factory.mktemp("about"), name, server) as store:
        yield store


def test_about_finds_at_least_what_words_or_meaning_alone_find_on_each_half(store: IndexStore) -> None:
    model = shipped_model()
    fused = recall(by_about(store, LABELLED, model), LABELLED)
    words = recall(by_words(store, LABELLED), LABELLED)
    meaning = recall(by_nearest(store, LABELLED, model), LABELLED)
    for half in fused:
        assert fused[half] >= max(words[half], meaning[half]), (half, fused, words, meaning)
    # The English keywords gain from the meaning over words alone, and are found as the issue asks (0.75).
    assert fused["keyword, English"] > words["keyword, English"], (fused, words)
    assert fused["keyword, English"] >= 0.95, fused
    # Hubness reduced and the description's vector fed back, the meaning finds paraphrases the model's
    # plain cosine ranks below mail from crowds of look-alikes (0.39 of the English ones' messages, 0.15
    # of the German and French).
    assert fused["paraphrase, English"] >= 0.78, fused
    assert fused["paraphrase, German and French"] >= 0.9, fused

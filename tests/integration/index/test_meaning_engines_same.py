"""The same vectors, the same query, the same first ten by meaning on every engine (issue 89 item 7): the
meaning set among 3,000 others more (4,332 messages), each of its 40 queries ranked by meaning alone
through the index's own vectors (hubness reduced, fed back: ``about``'s ranking by meaning,
:func:`~tests.support.mail.meaning_set.recall.by_nearest`) on sqlite+tantivy, PostgreSQL with its
vectors in a table and PostgreSQL with pgvector, and compared with SQLite's: the same messages in the
same order. Before one stored form of the vectors and one computation of the final score, PostgreSQL's
first ten were SQLite's for 21 of 40 queries, pgvector's for 18; after it, pgvector's 29 of 40, SQLite's
first pass by signs alone leaving some of the nearest out; by signs and sizes
(:meth:`~mail_imap_mcp.meaning.vectors.Signatures.first_pass`), 40 of 40."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mail_imap_mcp.index.store import IndexStore
from mail_imap_mcp.meaning.model import ENGLISH, shipped_model
from tests.support.mail.meaning_set import OTHERS, MeaningSet, meaning_set
from tests.support.mail.meaning_set.recall import ENGINE_SERVERS, by_nearest, engine_store, labelled_store

#: The meaning set among this many others (its own 1,200 and 3,000 more).
LABELLED: MeaningSet = meaning_set(OTHERS + 3000)


def first_tens(store: IndexStore) -> dict[str, list[str]]:
    """Each query's first ten by meaning alone on ``store`` (its vectors made by the index's own pass)."""
    ranking = by_nearest(store, LABELLED, shipped_model(ENGLISH))
    return {query.id: ranking(query) for query in LABELLED.queries}


@pytest.fixture(scope="module")
def sqlite_first_tens(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    with labelled_store(Path(tmp_path_factory.mktemp("sqlite")), "sqlite", None, LABELLED) as store:
        return first_tens(store)


@pytest.fixture(
    scope="module",
    params=[engine for engine in ENGINE_SERVERS if engine != "sqlite"],
)
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IndexStore]:
    with engine_store(request, tmp_path_factory.mktemp("same"), LABELLED) as store:
        yield store


def test_every_engine_ranks_the_same_first_ten_by_meaning_as_sqlite(
    store: IndexStore, sqlite_first_tens: dict[str, list[str]]
) -> None:
    assert len(LABELLED.messages) == 4332 and len(LABELLED.queries) == 40
    found = first_tens(store)
    differing = {
        query: (sqlite_first_tens[query], ranked)
        for query, ranked in found.items()
        if ranked != sqlite_first_tens[query]
    }
    assert not differing, f"{len(differing)} of {len(found)} queries differ: {differing}"

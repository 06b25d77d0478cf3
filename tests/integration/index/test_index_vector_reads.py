"""The stored vectors read back (issue 80: hubness reduction, services/search_meaning_hubs.py) on every
engine: SQLite, sqlite+tantivy, and PostgreSQL with its vectors in a table (Debian's) or as pgvector's
``halfvec``. ``vectors_of`` gives each message asked for that has vectors its passages' rows, in the
directions put (int8 and half floats lose a little); ``vector_sample`` gives every message's where the
index has no more than asked, else that many spread over the index (old and new mail alike)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.index.store import TEXT_COLUMNS, IndexedMessage, IndexStore
from mail_imap_mcp.index.sync_vectors import vector_store
from mail_imap_mcp.index.vectors import VectorStore
from tests.support.clients.in_process import make_config
from tests.support.clients.index_clients import opened_store
from tests.support.servers.postgres import on_engine

ACCOUNT = AccountConfig.model_validate({"host": "imap.example.org", "username": "u", "password_env": "X"})
MODEL = "a-test-model-64"
DIMENSIONS = 64
#: Each engine, and the PostgreSQL server fixture it runs on.
ENGINE_SERVERS = {
    "sqlite": None,
    "sqlite+tantivy": None,
    "postgresql": "postgres",
    "postgresql+pgvector": "postgres_vector",
}


@pytest.fixture(params=tuple(ENGINE_SERVERS))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[IndexStore]:
    fixture = ENGINE_SERVERS[request.param]
    server = request.getfixturevalue(fixture) if fixture else None
    config = on_engine(
        make_config({}, index_dir=str(tmp_path)), request.param.removesuffix("+pgvector"), server
    )
    with opened_store(config, f"reads{tmp_path.name[-6:].replace('-', '')}", ACCOUNT) as opened:
        yield opened


def _message(uid: int) -> IndexedMessage:
    texts = tuple(f"message {uid}" if column == "subject" else "" for column in TEXT_COLUMNS)
    # A day apart each: the sample is spread by the time a message was sent.
    return IndexedMessage(uid, 1_700_000_000 + uid * 86_400, 20231114, 100, (), False, texts)


def _filled(
    store: IndexStore, count: int
) -> tuple[VectorStore, dict[tuple[str, int], npt.NDArray[np.float32]]]:
    """``count`` messages in INBOX, message i with i % 3 + 1 passages of random directions."""
    store.put(store.start_folder("INBOX", 9), [_message(uid) for uid in range(1, count + 1)])
    rng = np.random.default_rng(80)
    put = {}
    for uid in range(1, count + 1):
        rows = rng.standard_normal((uid % 3 + 1, DIMENSIONS)).astype(np.float32)
        put["INBOX", uid] = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    vectors = vector_store(store)
    assert vectors is not None
    vectors.put_vectors(MODEL, put)
    return vectors, put


def _same_directions(found: npt.NDArray[np.float32], put: npt.NDArray[np.float32]) -> None:
    assert found.shape == put.shape
    cosines = np.sum(found * put, axis=1) / np.linalg.norm(found, axis=1)
    assert cosines.min() > 0.99, cosines


def test_the_vectors_of_the_messages_asked_for(store: IndexStore) -> None:
    vectors, put = _filled(store, 12)
    found = vectors.vectors_of([("INBOX", 2), ("INBOX", 7), ("INBOX", 99), ("Archive", 2)])
    assert sorted(found) == [("INBOX", 2), ("INBOX", 7)]
    for place, rows in found.items():
        _same_directions(rows, put[place])
    assert vectors.vectors_of([]) == {}


def test_a_sample_is_every_message_where_there_are_few(store: IndexStore) -> None:
    vectors, put = _filled(store, 12)
    found = vectors.vector_sample(50)
    assert sorted(found) == sorted(put)
    for place, rows in found.items():
        _same_directions(rows, put[place])


def test_a_sample_of_a_larger_index_spreads_over_it(store: IndexStore) -> None:
    vectors, _ = _filled(store, 120)
    found = vectors.vector_sample(10)
    uids = sorted(uid for _, uid in found)
    assert 5 <= len(uids) <= 10, uids
    # Old and new mail alike: some of the first and of the last third.
    assert uids[0] <= 40 and uids[-1] > 80, uids


def test_an_index_without_vectors_reads_none(store: IndexStore) -> None:
    store.put(store.start_folder("INBOX", 9), [_message(1)])
    vectors = vector_store(store)
    assert vectors is not None
    assert vectors.vectors_of([("INBOX", 1)]) == {}
    assert vectors.vector_sample(10) == {}

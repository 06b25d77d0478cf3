"""The pass behind the words index that gives its messages vectors (issue 80), in a running server on
Dovecot, with SQLite, sqlite+tantivy and PostgreSQL (Debian's, and one that carries pgvector): once the words are built every message gains vectors of the
shipped model (``index_meaning`` on, the default), found by meaning through the searches' own store; a
message expunged by another client loses them with its row; an index built while ``index_meaning`` was
off gains them when it is turned on, its words kept."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import Config, IndexSettings
from mail_imap_mcp.index.runtime import AccountIndex
from mail_imap_mcp.index.sync_vectors import MeaningStatus
from mail_imap_mcp.meaning.model import model_for
from tests.support.clients.in_process import open_client
from tests.support.clients.index_clients import SEARCH, index_config, wait_ready
from tests.support.mail.mailgen import plain_message
from tests.support.patience import eventually
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.postgres import index_table, on_engine

pytestmark = pytest.mark.anyio

MAIL = [
    ("Heating in the flat", "The radiator in the living room is cold again; the landlord will send someone."),
    ("Invoice 4411 - homepage overhaul", "Amount due for the new landing pages: 3,200 EUR by Friday."),
    ("Team offsite", "We meet at the lake on Saturday morning. Bring walking shoes and a jacket."),
    ("Your parcel is on its way", "The courier delivers between 9 and 12 tomorrow."),
]


@pytest.fixture(params=["sqlite", "sqlite+tantivy", "postgresql", "postgresql+pgvector"])
def on_index(request: pytest.FixtureRequest) -> Callable[[Config], Config]:
    """A config with its index in the engine of the case (PostgreSQL: Debian's, without pgvector, or
    one that carries it; one database for the whole test)."""
    name = str(request.param)
    if not name.startswith("postgresql"):
        return lambda config: on_engine(config, name, None)
    server = request.getfixturevalue("postgres_vector" if name.endswith("pgvector") else "postgres")
    index = IndexSettings.model_validate(index_table(server))
    return lambda config: config.model_copy(update={"index": index})


@pytest.fixture
def seeded(dovecot: Dovecot) -> str:
    user = dovecot.new_user()
    dovecot.seed(
        user,
        "INBOX",
        [
            plain_message(subject, body, message_id=f"<m{n}@meaning.test>")
            for n, (subject, body) in enumerate(MAIL)
        ],
    )
    return user


def complete(index: AccountIndex) -> MeaningStatus | None:
    status = index.meaning
    return status if status is not None and status.counts is not None and not status.counts.partial else None


def nearest_subject(index: AccountIndex, config: Config, question: str) -> str:
    """The subject of the message nearest ``question`` by the index's vectors (made by the model its
    config names)."""
    indexer = index.search_indexer()
    assert indexer is not None
    store = indexer.store
    model = model_for(config)
    [hit] = store.nearest(model.embed([question])[0], None, ["INBOX"], 1)  # type: ignore[attr-defined]
    return str(hit.texts[0])


async def test_every_message_gains_vectors_behind_the_words_and_loses_them_with_its_row(
    dovecot: Dovecot, seeded: str, on_index: Callable[[Config], Config], tmp_path: Path
) -> None:
    config = on_index(index_config(dovecot, seeded, tmp_path))
    assert config.meaning_indexed("default")
    app = AppContext.from_config(config)
    async for mcp in open_client(config, app):
        assert await wait_ready(mcp) == "ready"
        index = app.index_of("default")
        assert index is not None
        status = eventually(partial(complete, index), within=60, what="every message has vectors")
        assert status.counts is not None and status.counts.with_vectors == len(MAIL)
        assert status.words() == "ready"
        assert app.index_lifecycle.meaning_state(app.caller, "default") == "ready"
        assert (
            nearest_subject(index, config, "what did the landlord say about the heating")
            == "Heating in the flat"
        )
        assert (
            nearest_subject(index, config, "the bill for the website redesign")
            == "Invoice 4411 - homepage overhaul"
        )
        with dovecot.connect(seeded, tls=False, starttls=False) as other:
            other.select_folder("INBOX")
            other.delete_messages([1])
            other.expunge()
        await mcp.ok(SEARCH, {"query": "radiator"})  # the search's own sync takes the expunge in
        assert (
            nearest_subject(index, config, "what did the landlord say about the heating")
            != "Heating in the flat"
        )


async def test_an_index_built_without_vectors_gains_them_when_they_are_turned_on(
    dovecot: Dovecot, seeded: str, on_index: Callable[[Config], Config], tmp_path: Path
) -> None:
    config = on_index(index_config(dovecot, seeded, tmp_path, index_meaning=False))
    assert not config.meaning_indexed("default")
    app = AppContext.from_config(config)
    async for mcp in open_client(config, app):
        assert await wait_ready(mcp) == "ready"
        index = app.index_of("default")
        assert index is not None and index.meaning is None
        assert app.index_lifecycle.meaning_state(app.caller, "default") is None
        indexer = index.search_indexer()
        assert indexer is not None and indexer.store.vector_model() is None  # type: ignore[attr-defined]
    on = on_index(index_config(dovecot, seeded, tmp_path))
    app = AppContext.from_config(on)
    async for mcp in open_client(on, app):
        assert await wait_ready(mcp) == "ready"
        index = app.index_of("default")
        assert index is not None
        status = eventually(partial(complete, index), within=60, what="the old index gained vectors")
        assert status.counts is not None and status.counts.with_vectors == status.counts.indexed == len(MAIL)
        assert nearest_subject(index, config, "when does my package arrive") == "Your parcel is on its way"

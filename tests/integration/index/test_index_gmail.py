"""The local index on Gmail (X-GM-EXT-1), through a real MCP client against the Gmail emulation: only All
Mail is indexed (Spam and Trash once a search asks for them), each message once, keyed by X-GM-MSGID with
its labels; a search of every folder returns a message once with its labels, ``label:`` and a label
folder's ``in:`` are answered from the stored labels, and a label another client adds shows after the
freshness check. On SQLite every test; on sqlite+tantivy and PostgreSQL what is each engine's own (its
rows, and freshness after another client's change): that they find by label and global id as SQLite
does is test_index_store_contract's, store to store."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from functools import partial
from pathlib import Path
from typing import Any

import psycopg
import pytest

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import Config
from mail_imap_mcp.credentials.secrets import index_password
from tests.support.accounts import account_settings
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.clients.index_clients import index_file, wait_ready
from tests.support.servers.gmail import ALL_MAIL, TRASH, Gmail, seed_labelled
from tests.support.servers.postgres import IndexEngineParam, on_engine

pytestmark = pytest.mark.anyio

SEARCH = "imap_search_messages"
RANKED = "best match first"


def labelled_config(server: Gmail, user: str, index_dir: Path, engine: IndexEngineParam) -> Config:
    """The labelled mail of ``user`` on ``server`` (seeded now), indexed in ``index_dir`` or ``engine``."""
    seed_labelled(server, user)
    config = make_config({"default": account_settings(server, user)}, index=True, index_dir=str(index_dir))
    found: Config = on_engine(config, *engine)
    return found


async def indexed_client(config: Config) -> AsyncIterator[EnvelopeClient]:
    """A client of ``config`` once its index is built."""
    async for mcp in open_client(config, AppContext.from_config(config)):
        assert await wait_ready(mcp) == "ready"
        yield mcp


Row = tuple[str, int | None, str]
#: A test of what the engines answer alike (test_index_store_contract compares them): on SQLite alone.
ON_SQLITE = pytest.mark.parametrize("index_engine", ["sqlite"], indirect=True)


@pytest.fixture
async def indexed(
    gmail: Gmail, tmp_path: Path, index_engine: IndexEngineParam
) -> AsyncIterator[tuple[EnvelopeClient, str, Callable[[], list[Row]]]]:
    user = gmail.new_user("gi")
    config = labelled_config(gmail, user, tmp_path / "ix", index_engine)
    async for mcp in indexed_client(config):
        yield mcp, user, partial(rows, config)


def rows(config: Config) -> list[Row]:
    """Every indexed message of ``config``'s index: its folder, global id and labels."""
    statement = "SELECT f.name, m.global_id, m.labels FROM {s}messages m JOIN {s}folders f ON f.id = m.folder"
    if config.index.index_engine != "postgresql":  # sqlite, sqlite+tantivy: the SQLite file
        with sqlite3.connect(index_file(Path(config.server.index_dir or ""))) as db:
            found = db.execute(statement.format(s="")).fetchall()
    else:
        with psycopg.connect(config.index.index_url or "", password=index_password(config.index)) as conn:
            found = conn.execute(statement.format(s="mimx_default.")).fetchall()
    return [(str(name), None if gid is None else int(gid), str(labels)) for name, gid, labels in found]


def by_subject(data: dict[str, Any]) -> dict[str, list[str] | None]:
    subjects = [m["subject"] for m in data["messages"]]
    assert len(subjects) == len(set(subjects)), subjects  # each message once
    return {m["subject"]: m.get("labels") for m in data["messages"]}


async def test_a_message_with_two_labels_is_indexed_once_in_all_mail(
    indexed: tuple[EnvelopeClient, str, Callable[[], list[Row]]],
) -> None:
    _, _, stored = indexed
    found = stored()
    assert {folder for folder, _, _ in found} == {ALL_MAIL}  # INBOX, Work, Important: not indexed apart
    assert len(found) == 4  # one, two, three, four (binned is in Trash, which no search asked for yet)
    ids = [global_id for _, global_id, _ in found]
    assert None not in ids and len(set(ids)) == 4
    assert sorted(labels.split("\n") for _, _, labels in found if "Work" in labels) == [
        ["Work"],
        ["Work", "\\Important", "\\Inbox"],
    ]


@ON_SQLITE
async def test_a_search_of_every_folder_returns_each_message_once_with_its_labels(
    indexed: tuple[EnvelopeClient, str, Callable[[], list[Row]]],
) -> None:
    mcp, _, stored = indexed
    envelope = await mcp.call(SEARCH, {"sort": "relevance", "query": "about", "limit": 20})
    assert envelope["summary"].endswith(RANKED), envelope["summary"]
    assert by_subject(envelope["data"]) == {
        "About one": ["Important", "Inbox", "Work"],
        "About two": ["Inbox"],
        "About three": ["Work"],
        "About four": None,  # archived without a label: compact leaves the empty list out
    }
    # in:anywhere adds Trash (and Spam): indexed now, on request, and still each message once.
    anywhere = await mcp.call(SEARCH, {"sort": "relevance", "query": "about in:anywhere", "limit": 20})
    assert anywhere["summary"].endswith(RANKED), anywhere["summary"]
    assert set(by_subject(anywhere["data"])) == {
        "About one",
        "About two",
        "About three",
        "About four",
        "About binned",
    }
    assert {folder for folder, _, _ in stored()} == {ALL_MAIL, TRASH}


@ON_SQLITE
async def test_label_and_a_label_folder_are_answered_from_the_stored_labels(
    indexed: tuple[EnvelopeClient, str, Callable[[], list[Row]]],
) -> None:
    mcp, _, stored = indexed
    for query in ("label:work", "about in:Work", "about label:WORK"):
        envelope = await mcp.call(SEARCH, {"sort": "relevance", "query": query, "limit": 20})
        assert envelope["summary"].endswith(RANKED), (query, envelope["summary"])
        assert set(by_subject(envelope["data"])) == {"About one", "About three"}, query
    inbox = await mcp.call(SEARCH, {"query": "about in:inbox", "limit": 20})
    assert set(by_subject(inbox["data"])) == {"About one", "About two"}
    important = await mcp.call(SEARCH, {"query": "is:important", "limit": 20})
    assert set(by_subject(important["data"])) == {"About one"}
    assert {folder for folder, _, _ in stored()} == {ALL_MAIL}  # no label folder was indexed apart


async def test_a_label_added_by_another_client_shows_after_the_freshness_check(
    indexed: tuple[EnvelopeClient, str, Callable[[], list[Row]]], gmail: Gmail
) -> None:
    mcp, user, _ = indexed
    before = await mcp.call(SEARCH, {"query": "label:travel", "limit": 20})
    assert before["data"]["messages"] == []
    gmail.label(user, "INBOX", [[], ["Travel"]])  # "two" gains Travel
    after = await mcp.call(SEARCH, {"sort": "relevance", "query": "label:travel", "limit": 20})
    assert after["summary"].endswith(RANKED), after["summary"]
    assert by_subject(after["data"]) == {"About two": ["Inbox", "Travel"]}
    every = by_subject(await mcp.ok(SEARCH, {"query": "about", "limit": 20}))
    assert every["About two"] == ["Inbox", "Travel"]


async def test_without_labels_label_is_refused_as_without_the_index(
    gmail_unmarked: Gmail, tmp_path: Path
) -> None:
    """Regression guard: the index keeps no labels of a server without X-GM-EXT-1, so it does not answer
    ``label:`` with an empty page; the server's path refuses it as it does without the index."""
    user = gmail_unmarked.new_user("gu")
    async for mcp in indexed_client(labelled_config(gmail_unmarked, user, tmp_path / "ix", ("sqlite", None))):
        refused = await mcp.fail(SEARCH, {"query": "label:work"}, "unsupported")
        assert refused["error"]["details"]["parameter"] == "query" and "Gmail" in refused["error"]["message"]
        # Every folder is indexed as itself there (no All Mail): a word search is ranked from the index.
        ranked = await mcp.call(SEARCH, {"query": "about", "sort": "relevance", "limit": 20})
        assert ranked["summary"].endswith(RANKED), ranked["summary"]

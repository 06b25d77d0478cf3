"""The local index on Gmail (X-GM-EXT-1), through a real MCP client against the Gmail emulation: only All
Mail is indexed (Spam and Trash once a search asks for them), each message once, keyed by X-GM-MSGID with
its labels; a search of every folder returns a message once with its labels, ``label:`` and a label
folder's ``in:`` are answered from the stored labels, and a label another client adds shows after the
freshness check."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mail_imap_mcp.app import AppContext
from tests.support.accounts import account_settings
from tests.support.clients import make_config, open_client
from tests.support.envelope_client import EnvelopeClient
from tests.support.gmail import ALL_MAIL, TRASH, Gmail, seed_labelled
from tests.support.index_clients import wait_ready

pytestmark = pytest.mark.anyio

SEARCH = "imap_search_messages"
RANKED = "best match first"


async def indexed_client(server: Gmail, user: str, index_dir: Path) -> AsyncIterator[EnvelopeClient]:
    """A client of the labelled mail of ``user`` on ``server``, indexed in ``index_dir`` (built first)."""
    seed_labelled(server, user)
    config = make_config({"default": account_settings(server, user)}, index=True, index_dir=str(index_dir))
    async for mcp in open_client(config, AppContext.from_config(config)):
        assert await wait_ready(mcp) == "ready"
        yield mcp


@pytest.fixture
async def indexed(gmail: Gmail, tmp_path: Path) -> AsyncIterator[tuple[EnvelopeClient, str, Path]]:
    user = gmail.new_user("gi")
    async for mcp in indexed_client(gmail, user, tmp_path / "ix"):
        yield mcp, user, tmp_path / "ix" / "default.sqlite3"


def rows(path: Path) -> list[tuple[str, int | None, str]]:
    """Every indexed message: its folder, global id and labels."""
    with sqlite3.connect(path) as db:
        found = db.execute(
            "SELECT f.name, m.global_id, m.labels FROM messages m JOIN folders f ON f.id = m.folder"
        ).fetchall()
    return [(str(name), global_id, str(labels)) for name, global_id, labels in found]


def by_subject(data: dict[str, Any]) -> dict[str, list[str] | None]:
    subjects = [m["subject"] for m in data["messages"]]
    assert len(subjects) == len(set(subjects)), subjects  # each message once
    return {m["subject"]: m.get("labels") for m in data["messages"]}


async def test_a_message_with_two_labels_is_indexed_once_in_all_mail(
    indexed: tuple[EnvelopeClient, str, Path],
) -> None:
    _, _, path = indexed
    found = rows(path)
    assert {folder for folder, _, _ in found} == {ALL_MAIL}  # INBOX, Work, Important: not indexed apart
    assert len(found) == 4  # one, two, three, four (binned is in Trash, which no search asked for yet)
    ids = [global_id for _, global_id, _ in found]
    assert None not in ids and len(set(ids)) == 4
    assert sorted(labels.split("\n") for _, _, labels in found if "Work" in labels) == [
        ["Work"],
        ["Work", "\\Important", "\\Inbox"],
    ]


async def test_a_search_of_every_folder_returns_each_message_once_with_its_labels(
    indexed: tuple[EnvelopeClient, str, Path],
) -> None:
    mcp, _, path = indexed
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
    assert {folder for folder, _, _ in rows(path)} == {ALL_MAIL, TRASH}


async def test_label_and_a_label_folder_are_answered_from_the_stored_labels(
    indexed: tuple[EnvelopeClient, str, Path],
) -> None:
    mcp, _, path = indexed
    for query in ("label:work", "about in:Work", "about label:WORK"):
        envelope = await mcp.call(SEARCH, {"sort": "relevance", "query": query, "limit": 20})
        assert envelope["summary"].endswith(RANKED), (query, envelope["summary"])
        assert set(by_subject(envelope["data"])) == {"About one", "About three"}, query
    inbox = await mcp.call(SEARCH, {"query": "about in:inbox", "limit": 20})
    assert set(by_subject(inbox["data"])) == {"About one", "About two"}
    important = await mcp.call(SEARCH, {"query": "is:important", "limit": 20})
    assert set(by_subject(important["data"])) == {"About one"}
    assert {folder for folder, _, _ in rows(path)} == {ALL_MAIL}  # no label folder was indexed apart


async def test_a_label_added_by_another_client_shows_after_the_freshness_check(
    indexed: tuple[EnvelopeClient, str, Path], gmail: Gmail
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
    async for mcp in indexed_client(gmail_unmarked, user, tmp_path / "ix"):
        refused = await mcp.fail(SEARCH, {"query": "label:work"}, "unsupported")
        assert refused["error"]["details"]["parameter"] == "query" and "Gmail" in refused["error"]["message"]
        # Every folder is indexed as itself there (no All Mail): a word search is ranked from the index.
        ranked = await mcp.call(SEARCH, {"query": "about", "sort": "relevance", "limit": 20})
        assert ranked["summary"].endswith(RANKED), ranked["summary"]

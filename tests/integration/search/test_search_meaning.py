"""Search by meaning through a real MCP client on Dovecot, with the local index and the shipped model:
``about`` finds the mail a description means though it shares no word with it, every filter still
bounds it, its pages are exact while mail arrives, each hit says why it is there; ``like`` finds the rest
of a topic; and the arguments are listed, within their share of the surface, only where an account's
index keeps vectors (elsewhere a call with them is ``invalid_input`` naming the setting)."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.capabilities import READ_ONLY_BUDGET, SEARCHING_BY_MEANING
from mail_imap_mcp.config import Config
from mail_imap_mcp.index.engines.sqlite.vector_layout import KEY_BASE
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import open_client
from tests.support.clients.index_clients import SEARCH, index_config, index_file, indexed_client
from tests.support.mail.mailgen import plain_message
from tests.support.patience import eventually_async
from tests.support.servers.matrix import MatrixServer
from tests.support.shared.index_search import other_client
from tests.support.shared.search_meaning import (
    ABOUT,
    LANDLORD,
    MAIL,
    every_message_has_vectors,
    seed,
    subjects,
)
from tests.support.surface import surface_bytes

pytestmark = pytest.mark.anyio


@pytest.fixture
async def meaning(
    dovecot: MatrixServer, tmp_path: Path
) -> AsyncIterator[tuple[EnvelopeClient, MatrixServer, str]]:
    user = dovecot.new_user()
    seed(dovecot, user)
    async for mcp, _app, _config in indexed_client(dovecot, user, tmp_path):
        await every_message_has_vectors(mcp)
        yield mcp, dovecot, user


async def test_about_finds_the_mail_it_describes_by_words_and_meaning_and_says_why(
    meaning: tuple[EnvelopeClient, MatrixServer, str],
) -> None:
    mcp, _, _ = meaning
    envelope = await mcp.call(SEARCH, {"about": ABOUT, "limit": 3})
    data = envelope["data"]
    assert envelope["summary"].endswith("best match first") and data["status"] == "ok", envelope
    why = {message["subject"]: message["why"] for message in data["messages"]}
    assert set(subjects(data)[:2]) == {"Radiators", "Central heating"}, why
    assert why["Central heating"] == "both" and why["Radiators"] == "meaning"
    assert all(reason in ("words", "meaning", "both") for reason in why.values())
    # A description sharing no word with the mail it means: found by meaning alone, first.
    tickets = await mcp.ok(SEARCH, {"about": "plane tickets", "limit": 1, "fields": "full"})
    assert tickets["messages"][0]["subject"] == "Your trip to Lisbon"
    assert tickets["messages"][0]["why"] == "meaning"


async def test_every_filter_still_bounds_a_search_by_meaning(
    meaning: tuple[EnvelopeClient, MatrixServer, str],
) -> None:
    mcp, _, _ = meaning
    landlord = await mcp.ok(SEARCH, {"about": ABOUT, "query": "from:brandt"})
    assert set(subjects(landlord)[:2]) == {"Radiators", "Central heating"}
    assert set(subjects(landlord)) <= {"Radiators", "Central heating", "Rent from April"}
    inbox = await mcp.ok(SEARCH, {"about": ABOUT, "mailbox": "INBOX", "subject": "radiators"})
    assert subjects(inbox) == ["Radiators"]
    nothing = await mcp.ok(SEARCH, {"about": ABOUT, "mailboxes": ["*"], "since": "2100-01-01"})
    assert nothing["messages"] == [] and nothing["total"] == 0


async def test_pages_by_cursor_list_the_first_pages_order_while_mail_arrives(
    meaning: tuple[EnvelopeClient, MatrixServer, str],
) -> None:
    mcp, server, user = meaning
    whole = await mcp.ok(SEARCH, {"about": ABOUT, "limit": 50})
    first = await mcp.ok(SEARCH, {"about": ABOUT, "limit": 1})
    assert first["messages"][0]["message_id"] == whole["messages"][0]["message_id"]
    with other_client(server, user) as other:
        other.append(
            "INBOX",
            plain_message("Radiator", "The radiator is broken, the rooms are freezing.", from_=LANDLORD),
        )
    listed = [first["messages"][0]["message_id"]]
    page = first
    while "next_cursor" in page:
        page = await mcp.ok(SEARCH, {"about": ABOUT, "limit": 1, "cursor": page["next_cursor"]})
        listed += [message["message_id"] for message in page["messages"]]
    assert listed == [message["message_id"] for message in whole["messages"]]

    async def first_once_it_has_vectors() -> bool | None:
        # A new search finds it at once (by its words), first once the background pass gave it vectors.
        again = await mcp.ok(SEARCH, {"about": ABOUT, "limit": 10})
        assert "Radiator" in subjects(again)
        return True if subjects(again)[0] == "Radiator" else None

    await eventually_async(first_once_it_has_vectors, within=60, what="the new message ranked first")
    other_search = await mcp.call(SEARCH, {"about": "a trip", "cursor": first["next_cursor"]})
    assert other_search["error"]["code"] == "invalid_input"
    assert other_search["error"]["details"]["parameter"] == "cursor"


async def test_like_finds_the_rest_of_a_topic_without_the_message_itself(
    meaning: tuple[EnvelopeClient, MatrixServer, str],
) -> None:
    mcp, _, _ = meaning
    radiators = (await mcp.ok(SEARCH, {"query": "subject:radiators"}))["messages"][0]["message_id"]
    like = await mcp.ok(SEARCH, {"like": radiators, "limit": 3})
    assert radiators not in [message["message_id"] for message in like["messages"]]
    assert subjects(like)[0] == "Central heating" and like["messages"][0]["why"] == "meaning"
    gone = await mcp.call(SEARCH, {"like": radiators.rsplit(":", 1)[0] + ":9999"})
    assert gone["error"]["code"] == "not_found"
    foreign = await mcp.call(SEARCH, {"like": "imap:other:INBOX:1:1"})
    assert foreign["error"]["code"] == "invalid_input" and foreign["error"]["details"]["parameter"] == "like"


async def test_while_messages_have_no_vectors_the_answer_is_partial_with_their_count(
    meaning: tuple[EnvelopeClient, MatrixServer, str], tmp_path: Path
) -> None:
    mcp, _, _ = meaning

    async def partial() -> dict[str, Any] | None:
        # Two messages' vectors dropped, as in an index built before vectors were kept (the background pass
        # gives them back: dropped again on each try).
        with sqlite3.connect(index_file(tmp_path / "ix")) as db:
            db.execute(
                f"DELETE FROM vectors WHERE key IN (SELECT {KEY_BASE} - id FROM messages ORDER BY id LIMIT 2)"
            )
        envelope: dict[str, Any] = await mcp.call(SEARCH, {"about": ABOUT, "mailbox": "INBOX"})
        return envelope if envelope["data"]["status"] == "partial" else None

    envelope = await eventually_async(partial, within=60, what="an answer without two messages' vectors")
    data = envelope["data"]
    # Of one mailbox, yet no message that could not be read: an issue of the ranking.
    assert envelope["meta"]["warnings"] == ["1 issue(s); see data.issues."], envelope["meta"]
    (issue,) = data["issues"]
    assert issue["code"] == "meaning_partial" and issue["message"].startswith(f"2 of the {len(MAIL)} ")
    assert "Central heating" in subjects(data)  # found by its words meanwhile, if not by its meaning


async def test_regression_a_folder_without_vectors_outside_the_search_does_not_make_it_partial(
    dovecot: MatrixServer, tmp_path: Path
) -> None:
    """Archive's message has no vectors yet: a search of INBOX alone is complete (it used to say
    "partial", counting every mailbox's messages), one of Archive says so with Archive's count."""
    user = dovecot.new_user()
    seed(dovecot, user)
    dovecot.seed(user, "Archive", [plain_message("Boiler", "The boiler is fixed.", from_=LANDLORD)])
    async for mcp, _app, _config in indexed_client(dovecot, user, tmp_path):
        await every_message_has_vectors(mcp)
        dropped = functools.partial(_without_archive_s_vectors, mcp, tmp_path)
        inbox, archive = await eventually_async(dropped, within=60, what="Archive's vectors dropped")
        assert inbox["status"] == "ok" and "issues" not in inbox, inbox
        (issue,) = archive["issues"]
        assert issue["code"] == "meaning_partial" and issue["message"].startswith("1 of the 1 "), issue


async def _without_archive_s_vectors(
    mcp: EnvelopeClient, tmp_path: Path
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """``about`` of INBOX, then of Archive, once Archive's vectors were dropped (the background pass
    gives them back: None where it had before Archive's search)."""
    with sqlite3.connect(index_file(tmp_path / "ix")) as db:
        db.execute(
            f"DELETE FROM vectors WHERE key IN (SELECT {KEY_BASE} - m.id FROM messages m "
            "JOIN folders f ON f.id = m.folder WHERE f.name = 'Archive')"
        )
    inbox = await mcp.ok(SEARCH, {"about": ABOUT, "mailbox": "INBOX"})
    archive = await mcp.ok(SEARCH, {"about": ABOUT, "mailbox": "Archive"})
    # Archive without them as it was searched: so it was as INBOX was, searched before.
    return (inbox, archive) if archive["status"] == "partial" else None


async def test_an_order_other_than_relevance_or_both_about_and_like_are_invalid_input(
    meaning: tuple[EnvelopeClient, MatrixServer, str],
) -> None:
    mcp, _, _ = meaning
    by_date = await mcp.call(SEARCH, {"about": ABOUT, "sort": "date"})
    assert by_date["error"]["code"] == "invalid_input" and by_date["error"]["details"]["parameter"] == "sort"
    assert (await mcp.call(SEARCH, {"about": ABOUT, "sort": "relevance"}))["success"]
    both = await mcp.call(SEARCH, {"about": ABOUT, "like": "imap:default:INBOX:1:1"})
    assert both["error"]["code"] == "invalid_input" and both["error"]["details"]["parameter"] == "like"


async def test_regression_about_during_a_build_says_why_in_its_own_words(
    dovecot: MatrixServer, tmp_path: Path
) -> None:
    """Issue 89 item 18: the failure said "the server answered this search" (it did not: only the index
    answers by meaning) and ended the reason in "..". It says the index is not ready, once."""
    user = dovecot.new_user()
    seed(dovecot, user)
    config = index_config(dovecot, user, tmp_path)
    app = AppContext.from_config(config)
    index = app.indexes["default"]
    index.lock.acquire()  # the build waits for it: the index stays "building"
    try:
        async for mcp in open_client(config, app):
            error = (await mcp.call(SEARCH, {"about": ABOUT, "mailbox": "INBOX"}))["error"]
            assert error["code"] == "unavailable" and error["details"]["parameter"] == "about", error
            assert "the local index of this account is not ready (building" in error["message"], error
            assert "server answered" not in error["message"] and ".." not in error["message"], error
    finally:
        index.lock.release()


def _search_schema(wire: list[dict[str, Any]]) -> dict[str, Any]:
    tool = next(tool for tool in wire if tool["name"] == SEARCH)
    properties: dict[str, Any] = tool["inputSchema"]["properties"]
    return properties


async def _listed(config: Config) -> tuple[int, dict[str, Any]]:
    """The surface a model reads, in bytes, and the search tool's arguments as listed."""
    wire: list[dict[str, Any]] = []
    instructions = ""
    async for mcp in open_client(config):
        listed = await mcp.client.list_tools()
        instructions = mcp.client.instructions or ""
        wire = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed.tools]
    return surface_bytes(instructions, wire)[0], _search_schema(wire)


async def test_about_and_like_are_listed_only_where_the_index_keeps_vectors_within_their_share(
    dovecot: MatrixServer, tmp_path: Path
) -> None:
    user = dovecot.new_user()
    on = index_config(dovecot, user, tmp_path)
    with_meaning, listed = await _listed(on)
    assert {"about", "like"} <= set(listed)
    for words in (listed["about"]["description"], listed["like"]["description"]):
        assert words.count(". ") == 0 and words.endswith(".")  # a sentence each
    off = on.model_copy(update={"server": on.server.model_copy(update={"index_meaning": False})})
    without, hidden = await _listed(off)
    assert not {"about", "like"} & set(hidden)
    assert without <= READ_ONLY_BUDGET, without
    assert with_meaning - without <= SEARCHING_BY_MEANING.share, (with_meaning, without)
    async for mcp in open_client(off):
        refused = await mcp.call(SEARCH, {"about": ABOUT})
        assert refused["error"]["code"] == "invalid_input"
        assert refused["error"]["details"]["setting"] == "index_meaning"
    no_index = on.model_copy(update={"server": on.server.model_copy(update={"index": False})})
    async for mcp in open_client(no_index):
        refused = await mcp.call(SEARCH, {"like": "imap:default:INBOX:1:1"})
        assert (
            refused["error"]["code"] == "invalid_input" and refused["error"]["details"]["setting"] == "index"
        )

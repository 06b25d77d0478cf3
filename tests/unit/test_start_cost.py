"""What a server's start reads: listing the tools reads no model of search by meaning (it cost a started
server 0.3 CPU-seconds where an account keeps an index); a call that ranks by meaning reads it."""

from __future__ import annotations

from typing import Any

import pytest

from mail_imap_mcp.config import Config
from mail_imap_mcp.meaning import model as meaning_model
from tests.support.clients.in_process import open_client

#: An account whose server is never reached: listing the tools asks none.
ACCOUNT = {"host": "imap.example.org", "username": "me", "password_env": "P"}


def _indexed(tmp_path: Any, **index: Any) -> Config:
    return Config.model_validate(
        {
            "accounts": {"a": ACCOUNT},
            "server": {"index": True, "index_dir": str(tmp_path / "ix")},
            "index": index,
        }
    )


async def _search_arguments(config: Config) -> set[str]:
    async for mcp in open_client(config):
        listed = await mcp.client.list_tools()
        (search,) = [tool for tool in listed.tools if tool.name == "imap_search_messages"]
        return set(search.input_schema["properties"])
    raise AssertionError("no client")


@pytest.mark.anyio
async def test_regression_listing_the_tools_reads_no_meaning_model_and_lists_about_where_its_files_are(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(meaning_model, "_loaded", {})  # no model read in this process yet
    arguments = await _search_arguments(_indexed(tmp_path))
    assert {"about", "like"} <= arguments  # the shipped model's files are installed
    assert meaning_model._loaded == {}


@pytest.mark.anyio
async def test_a_model_directory_without_a_model_is_not_listed_and_nothing_is_read(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(meaning_model, "_loaded", {})
    empty = tmp_path / "empty"
    empty.mkdir()
    arguments = await _search_arguments(_indexed(tmp_path, meaning_model_dir=str(empty)))
    assert "about" not in arguments and "like" not in arguments
    assert meaning_model._loaded == {}

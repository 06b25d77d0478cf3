"""What a process of ours loads as it starts (the tests start hundreds): listing the tools reads no model of
search by meaning (it cost a started server 0.3 CPU-seconds where an account keeps an index; a call that
ranks by meaning reads it); the command line's parser loads no command's modules (``check`` took 0.52-0.57
CPU-seconds with the sign-in's, setup's and the send services' imports, 0.41 without); serving loads no
numpy nor the meaning model's readers. Counted in child processes: no timed assertion."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from mail_imap_mcp.config import Config
from mail_imap_mcp.meaning import model as meaning_model
from tests.support.clients.in_process import open_client
from tests.support.patience import patient

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


#: What the command line's parser may not load before it knows the command (``check`` and ``serve`` need none).
COMMANDS_MODULES = {
    "mail_imap_mcp.cli.login",
    "mail_imap_mcp.cli.setup",
    "mail_imap_mcp.cli.setup_login",
    "mail_imap_mcp.cli.setup_submission",
    "mail_imap_mcp.cli.index",
    "mail_imap_mcp.credentials.sign_in_flow",
    "mail_imap_mcp.net.loopback_redirect",
    "mail_imap_mcp.call",
    "mail_imap_mcp.services.draft_attachments",
    "mail_imap_mcp.services.send_draft",
    "mail_imap_mcp.index",
}
#: What serving may not load before a call needs it: the meaning model's readers.
MODEL_READERS = {"numpy", "wordllama", "safetensors", "tokenizers"}
#: One child process: the modules loaded by the command line's import, then by the index command's, then by
#: serving's.
PROBE = """
import json, sys
import mail_imap_mcp.cli
parsed = sorted(sys.modules)
import mail_imap_mcp.cli.index
indexing = sorted(sys.modules)
import mail_imap_mcp.transport.stdio
print(json.dumps([parsed, indexing, sorted(sys.modules)]))
"""


def test_the_command_line_loads_no_commands_modules_indexing_no_server_and_serving_no_model_reader() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=patient(60)
    )
    parsed, indexing, serving = (set(names) for names in json.loads(done.stdout))
    assert parsed & COMMANDS_MODULES == set()
    assert "mail_imap_mcp.app" not in indexing  # the index command serves nothing
    assert {name.partition(".")[0] for name in serving} & MODEL_READERS == set()

"""What a process of ours loads as it starts (the tests start hundreds): listing the tools reads no model of
search by meaning (it cost a started server 0.3 CPU-seconds where an account keeps an index; a call that
ranks by meaning reads it); the command line's parser loads no command's modules (``check`` took 0.52-0.57
CPU-seconds with the sign-in's, setup's and the send services' imports, 0.41 without); serving loads no
numpy nor the meaning model's readers, nor what only a call runs: a tool's flow, the services it calls, the
index engine, sending, the IMAP backend (a started server loaded 414 of the package's modules, then 297:
``scripts/startup_cost.py`` counts them), nor the IMAP connection stack (imapclient, tenacity, the sessions,
the watchers) nor authlib, which the first connection or sign-in loads (272). Counted in child processes: no
timed assertion."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mail_imap_mcp.config import Config
from mail_imap_mcp.content import sandbox
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
    # ``check``'s own: its login and submission probes and the failure registry's words
    "mail_imap_mcp.imap.connection",
    "mail_imap_mcp.cli.submission_check",
    "mail_imap_mcp.smtp.client",
    "mail_imap_mcp.credentials.logins",
    "mail_imap_mcp.presentation.failures",
}
#: What serving may not load before a call needs it: the meaning model's readers.
MODEL_READERS = {"numpy", "wordllama", "safetensors", "tokenizers"}
#: What serving may not load before a call runs it: the services a tool calls, the index engine and an index's
#: sync, sending, the IMAP backend and the parsers of mail and documents.
CALLS_MODULES = {
    "mail_imap_mcp.services.search",
    "mail_imap_mcp.services.bulk_runs",
    "mail_imap_mcp.services.draft_compose",
    "mail_imap_mcp.services.send_draft",
    "mail_imap_mcp.services.unsubscribe",
    "mail_imap_mcp.services.attachment_text",
    "mail_imap_mcp.services.message_read",
    "mail_imap_mcp.smtp.client",
    "mail_imap_mcp.imap.backend",
    "mail_imap_mcp.imap.fetch",
    # the connection stack: the pool makes an account's connection at its first use, a watch hub its
    # watcher at its first watch, a sign-in's check its connection when it runs
    "mail_imap_mcp.imap.connection",
    "mail_imap_mcp.imap.watcher",
    "mail_imap_mcp.imap.session",
    "mail_imap_mcp.imap.wire",
    "mail_imap_mcp.imap.parsing",
    "tenacity",
    "imapclient",
    "authlib",  # a sign-in's: the accounts' token sources need none of it
    "mail_imap_mcp.index.runtime",
    "mail_imap_mcp.index.sync",
    "mail_imap_mcp.index.store",
    "mail_imap_mcp.index.engines.sqlite.engine",
    "mail_imap_mcp.content.html_plain",
    "mail_imap_mcp.net.loopback_redirect",
}
#: A tool package's modules a listing reads (its spec and dispatch, its arguments and data); the others are
#: its flows, run by a call.
LISTED_PARTS = {"__init__", "models"}
#: Two child processes: the modules loaded by the command line's import, then by the sign-in commands' and
#: the index command's; and by serving's.
COMMANDS_PROBE = """
import json, sys
import mail_imap_mcp.cli
parsed = sorted(sys.modules)
import mail_imap_mcp.cli.login
signing = sorted(sys.modules)
import mail_imap_mcp.cli.index
print(json.dumps([parsed, signing, sorted(sys.modules)]))
"""
SERVING_PROBE = """
import json, sys
import mail_imap_mcp.cli, mail_imap_mcp.transport.stdio
print(json.dumps(sorted(sys.modules)))
"""


def _loaded(probe: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=patient(60)
    )
    return json.loads(done.stdout)


def test_the_command_line_loads_no_commands_modules_and_signing_in_or_indexing_no_server() -> None:
    parsed, signing, indexing = (set(names) for names in _loaded(COMMANDS_PROBE))
    assert parsed & COMMANDS_MODULES == set()
    assert "mail_imap_mcp.imap.connection" not in signing  # status and logout reach no IMAP server
    assert "mail_imap_mcp.app" not in indexing  # the index command serves nothing
    assert "mail_imap_mcp.imap.connection" not in indexing  # nor --status nor --drop reach a server


def test_serving_loads_no_model_reader_and_nothing_only_a_call_runs() -> None:
    serving = set(_loaded(SERVING_PROBE))
    assert {name.partition(".")[0] for name in serving} & MODEL_READERS == set()
    assert serving & CALLS_MODULES == set()
    flows = {
        name
        for name in serving
        if name.startswith("mail_imap_mcp.tools.")
        and name.count(".") == 3
        and name.rpartition(".")[2] not in LISTED_PARTS
    }
    assert flows == set()  # e.g. tools.apply_to_messages.by_search: loaded by the first call that runs it


#: The child's parsers (each imports its library, pypdf or Pillow, when it runs).
PARSERS = ("_extract", "_pdf", "_office", "_xlsx", "_archive", "_calendar", "_image")
#: What the child has no use for: pydantic's models, the MCP SDK, the event loop, numpy.
NOT_IN_THE_CHILD = {"pydantic", "mcp", "mcp_types", "anyio", "numpy"}
#: The sandbox's child (``content/_child.py``) as it starts (``python -I``, the package from where the server
#: has it) with every parser module of ours, then prints what it loaded.
CHILD_PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import mail_imap_mcp.content._child
for parser in sys.argv[2:]:
    __import__("mail_imap_mcp.content." + parser)
print(json.dumps(sorted(sys.modules)))
"""


def test_the_sandboxs_child_loads_no_model_nor_the_sdk_nor_the_servers_modules() -> None:
    """A child reading one PDF costs its interpreter and its parser's imports (0.17 CPU-seconds, pypdf's
    most of it), not pydantic's models, the MCP SDK or the server's configuration."""
    root = str(Path(sandbox.__file__).resolve().parents[2])
    done = subprocess.run(
        [sys.executable, "-I", "-B", "-c", CHILD_PROBE, root, *PARSERS],
        capture_output=True,
        text=True,
        check=True,
        timeout=patient(60),
    )
    loaded = set(json.loads(done.stdout))
    assert {name.partition(".")[0] for name in loaded} & NOT_IN_THE_CHILD == set()
    helpers = ("_child", "_window", "errors", "text")  # the content package's pure helpers
    allowed = {"mail_imap_mcp", "mail_imap_mcp.content"} | {
        f"mail_imap_mcp.content.{name}" for name in (*PARSERS, *helpers)
    }
    assert {name for name in loaded if name.startswith("mail_imap_mcp")} <= allowed

"""The official TypeScript MCP SDK (pinned in tests/node/package-lock.json) as a client of the HTTP
transport: every read tool, envelopes checked against their outputSchema, a wrong token refused.

scripts/test installs the SDK into .cache/node/ (``ensure_node_client``); the test skips only when
node itself is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.accounts import account_settings
from tests.support.mail import mailgen
from tests.support.patience import patient
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.http_server import http_config, message_with_csv, new_token, start_http_server

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "tests" / "node" / "http_client.mjs"
STALLED_FETCH = ROOT / "tests" / "node" / "stalled_fetch.mjs"
NODE_DIR = ROOT / ".cache" / "node"
READ_TOOLS = {
    "imap_list_accounts",
    "imap_list_mailboxes",
    "imap_search_messages",
    "imap_get_message",
    "imap_get_message_raw",
    "imap_get_attachment",
    "imap_get_thread",
    "imap_get_changes",
    "imap_get_operation",
}


def pinned_sdk_version() -> str:
    lock = json.loads((ROOT / "tests" / "node" / "package-lock.json").read_text())
    return str(lock["packages"]["node_modules/@modelcontextprotocol/sdk"]["version"])


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_typescript_sdk_client_calls_every_read_tool_over_http(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    assert (NODE_DIR / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir(), (
        "the TypeScript SDK is not installed: run scripts/test (it runs npm ci into .cache/node/)"
    )
    messages = [mailgen.plain_message(f"Node {i}", f"body {i}") for i in range(2)]
    dovecot.seed(user, "INBOX", [*messages, message_with_csv("Node report")])
    server = start_http_server(http_config(tmp_path, account_settings(dovecot, user)), token=new_token())
    try:
        assert server.token is not None
        done = subprocess.run(
            ["node", str(SCRIPT), server.url, server.token],
            capture_output=True,
            timeout=patient(120),
            check=False,
            env={"PATH": os.environ["PATH"], "MCP_NODE_DIR": str(NODE_DIR)},
        )
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr.decode()
    report = json.loads(done.stdout)
    assert report["sdk"] == pinned_sdk_version()
    assert report["session"] is True  # a stateful session, as elicitation needs
    assert set(report["tools"]) >= READ_TOOLS
    assert set(report["calls"]) == READ_TOOLS
    # A read tool added later fails here until the script calls it too.
    assert set(report["read_only"]) == READ_TOOLS, "update tests/node/http_client.mjs"
    assert report["calls"]["imap_get_message"] == ["ok", "ok", "invalid_input"]
    assert report["calls"]["imap_get_operation"] == ["not_found"]
    assert report["wrong_token"]["status"] == 401, report["wrong_token"]
    assert "invalid_token" in report["wrong_token"]["message"]
    assert server.token not in server.log()


@pytest.mark.waits  # 5.2 s of an idle, then stalled, client
@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_regression_nodes_fetch_after_a_stalled_event_loop_finds_its_connection_open(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    # "TypeError: fetch failed" of the SDK's client in a loaded run: the server closed a connection
    # after 5 s idle; undici keeps one 4 s, so a client whose event loop stalled past the second
    # between sent its next call on a closed connection ("SocketError: other side closed").
    server = start_http_server(http_config(tmp_path, account_settings(dovecot, user)), token=new_token())
    try:
        done = subprocess.run(
            ["node", str(STALLED_FETCH), server.url, "3900", "1300"],
            capture_output=True,
            text=True,
            timeout=patient(60),
            check=True,
        )
    finally:
        server.stop()
    assert done.stdout.strip() == "401", done.stdout  # served (refused for want of a token), not cut off

"""Changes tokens and cursors after the L2 finding (issue 33, item 5), through an MCP client on Dovecot.

A forged token was taken at its word: a UIDNEXT of 2^32 reached the server (BAD, reported as
``unavailable`` with the server's text), a forged digest became 99,959 "expunged" messages, and a page
cursor carried a changes token of another mailbox unchecked. Now every decoded number is range-checked,
the inner token is checked like the outer one, and both are sealed with a key kept in the state
directory: a fresh server process with the same configuration follows them, one with another key
refuses them as ``invalid_input``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from mail_imap_mcp.imap.changes_token import ChangesToken, PageCursor, since_digest
from tests.support.accounts import PASSWORD_ENV, account_settings, config_toml
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import AccountFactory, make_config, open_client
from tests.support.mail.mailgen import plain_message
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.http_server import SERVER

pytestmark = pytest.mark.anyio


async def test_regression_l2_forged_tokens_and_cursors_are_invalid_input(
    dovecot: Dovecot, user: str, account: AccountFactory
) -> None:
    dovecot.seed(user, "INBOX", [plain_message(f"m{i}", "x") for i in range(5)])
    dovecot.seed(user, "Archive", [])
    async for mcp in open_client(make_config({"default": account(user)})):
        since = (await mcp.ok("imap_get_changes", {}))["changes_token"]
        token = ChangesToken.decode(since, "")
        for forged in (
            ChangesToken("default", "INBOX", token.uidvalidity, uidnext=2**32, modseq=0, older=0),
            ChangesToken("default", "INBOX", token.uidvalidity, uidnext=6, modseq=0, older=99_959),
        ):
            refused = await mcp.fail("imap_get_changes", {"since": forged.encode("")}, "invalid_input")
            assert refused["error"]["details"]["parameter"] == "since"
        # A page cursor bound to this since, carrying the token of another mailbox.
        other = ChangesToken("default", "Archive", token.uidvalidity, 1, 0, 0).encode("")
        cursor = PageCursor(since_digest(since), 3, other).encode("")
        refused = await mcp.fail("imap_get_changes", {"since": since, "cursor": cursor}, "invalid_input")
        assert refused["error"]["details"]["parameter"] == "cursor"


@asynccontextmanager
async def stdio_server(config: Path, dovecot: Dovecot) -> AsyncIterator[EnvelopeClient]:
    params = StdioServerParameters(
        command=SERVER,
        args=["serve", "--config", str(config)],
        env={PASSWORD_ENV: dovecot.password, "PATH": os.environ["PATH"]},
    )
    async with Client(params) as client:
        yield EnvelopeClient(client)


def config_with_state(tmp_path: Path, dovecot: Dovecot, user: str, state: Path) -> Path:
    path = tmp_path / f"config-{state.name}.toml"
    server = f'[server]\nstate_dir = "{state}"\n\n'
    path.write_text(server + config_toml({"default": account_settings(dovecot, user)}))
    return path


async def test_a_fresh_server_process_follows_cursors_and_tokens_another_key_refuses_them(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    dovecot.seed(user, "INBOX", [plain_message(f"m{i}", "x") for i in range(5)])
    same = config_with_state(tmp_path, dovecot, user, tmp_path / "state")
    other = config_with_state(tmp_path, dovecot, user, tmp_path / "elsewhere")
    arguments: dict[str, Any] = {"limit": 2, "mailbox": "*"}
    async with stdio_server(same, dovecot) as mcp:
        first = await mcp.ok("imap_search_messages", arguments)
        since = (await mcp.ok("imap_get_changes", {}))["changes_token"]
    assert (tmp_path / "state" / "seal.key").exists()
    dovecot.seed(user, "INBOX", [plain_message("new", "x")])
    async with stdio_server(same, dovecot) as mcp:  # a restart: the same key, from the state directory
        second = await mcp.ok("imap_search_messages", {**arguments, "cursor": first["next_cursor"]})
        assert len(second["messages"]) == 2
        changes = await mcp.ok("imap_get_changes", {"since": since})
        assert [m["subject"] for m in changes["new"]] == ["new"]
    async with stdio_server(other, dovecot) as mcp:  # another key: refused, saying how to go on
        for tool, parameter, value in (
            ("imap_search_messages", "cursor", first["next_cursor"]),
            ("imap_get_changes", "since", since),
        ):
            call = {**arguments, parameter: value} if parameter == "cursor" else {parameter: value}
            refused = await mcp.fail(tool, call, "invalid_input")
            assert refused["error"]["details"]["parameter"] == parameter
            assert "another key" in refused["error"]["message"]

"""Two server processes on one signed-in account (Claude Desktop's and Claude Code's): each refreshes
under the account's cross-process lock and reads the keychain anew under it, so neither presents a
refresh token the other already spent, and the provider's reuse detection (node-oidc-provider rotates
every refresh token and ends the whole grant when a spent one comes back) never signs them out. Real
``mail-imap-mcp serve`` processes over stdio, the SDK's client, Dovecot checking the tokens, a real
Secret Service.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.support.accounts import config_toml
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.oidc_provider import OidcProvider, wait_for
from tests.support.servers.secret_service import SecretService
from tests.support.shared.sign_in_tokens import ACCOUNT, refresh_refused, sign_in_account
from tests.support.shared.sign_in_tokens import keychain as keychain
from tests.support.shared.sign_in_tokens import refresh_token as refresh_token
from tests.support.shared.sign_in_tokens import user as user

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")

SERVER = str(Path(sys.executable).parent / "mail-imap-mcp")


@asynccontextmanager
async def servers(
    count: int, settings: dict[str, Any], secret_service: SecretService, directory: Path
) -> AsyncIterator[list[EnvelopeClient]]:
    """``count`` server processes on one config (each its own file, as two clients' configs are)."""
    async with AsyncExitStack() as stack:
        clients = []
        for number in range(count):
            config = directory / f"config-{number}.toml"
            config.write_text(config_toml({ACCOUNT: settings}))
            params = StdioServerParameters(
                command=SERVER,
                args=["serve", "--config", str(config)],
                env={**secret_service.environment(), "PATH": os.environ["PATH"]},
            )
            clients.append(EnvelopeClient(await stack.enter_async_context(Client(params))))
        yield clients


async def at_once(clients: list[EnvelopeClient], query: str) -> list[dict[str, Any]]:
    """The same search called in every process at the same moment."""
    envelopes: list[dict[str, Any]] = [{} for _ in clients]

    async def call(number: int) -> None:
        envelopes[number] = await clients[number].call(
            "imap_search_messages", {"mailbox": "INBOX", "query": query}
        )

    async with anyio.create_task_group() as group:
        for number in range(len(clients)):
            group.start_soon(call, number)
    return envelopes


@pytest.mark.anyio
async def test_two_processes_refreshing_at_once_both_stay_signed_in(
    tmp_path: Path,
    oidc: OidcProvider,
    oidc_dovecot: Dovecot,
    user: str,
    secret_service: SecretService,
    keychain: Any,
    refresh_token: str,
) -> None:
    """Each token request takes the provider a second, so the two refreshes overlap unless one waits
    for the other: with the lock, two requests per round, each with the token the other stored."""
    settings = sign_in_account(oidc_dovecot, user, oidc)
    oidc.set_access_token_ttl(10)  # under the 30 s a login wants left: each login refreshes
    oidc.set_token_delay(1.0)
    try:
        async with servers(2, settings, secret_service, tmp_path) as clients:
            before = oidc.token_requests
            first = await at_once(clients, "alpha")
            assert [envelope["success"] for envelope in first] == [True, True], first
            wait_for(lambda: oidc.token_requests >= before + 2)
            oidc.move_clock(11)  # both processes' access tokens are past their expiry (no wait)
            oidc_dovecot.kick(user)
            second = await at_once(clients, "beta")
            assert [envelope["success"] for envelope in second] == [True, True], second
            wait_for(lambda: oidc.token_requests >= before + 4)
            assert oidc.token_requests == before + 4  # one refresh per process per expiry
    finally:
        oidc.set_token_delay(0)
        oidc.set_access_token_ttl(3600)
        oidc.set_clock_offset(0)
    # The grant lives: the token the processes left in the keychain refreshes (presenting the spent
    # first one instead would end the grant: the reuse detection a race would have tripped).
    latest = keychain.load()
    assert latest not in (None, refresh_token)
    assert not refresh_refused(oidc, latest)

"""Shared fixtures: one real Dovecot per test session, fresh users, and MCP clients."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import pytest
from mcp import Client

from mail_imap_mcp.config import Config
from mail_imap_mcp.server import build_server
from mail_imap_mcp.tools.context import AppContext
from tests.support.accounts import PASSWORD_ENV, account_settings
from tests.support.dovecot import Dovecot
from tests.support.envelope_client import EnvelopeClient


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def dovecot() -> Iterator[Dovecot]:
    with Dovecot(strict_listener=True) as server:
        os.environ[PASSWORD_ENV] = server.password
        yield server


@pytest.fixture
def user(dovecot: Dovecot) -> str:
    """A fresh user with an empty mailbox."""
    return dovecot.new_user()


AccountFactory = Callable[..., dict[str, Any]]


@pytest.fixture
def account(dovecot: Dovecot) -> AccountFactory:
    """``account_settings`` bound to the session's Dovecot."""

    def make(user: str, **overrides: Any) -> dict[str, Any]:
        return account_settings(dovecot, user, **overrides)

    return make


def make_config(accounts: dict[str, dict[str, Any]], **server: Any) -> Config:
    return Config.model_validate({"accounts": accounts, "server": server})


@pytest.fixture
def config(user: str, account: AccountFactory) -> Config:
    """A config with one account, ``default``, for the fresh ``user``."""
    return make_config({"default": account(user)})


async def open_client(config: Config, app: AppContext | None = None) -> AsyncIterator[EnvelopeClient]:
    """An MCP client session on a server for ``config`` (sharing ``app`` when given; closed after)."""
    async with Client(build_server(config, app)) as client:
        yield EnvelopeClient(client)
    if app is not None:
        await anyio.to_thread.run_sync(app.close)


@pytest.fixture
async def mcp(config: Config) -> AsyncIterator[EnvelopeClient]:
    """An in-process MCP client session on a server for ``config``."""
    async for client in open_client(config):
        yield client

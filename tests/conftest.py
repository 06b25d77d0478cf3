"""Shared fixtures: one real Dovecot per test session, fresh users, and MCP clients.

``cyrus``, ``cyrus_altns`` and ``courier`` are the other IMAP servers of the matrix (started on first
use); all servers of a session share one password, so ``account_settings(server, user)`` fits each.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import pytest
from mcp import Client

from mail_imap_mcp.config import Config
from mail_imap_mcp.server import build_server
from mail_imap_mcp.tools.context import AppContext
from tests.support.accounts import PASSWORD_ENV, account_settings
from tests.support.courier import Courier
from tests.support.cyrus import Cyrus
from tests.support.dovecot import Dovecot
from tests.support.envelope_client import EnvelopeClient


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


#: The password of every user of every session-scoped server (the value of ``PASSWORD_ENV``).
SESSION_PASSWORD = secrets.token_hex(12)


@pytest.fixture(scope="session")
def dovecot() -> Iterator[Dovecot]:
    with Dovecot(strict_listener=True, password=SESSION_PASSWORD) as server:
        os.environ[PASSWORD_ENV] = server.password
        yield server


@pytest.fixture(scope="session")
def cyrus() -> Iterator[Cyrus]:
    """Cyrus IMAP in its default namespace (separator ``.``, folders below ``INBOX.``)."""
    with Cyrus(password=SESSION_PASSWORD) as server:
        os.environ[PASSWORD_ENV] = server.password
        yield server


@pytest.fixture(scope="session")
def cyrus_altns() -> Iterator[Cyrus]:
    """Cyrus IMAP with altnamespace + unixhierarchysep (separator ``/``, folders beside INBOX)."""
    with Cyrus(altnamespace=True, password=SESSION_PASSWORD) as server:
        os.environ[PASSWORD_ENV] = server.password
        yield server


@pytest.fixture(scope="session")
def courier() -> Iterator[Courier]:
    """Courier-IMAP (separator ``.``, folders below ``INBOX.``; no SPECIAL-USE, no MULTIAPPEND)."""
    with Courier(password=SESSION_PASSWORD) as server:
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

"""Configs and in-process MCP clients for tests: ``make_config`` and ``open_client``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from mcp import Client

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import Config
from mail_imap_mcp.server import build_server
from tests.support.accounts import account_settings, server_settings
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.servers.imapserver import ImapServer

#: ``account_settings`` bound to a server: ``account(user, **overrides)`` (the ``account`` fixture).
AccountFactory = Callable[..., dict[str, Any]]


def make_config(accounts: dict[str, dict[str, Any]], **server: Any) -> Config:
    """A validated config with ``accounts`` (id -> settings) and ``server`` settings (bulk writes answer
    inline unless ``background_after_s`` is given: :func:`~tests.support.accounts.server_settings`)."""
    return Config.model_validate({"accounts": accounts, "server": server_settings(**server)})


async def open_client(
    config: Config, app: AppContext | None = None, **client_options: Any
) -> AsyncIterator[EnvelopeClient]:
    """An MCP client session on a server for ``config`` (sharing ``app`` when given; closed after);
    ``client_options`` go to the SDK's ``Client`` (e.g. an ``elicitation_callback``)."""
    async with Client(build_server(config, app), **client_options) as client:
        yield EnvelopeClient(client)
    if app is not None:
        await anyio.to_thread.run_sync(app.close)


async def account_client(server: ImapServer, user: str, **settings: Any) -> AsyncIterator[EnvelopeClient]:
    """A client of a server whose one account, ``default``, is ``user`` on ``server`` (``settings``: the
    server's settings, e.g. ``write_enabled``)."""
    async for client in open_client(make_config({"default": account_settings(server, user)}, **settings)):
        yield client

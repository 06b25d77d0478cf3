"""What the local index's integration tests share: a config with the index on, and waiting for its build."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import AccountConfig, Config
from mail_imap_mcp.index.engines import open_engine
from mail_imap_mcp.index.engines.sqlite.location import identity_index_path
from mail_imap_mcp.index.store import IndexStore
from tests.support.accounts import account_settings
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.index_files import identity_index_paths
from tests.support.patience import eventually_async, patient
from tests.support.servers.matrix import MatrixServer
from tests.support.servers.postgres import IndexEngineParam, on_engine

#: The search tool the index answers.
SEARCH = "imap_search_messages"
#: What a page of the index says when its search's freshness budget ran out before every folder it
#: covers was synced (not when the index refused a write: that page says "could not be written").
BEHIND = "not fully brought up to date within its time budget"


def index_config(server: MatrixServer, user: str, tmp_path: Path, **settings: Any) -> Config:
    """One account, ``default``, of ``user`` on ``server``, with the index on in ``tmp_path/ix`` (and
    ``settings``, e.g. ``index_fresh_budget_ms``)."""
    return make_config(
        {"default": account_settings(server, user)}, index=True, index_dir=str(tmp_path / "ix"), **settings
    )


async def index_state(mcp: EnvelopeClient) -> str:
    """What ``imap_list_accounts`` says of the index of the caller's one account."""
    (account,) = (await mcp.ok("imap_list_accounts", {}))["accounts"]
    state: str = account["index"]
    return state


async def wait_ready(mcp: EnvelopeClient, within: float = 60.0) -> str:
    """Wait until ``imap_list_accounts`` says the index is ready (or unavailable: returned as said)."""
    state = ""
    with anyio.fail_after(patient(within)):
        while state != "ready":
            state = await index_state(mcp)
            if state.startswith("unavailable"):
                return state
            await anyio.sleep(0.05)
    return state


def warnings(envelope: dict[str, Any]) -> list[str]:
    """The ``meta.warnings`` of an answer (none: empty)."""
    found: list[str] = envelope.get("meta", {}).get("warnings", [])
    return found


async def indexed_client(
    server: MatrixServer,
    user: str,
    tmp_path: Path,
    engine: IndexEngineParam = ("sqlite", None),
    **settings: Any,
) -> AsyncIterator[tuple[EnvelopeClient, AppContext, Config]]:
    """An MCP client on a server with :func:`index_config` (its indexes in ``engine``, the fixture
    ``index_engine``), once its index is built: the client, the server's application and the config."""
    config = on_engine(index_config(server, user, tmp_path, **settings), *engine)
    app = AppContext.from_config(config)
    async for mcp in open_client(config, app):
        assert await wait_ready(mcp) == "ready"
        yield mcp, app, config


@contextlib.contextmanager
def opened_store(
    config: Config, name: str = "default", account: AccountConfig | None = None
) -> Iterator[IndexStore]:
    """The index store ``name`` of ``config``'s engine (of ``account``; None: ``config``'s account
    ``name``), opened beside any server, and closed with its engine."""
    engine = open_engine(config)
    store = engine.location(name, account or config.accounts[name]).open().store
    try:
        yield store
    finally:
        store.close()
        engine.close()


def index_file(folder: Path, account_id: str = "default") -> Path:
    """The one index file of ``account_id`` in ``folder``: named by the identity of its account,
    ``<account_id>.<tag>.sqlite3`` (:func:`~mail_imap_mcp.index.engines.sqlite.location.identity_index_path`)."""
    [found] = identity_index_paths(folder, account_id)
    return found


def identity_file(folder: Path, config: Config, account_id: str = "default") -> Path:
    """Where the index file of ``account_id`` of ``config`` will be in ``folder`` (made or not)."""
    return identity_index_path(folder, account_id, config.accounts[account_id])


async def caught_up_pages(
    mcp: EnvelopeClient, arguments: dict[str, Any], within: float = 60.0
) -> list[dict[str, Any]]:
    """Every page of the search ``arguments`` (the cursor followed) once none of them says its freshness
    budget ran out: searched again from the first page while one does, as the warning itself advises.

    For tests whose subject is what the index holds once it caught up, not how fast it catches up: the
    budget is the product's timing, which a loaded machine misses (each search and the background sync
    still bring the index forward, so the wait ends; an index that never catches up fails it)."""

    async def pages() -> list[dict[str, Any]] | None:
        answered, page_arguments = [], dict(arguments)
        while True:
            envelope: dict[str, Any] = await mcp.call(SEARCH, page_arguments)
            if any(BEHIND in warning for warning in envelope.get("meta", {}).get("warnings") or ()):
                return None
            answered.append(envelope)
            cursor = (envelope.get("data") or {}).get("next_cursor")
            if not cursor:
                return answered
            page_arguments["cursor"] = cursor

    return await eventually_async(pages, within=within, what=f"a search of {arguments} caught up")

"""Shared fixtures: one real Dovecot per test session, fresh users, and MCP clients.

``cyrus``, ``cyrus_altns`` and ``courier`` are the other IMAP servers of the matrix (started on first
use); all servers of a session share one password, so ``account_settings(server, user)`` fits each.

A test that requests ``imap_server`` runs once per server of ``MATRIX`` (ids ``dovecot``, ``cyrus``,
``cyrus_altns``, ``courier``), and the generic fixtures ``user``, ``account``, ``config`` and ``mcp``
follow it (``mail_server`` is the server they use). A test that does not request it gets them bound to
the session's Dovecot, as before. ``on_matrix(courier="reason")`` replaces the parametrisation of one
test to mark a single server's run as a strict xfail (a product defect seen only there).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any, TypeVar

import anyio
import pytest
from mcp import Client

from mail_imap_mcp.config import Config
from mail_imap_mcp.imap.connection import ImapSession
from mail_imap_mcp.server import build_server
from mail_imap_mcp.tools.context import AppContext
from tests.support.accounts import PASSWORD_ENV, account_settings
from tests.support.courier import Courier
from tests.support.cyrus import Cyrus
from tests.support.dovecot import Dovecot
from tests.support.envelope_client import EnvelopeClient
from tests.support.oauth2 import IntrospectionEndpoint


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


#: The password of every user of every session-scoped server (the value of ``PASSWORD_ENV``).
SESSION_PASSWORD = secrets.token_hex(12)


ServerT = TypeVar("ServerT", Dovecot, Cyrus, Courier)


def _serve(server: ServerT) -> Iterator[ServerT]:
    """Run a session-scoped server whose users log in with ``SESSION_PASSWORD`` (from ``PASSWORD_ENV``)."""
    with server:
        os.environ[PASSWORD_ENV] = server.password
        yield server


@pytest.fixture(scope="session")
def dovecot() -> Iterator[Dovecot]:
    yield from _serve(Dovecot(strict_listener=True, password=SESSION_PASSWORD))


@pytest.fixture(scope="session")
def introspection() -> Iterator[IntrospectionEndpoint]:
    """The OAuth2 token introspection endpoint of ``oauth_dovecot``: ``accept(token, user)`` makes a token valid."""
    with IntrospectionEndpoint() as endpoint:
        yield endpoint


@pytest.fixture(scope="session")
def oauth_dovecot(introspection: IntrospectionEndpoint) -> Iterator[Dovecot]:
    """A Dovecot that also logs users in with OAuth2 tokens (XOAUTH2, OAUTHBEARER) via ``introspection``."""
    yield from _serve(Dovecot(oauth2_introspection_url=introspection.url, password=SESSION_PASSWORD))


@pytest.fixture(scope="session")
def cyrus() -> Iterator[Cyrus]:
    """Cyrus IMAP in its default namespace (separator ``.``, folders below ``INBOX.``)."""
    yield from _serve(Cyrus(password=SESSION_PASSWORD))


@pytest.fixture(scope="session")
def cyrus_altns() -> Iterator[Cyrus]:
    """Cyrus IMAP with altnamespace + unixhierarchysep (separator ``/``, folders beside INBOX)."""
    yield from _serve(Cyrus(altnamespace=True, password=SESSION_PASSWORD))


@pytest.fixture(scope="session")
def courier() -> Iterator[Courier]:
    """Courier-IMAP (separator ``.``, folders below ``INBOX.``; no SPECIAL-USE, no MULTIAPPEND)."""
    yield from _serve(Courier(password=SESSION_PASSWORD))


#: The session fixtures of the servers of the matrix, in the order tests run on them.
MATRIX = ("dovecot", "cyrus", "cyrus_altns", "courier")
#: A server of the matrix (each has ``seed()``: Dovecot writes Maildir files, the others APPEND).
MatrixServer = Dovecot | Cyrus | Courier


@pytest.fixture(params=MATRIX)
def imap_server(request: pytest.FixtureRequest) -> MatrixServer:
    """Each server of the matrix in turn (the session fixture named by the parameter)."""
    server: MatrixServer = request.getfixturevalue(request.param)
    return server


def on_matrix(**xfail: str) -> pytest.MarkDecorator:
    """Run a test that requests ``imap_server`` on every server of ``MATRIX``, the servers named as
    keywords (``courier="reason"``) as ``xfail(strict=True)``: a product defect observed on that server
    only, kept visible until it is fixed (an XPASS then fails the run)."""
    unknown = set(xfail) - set(MATRIX)
    if unknown:
        raise ValueError(f"not servers of the matrix: {sorted(unknown)}")
    params = [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=xfail[name]))
        if name in xfail
        else name
        for name in MATRIX
    ]
    return pytest.mark.parametrize("imap_server", params, indirect=True)


@pytest.fixture
def mail_server(request: pytest.FixtureRequest) -> MatrixServer:
    """The server of the generic fixtures: ``imap_server`` when the test requests it, else Dovecot."""
    name = "imap_server" if "imap_server" in request.fixturenames else "dovecot"
    server: MatrixServer = request.getfixturevalue(name)
    return server


@pytest.fixture
def user(mail_server: MatrixServer) -> str:
    """A fresh user with an empty mailbox (Cyrus: plus its special-use folders)."""
    return mail_server.new_user()


AccountFactory = Callable[..., dict[str, Any]]


@pytest.fixture
def account(mail_server: MatrixServer) -> AccountFactory:
    """``account_settings`` bound to the test's server (``imap_server``, else the session's Dovecot)."""

    def make(user: str, **overrides: Any) -> dict[str, Any]:
        return account_settings(mail_server, user, **overrides)

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


@pytest.fixture
def fetch_log(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[str], int]]:
    """Record each FETCH's items and the bytes it returned (the server is real; this only observes).

    Commands sent together (``ImapSession.fetch_each``) are recorded one by one, in the order sent."""
    log: list[tuple[list[str], int]] = []
    original = ImapSession.fetch_each

    def recording(
        self: ImapSession, requests: Sequence[tuple[list[int], list[str]]]
    ) -> dict[int, dict[bytes, Any]]:
        result = original(self, requests)
        for uids, items in requests:
            if uids:
                answers = [result[uid] for uid in uids if uid in result]
                log.append((items, sum(len(v) for a in answers for v in a.values() if isinstance(v, bytes))))
        return result

    monkeypatch.setattr(ImapSession, "fetch_each", recording)
    return log

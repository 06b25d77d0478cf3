"""What tests/integration/sign_in/test_sign_in_on_call.py shares with other test modules."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
from mcp_types import ElicitRequestParams, ElicitRequestURLParams, ElicitResult

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.credentials.sign_in_flow import SignInAttempts
from mail_imap_mcp.credentials.token_keychain import KeychainRefreshTokens
from mail_imap_mcp.imap.token_check import new_sign_in_refusal
from mail_imap_mcp.net.browser import BrowserOpener
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.clients.oidc_browser import approve
from tests.support.shared.sign_in_tokens import ACCOUNT
from tests.support.shared.sign_in_tokens import keychain as keychain


class Visitor:
    """An elicitation callback: the user shown a page signs in there as ``login`` (or declines to go)."""

    def __init__(self, login: str, action: str = "accept", **approve_options: Any) -> None:
        self.login, self.action, self.options = login, action, approve_options
        self.shown: list[ElicitRequestURLParams] = []

    async def __call__(self, context: Any, params: ElicitRequestParams) -> ElicitResult:
        assert isinstance(params, ElicitRequestURLParams), params
        self.shown.append(params)
        if self.action == "fail":
            raise RuntimeError("this client cannot show a page after all")
        if self.action == "accept":
            await anyio.to_thread.run_sync(functools.partial(approve, params.url, self.login, **self.options))
        return ElicitResult(action=self.action)


class Launches:
    """The browser opener's launches, recorded (the real launch: tests/unit/test_browser_launch.py)."""

    def __init__(self) -> None:
        self.urls: list[str] = []

    def __call__(self, argv: list[str]) -> bool:
        self.urls.append(argv[-1])
        return True


@dataclass
class SignedOut:
    """An account nobody signed in to yet: its Dovecot ``user``, its ``settings`` (signing in with the
    test's provider), the ``keychain`` entry a sign-in fills, and the browser ``launches`` of a server
    over stdio."""

    user: str
    settings: dict[str, Any]
    keychain: KeychainRefreshTokens
    launches: Launches


async def stdio_like_client(account: SignedOut, **client_options: Any) -> AsyncIterator[EnvelopeClient]:
    """A client of a server set up as over stdio (sign-ins started by calls; a macOS-like desktop
    whose browser launches are recorded)."""
    config = make_config({ACCOUNT: account.settings})
    app = AppContext.from_config(config)
    opener = BrowserOpener(allowed=True, environ={}, platform="darwin", launch=account.launches)
    app.sign_ins = SignInAttempts(config.accounts, opener, check=new_sign_in_refusal)
    async for client in open_client(config, app, **client_options):
        yield client

"""The fetchers of a built-in sign-in's access tokens (:data:`~mail_imap_mcp.net.tokens.FetchToken`):
:func:`sign_in_fetcher` spends the refresh token a :class:`RefreshTokenStore` keeps (the keychain,
:mod:`.token_keychain`, or a file, :mod:`.token_file`) under the sign-in's cross-process lock
(:mod:`.sign_in_state`), storing a rotated one before it is used; :func:`client_credentials_fetcher`
asks for an application's own token, with no user and nothing stored.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Protocol

from mail_imap_mcp.net.oauth import OAuthClient, SignInRequired, TokenResponse, refresh, token_request
from mail_imap_mcp.net.tokens import AccessToken, FetchToken


class RefreshTokenStore(Protocol):
    """Where an account's refresh token is kept (the OS keychain)."""

    def load(self) -> str | None: ...

    def save(self, refresh_token: str) -> None:
        """Keep ``refresh_token`` in place of the one before (which stays until this succeeds)."""
        ...

    def forget(self) -> None: ...


def client_credentials_fetcher(client: OAuthClient) -> FetchToken:
    """A :data:`FetchToken` of the application's own token (the client credentials grant, RFC 6749
    section 4.4): no user, no refresh token, nothing stored; a new one is asked for when it expires."""

    def fetch(time_left: float) -> AccessToken:
        form = {"grant_type": "client_credentials", "scope": " ".join(client.scopes)}
        return token_request(client, form, time_left).access

    return fetch


#: Holds the account's cross-process lock for at most the given seconds (raising if it cannot).
RefreshLock = Callable[[float], AbstractContextManager[object]]


def sign_in_fetcher(
    client: OAuthClient,
    store: RefreshTokenStore,
    lock: RefreshLock = lambda _timeout_s: nullcontext(),
    refreshed: Callable[[TokenResponse], None] = lambda _answer: None,
) -> FetchToken:
    """A :data:`FetchToken` that refreshes with the stored refresh token, keeping a rotated one.

    The refresh token is read under ``lock`` (held until a rotated one is stored), so two processes of
    one account never spend the same refresh token: the second reads the one the first stored, and the
    provider's reuse detection, which ends the whole sign-in when a spent token comes back, never fires.
    ``refreshed`` is told of each refresh that succeeded (for ``status``)."""

    def fetch(time_left: float) -> AccessToken:
        deadline = time.monotonic() + time_left
        with lock(time_left):
            refresh_token = store.load()
            if refresh_token is None:
                raise SignInRequired("no one has signed in to this account yet")
            answer = refresh(client, refresh_token, deadline - time.monotonic())
            if answer.refresh_token and answer.refresh_token != refresh_token:
                store.save(answer.refresh_token)
        refreshed(answer)
        return answer.access

    return fetch

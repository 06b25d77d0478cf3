"""How each account logs in (:data:`~mail_imap_mcp.net.tokens.Credentials`): a password read from its
source at each login, or a token source fed by the built-in sign-in (the refresh token in the keychain or
its file), by the application's own token (``oauth2_client_credentials``) or by ``oauth2_token_command``.

:class:`Logins` is built once by the application root and hands each account's credentials to the IMAP
pool of every user and to submission; a protocol takes them and never builds its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from functools import partial

from mail_imap_mcp.config import AccountConfig, AuthMethod, ConfigError, helper_environment
from mail_imap_mcp.net.oauth import OAuthClient, SignInRequired
from mail_imap_mcp.net.tokens import AccessToken, Credentials, FetchToken, PasswordLogin, TokenUnavailable

from .oauth_client import oauth_client
from .refresh import client_credentials_fetcher, sign_in_fetcher
from .secrets import account_password
from .sign_in_state import LockTimeout, note_refresh, refresh_lock, refresh_token_store
from .token_command import command_fetcher
from .tokens import SharedToken

#: What an application's own token is asked with: the account id, client ID, token URL and tenant.
ApplicationKey = tuple[str, str | None, str | None, str | None]


class Logins:
    """Every account's credentials, for the protocols of one application. The application's own token
    of each client-credentials account is kept here, shared by every user's connections (a per_user
    template's users all log in with it), keyed by what it is asked with."""

    def __init__(self) -> None:
        self._application: dict[ApplicationKey, SharedToken] = {}
        self._lock = threading.Lock()

    def of(self, account_id: str, config: AccountConfig) -> Credentials:
        """The account's credentials: a password login, or a new token source (its token shared by the
        connections it is given to; the pool gives one to every connection of the account)."""
        if config.auth is AuthMethod.PASSWORD:
            return PasswordLogin(partial(account_password, config))
        if config.oauth2_client_credentials:
            return self._application_token(account_id, config)
        if config.oauth2_provider is not None:
            return SharedToken(_sign_in_fetcher(account_id, config))
        command = config.oauth2_token_command
        if command is None:
            return SharedToken(_no_token_command)
        return SharedToken(
            command_fetcher(command, config.oauth2_token_timeout_s, helper_environment(config.helper_env))
        )

    def all(self, accounts: Mapping[str, AccountConfig]) -> dict[str, Credentials]:
        """The credentials of each of ``accounts``, for the connections of one pool."""
        return {account_id: self.of(account_id, config) for account_id, config in accounts.items()}

    def _application_token(self, account_id: str, config: AccountConfig) -> SharedToken:
        key = (account_id, config.oauth2_client_id, config.oauth2_token_url, config.oauth2_tenant)
        with self._lock:
            shared = self._application.get(key)
            if shared is None:
                shared = self._application[key] = SharedToken(_application_fetcher(config))
            return shared


def credentials_for(account_id: str, config: AccountConfig) -> Credentials:
    """The credentials of one account for a connection of its own (a command-line check, the index
    command): token sources shared with nothing else."""
    return Logins().of(account_id, config)


class _KeptClient:
    """An account's OAuth client for its token fetches: made at the first (where a custom issuer is asked
    for its endpoints) and kept for the next, so that a refresh is one request to the provider, not a
    discovery as well. A fetch that fails forgets it: the next asks again, as the endpoints or the
    application's secret may have changed. The fetches of one token source come one at a time
    (:class:`~mail_imap_mcp.credentials.tokens.SharedToken`)."""

    def __init__(self, config: AccountConfig) -> None:
        self._config = config
        self._client: OAuthClient | None = None

    def fetch(self, time_left: float, use: Callable[[OAuthClient], AccessToken]) -> AccessToken:
        client = self._client or oauth_client(self._config, time_left)
        self._client = None
        token = use(client)
        self._client = client
        return token


def _sign_in_fetcher(account_id: str, config: AccountConfig) -> FetchToken:
    store = refresh_token_store(account_id, config)
    kept = _KeptClient(config)

    def lock(timeout_s: float) -> AbstractContextManager[None]:
        return refresh_lock(account_id, timeout_s, store)

    def fetch(time_left: float) -> AccessToken:
        def refreshed(client: OAuthClient) -> AccessToken:
            return sign_in_fetcher(client, store, lock, lambda _: note_refresh(account_id, store))(time_left)

        try:
            return kept.fetch(time_left, refreshed)
        except ConfigError as exc:  # no usable keychain: the message names the backend, never a token
            raise TokenUnavailable(str(exc)) from None
        except (LockTimeout, OSError) as exc:  # the lock file: another process, or its directory
            raise TokenUnavailable(f"the sign-in could not be used ({exc})") from None

    return fetch


def _application_fetcher(config: AccountConfig) -> FetchToken:
    kept = _KeptClient(config)

    def fetch(time_left: float) -> AccessToken:
        try:
            return kept.fetch(time_left, lambda client: client_credentials_fetcher(client)(time_left))
        except ConfigError as exc:  # the application's secret: the message names the setting
            raise TokenUnavailable(str(exc)) from None
        except SignInRequired as exc:  # no person can sign in for an application
            raise TokenUnavailable(exc.reason) from None

    return fetch


def _no_token_command(time_left: float) -> AccessToken:
    raise TokenUnavailable("no oauth2_token_command is set")

"""Logging in: ``LOGIN`` with a password, or SASL ``XOAUTH2`` / ``OAUTHBEARER`` with an OAuth2 access token.

The token comes from the account's token source (:mod:`mail_imap_mcp.net.tokens`), one per account
shared by every connection it opens: a :class:`~mail_imap_mcp.net.tokens.SharedToken` fed by the
built-in sign-in (:mod:`mail_imap_mcp.net.oauth`, the refresh token in the keychain) or by the
account's ``oauth2_token_command`` (helpers such as pizauth, oauth2l or mailctl cache and refresh tokens
themselves). When the server refuses the token, the source is told so and asked once more (the helper
may have refreshed it by then, or refreshes it when asked again), and the login is retried once on the
same connection. Tokens are never logged, never put in an exception's text, and imaplib sends them as
AUTHENTICATE continuations, which its debug output shows only by size (see docs/security.md). The SASL
messages themselves are :mod:`mail_imap_mcp.net.sasl`'s.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from mail_imap_mcp.config import AccountConfig, AuthMethod, ConfigError, helper_environment
from mail_imap_mcp.config.sign_in import oauth_client
from mail_imap_mcp.config.sign_in_state import LockTimeout, note_refresh, refresh_lock, refresh_token_store
from mail_imap_mcp.imap.errors import MechanismNotOffered, OAuthRejected, TokenCommandFailed, command_refused
from mail_imap_mcp.imap.personality import Profile
from mail_imap_mcp.imap.wire import BudgetedIMAPClient
from mail_imap_mcp.net.oauth import SignInRequired, client_credentials_fetcher, sign_in_fetcher
from mail_imap_mcp.net.sasl import SaslExchange, oauth_initial_response
from mail_imap_mcp.net.tokens import (
    AccessToken,
    FetchToken,
    SharedToken,
    TokenSource,
    TokenUnavailable,
    command_fetcher,
)

log = logging.getLogger("mail_imap_mcp.imap")

#: The longest wait for a token (the longest oauth2_token_timeout_s): a connection outside a call (a
#: watcher's reconnection, the index sync's) has no deadline, and no HTTP client or lock takes an
#: infinite timeout (httpx2 raised OverflowError: such a connection never got a new token).
MAX_TOKEN_WAIT_S = 300.0


def token_source_for(account_id: str, config: AccountConfig) -> TokenSource:
    """A new token source for an OAuth2 account: the built-in sign-in's refresh token in the keychain
    (``oauth2_provider``) or its ``oauth2_token_command``, the token shared by the connections it is
    given to (the pool gives one to every connection of the account)."""
    if config.oauth2_client_credentials:
        return _application_token(account_id, config)
    if config.oauth2_provider is not None:
        return SharedToken(_sign_in_fetcher(account_id, config))
    command = config.oauth2_token_command
    if command is None:
        return SharedToken(_no_token_command)
    return SharedToken(
        command_fetcher(command, config.oauth2_token_timeout_s, helper_environment(config.helper_env))
    )


def _sign_in_fetcher(account_id: str, config: AccountConfig) -> FetchToken:
    store = refresh_token_store(account_id, config)

    def lock(timeout_s: float) -> AbstractContextManager[None]:
        return refresh_lock(account_id, timeout_s, store)

    def fetch(time_left: float) -> AccessToken:
        try:
            client = oauth_client(config, time_left)
            return sign_in_fetcher(client, store, lock, lambda _: note_refresh(account_id, store))(time_left)
        except ConfigError as exc:  # no usable keychain: the message names the backend, never a token
            raise TokenUnavailable(str(exc)) from None
        except (LockTimeout, OSError) as exc:  # the lock file: another process, or its directory
            raise TokenUnavailable(f"the sign-in could not be used ({exc})") from None

    return fetch


#: The application's own token of each client-credentials account, shared by every user's connections
#: (a per_user template's users all log in with it); keyed by what the token is asked with.
_APPLICATION_TOKENS: dict[tuple[str, str | None, str | None, str | None], SharedToken] = {}
_APPLICATION_TOKENS_LOCK = threading.Lock()


def _application_token(account_id: str, config: AccountConfig) -> SharedToken:
    key = (account_id, config.oauth2_client_id, config.oauth2_token_url, config.oauth2_tenant)
    with _APPLICATION_TOKENS_LOCK:
        shared = _APPLICATION_TOKENS.get(key)
        if shared is None:

            def fetch(time_left: float) -> AccessToken:
                try:
                    return client_credentials_fetcher(oauth_client(config, time_left))(time_left)
                except ConfigError as exc:  # the application's secret: the message names the setting
                    raise TokenUnavailable(str(exc)) from None
                except SignInRequired as exc:  # no person can sign in for an application
                    raise TokenUnavailable(exc.reason) from None

            shared = _APPLICATION_TOKENS[key] = SharedToken(fetch)
        return shared


def _no_token_command(time_left: float) -> AccessToken:
    raise TokenUnavailable("no oauth2_token_command is set")


def authenticate(client: BudgetedIMAPClient, config: AccountConfig, token: str) -> None:
    """``AUTHENTICATE`` with ``token``; :class:`OAuthRejected` (with the server's challenge) on NO or BAD."""
    mechanism = config.auth.mechanism
    exchange = SaslExchange(
        mechanism,
        oauth_initial_response(mechanism, config.username, token, config.host, config.effective_port),
    )
    try:
        client.sasl_authenticate(mechanism, exchange)
    except Exception as exc:
        if command_refused(exc) is None:
            raise
        raise OAuthRejected(exchange.challenge, str(exc)) from None


class Login:
    """One account's login: credentials are obtained first (before connecting), then :meth:`perform`
    logs the connected client in. ``tokens``: the account's token source (a new one of its own when
    None, as a command-line check's single connection has)."""

    def __init__(
        self,
        account_id: str,
        config: AccountConfig,
        time_left: Callable[[], float],
        tokens: TokenSource | None = None,
    ) -> None:
        self._account_id = account_id
        self._config = config
        self._time_left = time_left
        self._password: str | None = None
        self._tokens: TokenSource | None = None
        self._token: AccessToken | None = None
        if config.auth is AuthMethod.PASSWORD:
            self._password = config.resolve_password()
        else:
            self._tokens = tokens or token_source_for(account_id, config)
            self._token = self._obtain()

    def _obtain(self) -> AccessToken:
        assert self._tokens is not None
        try:
            return self._tokens.token(min(self._time_left(), MAX_TOKEN_WAIT_S))
        except TokenUnavailable as exc:
            raise TokenCommandFailed(exc.reason, sign_in_required=isinstance(exc, SignInRequired)) from None

    def perform(self, client: BudgetedIMAPClient) -> Any:
        """Log ``client`` in: LOGIN, or AUTHENTICATE once the server advertises the mechanism, retried
        once with a token obtained anew when the server refuses the first (unless the source gives the
        same token again). Returns LOGIN's answer (the text of its tagged OK), None after AUTHENTICATE."""
        config = self._config
        if self._password is not None:
            return client.login(config.username, self._password)
        assert self._tokens is not None and self._token is not None
        offered = Profile.of(client.offered_capabilities)  # from the greeting, or anew after STARTTLS
        if not offered.offers_mechanism(config.auth.mechanism):
            raise MechanismNotOffered(self._account_id, config, offered.mechanisms)
        try:
            authenticate(client, config, self._token.value)
        except OAuthRejected as refused:
            described = refused.challenge.describe() if refused.challenge else "no details"
            log.info(
                "account=%s the server refused the OAuth2 token (%s); asking for a new one",
                self._account_id,
                described,
            )
            self._tokens.invalidate(self._token)
            token = self._obtain()
            if token.value == self._token.value:  # not refreshed: the server would refuse it again
                raise OAuthRejected(refused.challenge, refused.said, same_token_again=True) from None
            self._token = token
            try:
                authenticate(client, config, token.value)
            except OAuthRejected:
                self._tokens.invalidate(token)  # the next login asks again: once per login, never a loop
                raise
        return None

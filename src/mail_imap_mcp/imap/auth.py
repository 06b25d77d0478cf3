"""Logging in: ``LOGIN`` with a password, or SASL ``XOAUTH2`` / ``OAUTHBEARER`` with an OAuth2 access token.

The password or the token source is the account's :data:`~mail_imap_mcp.net.tokens.Credentials`,
handed in by the application root (:mod:`mail_imap_mcp.credentials`): as imapclient's ``oauth2_login``,
this layer takes a token and leaves getting it to its caller. The token source is one per account, shared
by every connection it opens. When the server refuses the token, the source is told so and asked once
more (a helper may have refreshed it by then, or refreshes it when asked again), and the login is retried
once on the same connection. Tokens are never logged, never put in an exception's text, and imaplib sends them as
AUTHENTICATE continuations, which its debug output shows only by size (see docs/security.md). The SASL
messages themselves are :mod:`mail_imap_mcp.net.sasl`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.imap.errors import (
    MechanismNotOffered,
    OAuthRejected,
    ServerLimited,
    TokenCommandFailed,
    classify,
    command_refused,
)
from mail_imap_mcp.imap.personality import Profile
from mail_imap_mcp.imap.wire import BudgetedIMAPClient
from mail_imap_mcp.net.oauth import SignInRequired
from mail_imap_mcp.net.sasl import SaslExchange, oauth_initial_response
from mail_imap_mcp.net.tokens import AccessToken, Credentials, PasswordLogin, TokenSource, TokenUnavailable

log = logging.getLogger("mail_imap_mcp.imap")

#: The longest wait for a token (the longest oauth2_token_timeout_s): a connection outside a call (a
#: watcher's reconnection, the index sync's) has no deadline, and no HTTP client or lock takes an
#: infinite timeout (httpx2 raised OverflowError: such a connection never got a new token).
MAX_TOKEN_WAIT_S = 300.0


def authenticate(client: BudgetedIMAPClient, config: AccountConfig, token: str) -> None:
    """``AUTHENTICATE`` with ``token``; :class:`OAuthRejected` (with the server's challenge) on NO or BAD,
    :class:`ServerLimited` when the answer says a limit of the server's refused it, not the token."""
    mechanism = config.auth.mechanism
    exchange = SaslExchange(
        mechanism,
        oauth_initial_response(mechanism, config.username, token, config.host, config.effective_port),
    )
    try:
        client.sasl_authenticate(mechanism, exchange)
    except Exception as exc:
        # Gmail's "Too many simultaneous connections", Dovecot's "[UNAVAILABLE] Temporary authentication
        # failure" (its token check could not be made): the token may be good, so it is kept.
        if isinstance(limited := classify(exc), ServerLimited):
            raise limited from None
        if command_refused(exc) is None:
            raise
        raise OAuthRejected(exchange.challenge, str(exc)) from None


class Login:
    """One account's login: credentials are obtained first (before connecting), then :meth:`perform`
    logs the connected client in. ``credentials``: the account's password login or token source (the
    pool's, shared by the account's connections)."""

    def __init__(
        self,
        account_id: str,
        config: AccountConfig,
        time_left: Callable[[], float],
        credentials: Credentials,
    ) -> None:
        self._account_id = account_id
        self._config = config
        self._time_left = time_left
        self._password: str | None = None
        self._tokens: TokenSource | None = None
        self._token: AccessToken | None = None
        if isinstance(credentials, PasswordLogin):
            self._password = credentials.read()
        else:
            self._tokens = credentials
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

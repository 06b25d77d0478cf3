"""An account's secret obtained now, for a protocol that logs in once per call (submission, ManageSieve):
the password read from its source, or the access token the account's IMAP connections share (one refresh
for every protocol), with the way to tell the token source that the server refused it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.config.errors import ConfigError
from mail_imap_mcp.net.tokens import Credentials, PasswordLogin, TokenUnavailable


class SecretUnavailable(Exception):
    """The password or token cannot be had: ``reason`` says why (naming the setting, never a secret)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class SecretNow:
    """Who logs in with what: ``mechanism`` ``PLAIN`` with the password, or the account's OAuth mechanism
    with a token; ``refused`` is told the secret a server refused (a token source drops its token)."""

    username: str
    mechanism: str
    secret: str = field(repr=False)
    refused: Callable[[str], None] = field(default=lambda _: None, repr=False)


def secret_now(account: AccountConfig, credentials: Credentials) -> SecretNow:
    """The account's secret, obtained now; :class:`SecretUnavailable` where it cannot be had."""
    if isinstance(credentials, PasswordLogin):
        try:
            return SecretNow(account.username, "PLAIN", credentials.read())
        except ConfigError as exc:  # its words name the setting, never the secret
            raise SecretUnavailable(str(exc)) from None
    tokens = credentials
    try:
        token = tokens.token(account.oauth2_token_timeout_s)
    except TokenUnavailable as exc:
        raise SecretUnavailable(f"no access token: {exc.reason}") from None
    return SecretNow(
        account.username, account.auth.mechanism, token.value, lambda _: tokens.invalidate(token)
    )

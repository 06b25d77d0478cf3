"""What a protocol's login is handed: an account's :data:`Credentials`, a password to read or a
:class:`TokenSource` of OAuth 2.0 access tokens.

A :class:`TokenSource` gives a token (:meth:`~TokenSource.token`) and is told when a server refused one
(:meth:`~TokenSource.invalidate`). Like imapclient's ``oauth2_login``, a protocol client takes a token and
leaves getting it to its caller: which source an account has, and what fetches its tokens, is
:mod:`mail_imap_mcp.credentials`', built once by the application root and handed to every protocol.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class AccessToken:
    """An access token (never shown by ``repr``) and until when it may be used (monotonic seconds)."""

    value: str = field(repr=False)
    expires_at: float

    def valid_for(self, seconds: float) -> bool:
        """Whether it is still good ``seconds`` from now."""
        return self.expires_at - time.monotonic() > seconds


class TokenUnavailable(Exception):
    """No token could be obtained; ``reason`` says why in words safe to show (never a token)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class TokenSource(Protocol):
    """Where a connection gets its access token."""

    def token(self, timeout_s: float, min_valid_s: float = ...) -> AccessToken:
        """A token good for at least ``min_valid_s`` more seconds, obtained within ``timeout_s``;
        raises :class:`TokenUnavailable`."""
        ...

    def invalidate(self, refused: AccessToken) -> None:
        """A server refused ``refused``: the next :meth:`token` gets a new one (unless another
        connection already did)."""
        ...


#: Fetches a new token within the given seconds; raises :class:`TokenUnavailable`.
FetchToken = Callable[[float], AccessToken]


@dataclass(frozen=True)
class PasswordLogin:
    """An account that logs in with a password: ``read`` reads it from its source at each login (raising
    the settings' ``ConfigError``, whose words name the setting and never the password)."""

    read: Callable[[], str] = field(repr=False)


#: What a protocol logs an account in with: a password, or a source of access tokens.
Credentials = PasswordLogin | TokenSource

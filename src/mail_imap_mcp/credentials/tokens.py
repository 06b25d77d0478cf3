"""Token sources (:class:`~mail_imap_mcp.net.tokens.TokenSource`): :class:`SharedToken`, one token per
account for every connection it opens (the pool's, the watchers', the index sync's, submission's): fetched
anew, under a lock, only when it is near its expiry or a server refused it, so N connections that meet an
expired token cause one fetch, not N; and :class:`FixedToken`, one token and no other.
"""

from __future__ import annotations

import threading
import time

from mail_imap_mcp.net.tokens import AccessToken, FetchToken, TokenUnavailable


class SharedToken:
    """One account's token, shared by every connection of the account (thread-safe)."""

    def __init__(self, fetch: FetchToken) -> None:
        self._fetch = fetch
        self._lock = threading.Lock()
        self._current: AccessToken | None = None
        #: Tokens fetched (each a command run or a token-endpoint request).
        self.fetches = 0

    def token(self, timeout_s: float, min_valid_s: float = 30.0) -> AccessToken:
        deadline = time.monotonic() + timeout_s
        if not self._lock.acquire(timeout=min(max(timeout_s, 0), threading.TIMEOUT_MAX)):
            raise TokenUnavailable("another connection of the account was still getting a token")
        try:
            current = self._current
            if current is not None and current.valid_for(min_valid_s):
                return current
            self.fetches += 1
            self._current = self._fetch(deadline - time.monotonic())
            return self._current
        finally:
            self._lock.release()

    def invalidate(self, refused: AccessToken) -> None:
        with self._lock:
            if self._current is not None and self._current.value == refused.value:
                self._current = None


class FixedToken:
    """A token source that has one access token and no other (no refresh, no keychain): a new sign-in's,
    tried on the mail server before it is kept."""

    def __init__(self, token: AccessToken) -> None:
        self._token = token

    def token(self, timeout_s: float, min_valid_s: float = 30.0) -> AccessToken:
        return self._token

    def invalidate(self, refused: AccessToken) -> None:
        pass  # there is no other: the login answers the refusal

"""Confirmation tokens: short-lived, bound to exactly one request (tool, account and every argument), to
what the confirmation said and to the user they were issued to; each works once.

Tokens are signed with a secret of the store's (:mod:`mail_imap_mcp.state`): in one process (the
default) a per-process secret, so they do not survive a restart; with ``[state] redis_url`` the secret
every instance shares, so a token issued by one instance is accepted by any other, and its single use is
recorded there: it works once across all of them (see docs/security.md, which says what each mode
protects against).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from typing import Any

from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.state import Store, user_key, user_tag

__all__ = ["TOKEN_TTL_S", "Tokens"]

TOKEN_TTL_S = 300.0


class Tokens:
    """Issues and accepts confirmation tokens (thread-safe): ``secret`` signs them, ``store`` records the
    ones used, each valid ``ttl_s``."""

    def __init__(self, secret: bytes, store: Store, ttl_s: float = TOKEN_TTL_S) -> None:
        self._secret, self._store, self.ttl_s = secret, store, ttl_s

    def _digest(
        self, tool: str, request: dict[str, Any], expires: int, nonce: str, user: str, what: str
    ) -> str:
        """The token's MAC: half of it over the request alone, half over the request and its user, so a
        token given to another user for the same request is told from a forged one (:meth:`accept`).
        Both cover ``what`` the confirmation said: a token passes no other gate, and none whose words
        changed since (a rename's message count)."""
        return (
            self._mac(tool, request, expires, nonce, "", what)[:12]
            + self._mac(tool, request, expires, nonce, user, what)[12:]
        )

    def _mac(self, tool: str, request: dict[str, Any], expires: int, nonce: str, user: str, what: str) -> str:
        canonical = json.dumps(
            [tool, request, expires, nonce, user, what],
            sort_keys=True,
            separators=(",", ":"),
            default=str,
        )
        mac = hmac.new(self._secret, canonical.encode(), hashlib.sha256).digest()[:18]
        return base64.urlsafe_b64encode(mac).decode()

    def issue(self, tool: str, request: dict[str, Any], user: str, what: str) -> str:
        # The nonce makes every token new: the same request asked twice within a second (e.g. a mailbox
        # deleted, created again and deleted again) must not get the token already used the first time.
        expires = int(time.time() + self.ttl_s)
        nonce = secrets.token_urlsafe(6)
        return f"{expires}.{nonce}.{self._digest(tool, request, expires, nonce, user, what)}"

    def accept(self, tool: str, request: dict[str, Any], token: object, user: str, what: str) -> None:
        def refuse(problem: str) -> ToolFailure:
            return ToolFailure.invalid_input(
                "confirm_token", f"{problem}; call without confirm_token for a new one"
            )

        # ASCII only: int() takes other digits ('²') and compare_digest refuses non-ASCII text.
        if not isinstance(token, str) or not token.isascii() or token.count(".") != 2:
            raise refuse("not a confirmation token")
        stamp, nonce, digest = token.split(".")
        if not stamp.isdigit():
            raise refuse("this token was issued for a different request (or by another server process)")
        expected = self._digest(tool, request, int(stamp), nonce, user, what)
        if not hmac.compare_digest(digest, expected):
            if user and hmac.compare_digest(digest[:12], expected[:12]):
                # Another user's token for this very request: said as none at all, naming nobody.
                raise ToolFailure(
                    ErrorCode.NOT_FOUND,
                    "No such confirmation token (argument 'confirm_token'); call without confirm_token "
                    "for a new one.",
                    details={"parameter": "confirm_token"},
                    retryable=False,
                )
            raise refuse(
                "this token was issued for a different request, or what it confirms changed since (or "
                "another server process issued it)"
            )
        now = time.time()
        if int(stamp) < now:
            raise refuse("this token has expired")
        # Recorded until it expires, by whichever instance sees it first: it works once.
        if not self._store.mark_used(
            user_key("confirm-used", digest, user=user), int(stamp) - now + 1, owner=user_tag(user)
        ):
            raise refuse("this token was already used")

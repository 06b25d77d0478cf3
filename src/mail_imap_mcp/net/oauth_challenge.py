"""What a server says when it refuses an OAuth2 token (the JSON of its last SASL challenge), read
without trusting it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class OAuthChallenge:
    """What a server says when it refuses an OAuth2 token: the JSON of its last SASL challenge
    (``{"status":"401","schemes":"bearer","scope":"https://mail.google.com/"}`` for XOAUTH2, RFC 7628
    3.2.2 for OAUTHBEARER), each value shortened and stripped of control characters."""

    status: str | None = None
    scope: str | None = None
    schemes: str | None = None

    @classmethod
    def parse(cls, decoded: bytes) -> OAuthChallenge | None:
        """The challenge in ``decoded`` (imaplib hands over challenges base64-decoded); None if not JSON."""
        try:
            value = json.loads(decoded.decode("utf-8", "replace"))
        except ValueError:
            return None
        if not isinstance(value, dict):
            return None

        def text(key: str) -> str | None:
            item = value.get(key)
            if not isinstance(item, str | int) or isinstance(item, bool):
                return None
            return re.sub(r"[\x00-\x1f\x7f]+", " ", str(item))[:200] or None

        return cls(status=text("status"), scope=text("scope"), schemes=text("schemes"))

    @property
    def wants_scope(self) -> bool:
        """The token was refused for its scope (RFC 7628 ``insufficient_scope``, HTTP 403)."""
        return (self.status or "").lower() in {"403", "insufficient_scope"}

    @property
    def says_invalid(self) -> bool:
        """The token was refused as invalid or expired (HTTP 401, RFC 7628 ``invalid_token``)."""
        return (self.status or "").lower() in {"401", "invalid_token"}

    def describe(self) -> str:
        parts = [f"status {self.status}" if self.status else "no status"]
        if self.scope:
            parts.append(f"scope {self.scope!r}")
        return ", ".join(parts)

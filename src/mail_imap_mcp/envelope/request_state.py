"""The ``request_state`` of a call that asks its user in its result (the 2026-07-28 protocol): the questions
the user approved in earlier rounds of the call, which the client hands back with the next round.

Those keys are digests anyone can compute from the call's arguments and questions
(:func:`~mail_imap_mcp.envelope.user_call.approval_digest`), so the state is sealed: a MAC under the key
the server seals its cursors with (``mail/sealing.py``, handed over by the tool registry; a key of this
process where none is), bound to the tool, the caller (that caller's key) and an expiry. The SDK seals the
wire form too, under a key derived from the same one (:mod:`.wire_seal`); this seal holds wherever the
state goes beyond it (a task that outlives the call). A state that is not one this server sealed for this tool
and caller, or that expired, is refused (``invalid_input``, ``details.parameter: request_state``): nothing
is changed, and a new call asks the user again.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from mail_imap_mcp.envelope.model import ErrorCode, ToolFailure

#: Seconds a state is accepted after it was handed out: the user answers one question within it.
STATE_TTL_S = 600.0
#: Bytes of the state's MAC (before a team user's mark).
_MAC_BYTES = 16
_PURPOSE = b"mail-imap-mcp request state\0"


class Sealing(Protocol):
    """A key that seals data for a caller (``mail/sealing.py``'s functions)."""

    def mac(self, data: bytes, size: int, user: str) -> bytes: ...

    def matches(self, data: bytes, check: bytes, user: str) -> bool: ...


class ProcessKey:
    """A key of this process alone, for an envelope tool built without the server's."""

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)

    def mac(self, data: bytes, size: int, user: str) -> bytes:
        return hmac.new(self._key, user.encode() + b"\0" + data, hashlib.sha256).digest()[:size]

    def matches(self, data: bytes, check: bytes, user: str) -> bool:
        return hmac.compare_digest(check, self.mac(data, len(check), user))


def _encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True)
class StateSeal:
    """Seals and opens the approved keys a tool's call carries from one round to the next."""

    key: Sealing = field(default_factory=ProcessKey)
    ttl_s: float = STATE_TTL_S
    clock: Callable[[], float] = time.time

    def seal(self, tool: str, user: str, approved: Iterable[str]) -> str:
        """``approved`` for ``tool``'s call by ``user``, sealed until :attr:`ttl_s` from now."""
        expires = int(self.clock() + self.ttl_s)
        body = json.dumps({"tool": tool, "expires": expires, "approved": sorted(approved)}).encode()
        return f"{_encode(body)}.{_encode(self.key.mac(_PURPOSE + body, _MAC_BYTES, user))}"

    def open(self, state: object, tool: str, user: str) -> set[str]:
        """The keys ``state`` says were approved (none without a state), where this server sealed it for
        ``tool`` and ``user`` and it has not expired; else the refusal (:func:`refused`)."""
        if state is None:
            return set()
        try:
            body, check = (_decode(part) for part in str(state).split("."))
            sealed = self.key.matches(_PURPOSE + body, check, user)
            found = json.loads(body) if sealed else {}
        except (ValueError, binascii.Error):
            sealed, found = False, {}
        if not (sealed and isinstance(found, dict) and found.get("tool") == tool):
            raise refused("not_this_calls")
        if not isinstance(found.get("expires"), int) or found["expires"] < self.clock():
            raise refused("expired")
        return {key for key in found.get("approved") or [] if isinstance(key, str)}


def refused(reason: str) -> ToolFailure:
    """The refusal of a ``request_state`` that is not this call's (altered, forged, another caller's or
    another tool's: ``not_this_calls``) or that ``expired``."""
    why = "expired" if reason == "expired" else "is not one this server handed out for this call and caller"
    return ToolFailure(
        ErrorCode.INVALID_INPUT,
        f"The call's request_state {why}; nothing was changed. Call the tool again (without it): the user "
        "is asked again.",
        details={"parameter": "request_state", "reason": reason},
        retryable=False,
    )

"""The MCP SDK's seal of a call's ``requestState`` on the wire (the 2026-07-28 protocol), under this server's key.

``MCPServer`` encrypts every ``requestState`` it hands out and refuses one it cannot open (-32602 "Invalid or
expired requestState"); left to itself it does so under a key of its process, so a client's retry with the
user's answer that reached a team's other instance, or this one restarted, was refused. Here its key is
derived from the key that seals cursors (``mail/sealing.py``: the state directory's, or the one a team
shares through Redis), so every instance opens what any of them sealed, and it is renewed every period:
a state is sealed under its period's key and opened under that one, the previous period's (a state handed
out as a period ended) or the next's (an instance whose clock runs a little ahead). A period is the SDK's
lifetime, so a key opens the states sealed under the previous one for one lifetime, and no longer.

The SDK's lifetime is the server's own (``request_state.py``, ``[server] request_state_ttl_s``) plus
:data:`MARGIN_S`: an expired state then reaches the tool's own check and is answered as an envelope
(``invalid_input``, ``details.reason: expired``) that says what to do, where the SDK's refusal cannot.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from mcp.server.mcpserver import AESGCMRequestStateCodec, RequestStateSecurity

from mail_imap_mcp.envelope.request_state import Sealing

#: Seconds the SDK's seal outlives the server's: the tool's own check says a state expired, and two
#: instances' clocks may differ by up to this much.
MARGIN_S = 60.0
_SECRET_BYTES = 32
_PURPOSE = b"mail-imap-mcp wire request state\0"


class RotatingCodec:
    """The SDK's AES-GCM codec (a ``RequestStateCodec``) under a key derived from ``key`` for each period
    of ``period_s`` seconds: seals under the current period's, opens under it and its two neighbours'."""

    def __init__(self, key: Sealing, period_s: float, clock: Callable[[], float] = time.time) -> None:
        self._key, self._period_s, self._clock = key, period_s, clock
        self._ring: tuple[tuple[bytes, ...], AESGCMRequestStateCodec] | None = None

    def _codec(self) -> AESGCMRequestStateCodec:
        period = int(self._clock() // self._period_s)
        secrets = tuple(
            self._key.mac(_PURPOSE + str(n).encode(), _SECRET_BYTES, "")
            for n in (period, period - 1, period + 1)  # the first seals
        )
        ring = self._ring
        if ring is None or ring[0] != secrets:  # a new period, or a new key (a test's, a restored Redis')
            ring = self._ring = (secrets, AESGCMRequestStateCodec(list(secrets)))
        return ring[1]

    def seal(self, payload: bytes) -> str:
        return self._codec().seal(payload)

    def unseal(self, token: str) -> bytes:
        """The payload of ``token`` (the SDK's ``InvalidRequestState`` when no key of the ring sealed it)."""
        return self._codec().unseal(token)


def wire_security(key: Sealing, ttl_s: float) -> RequestStateSecurity:
    """What ``MCPServer(request_state_security=...)`` seals with: ``key``'s rotating codec, the lifetime
    ``ttl_s`` of the server's own seal plus :data:`MARGIN_S` (the audience: the server's name)."""
    return RequestStateSecurity(codec=RotatingCodec(key, ttl_s + MARGIN_S), ttl=ttl_s + MARGIN_S)

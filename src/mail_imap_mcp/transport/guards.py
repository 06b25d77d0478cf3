"""What stands between the network and the MCP app over HTTP, before any token is looked at.

- :class:`HostOriginCheck`: the Host and Origin headers parsed strictly (``host[:digits]``, nothing
  else) and checked first, so a foreign Host gets 421 whether or not it carries a token.
- :class:`ConnectionGuard` with :func:`guarded_protocol`: every connection must send a request's
  headers within ``request_header_timeout_s`` (from its opening, or from its previous answer), and at
  most ``max_connections`` stay open; past that, the oldest connection that never sent the token is
  closed, so a flood of silent connections cannot lock out a client that has the token.
- :class:`RequestLimits`: a request target over :data:`MAX_TARGET_BYTES` gets 414 and headers over
  :data:`MAX_HEADER_BYTES` 431, before anything else looks at them.
- :class:`RateLimitedLog`: lines that repeat for every bad request or failed accept (a refusal, the
  event loop's "accept() out of system resource") are logged at most once per interval with the number
  suppressed; :func:`log_refusal` writes a refusal with at most :data:`LOGGED_PATH_CHARS` of its path, so
  a client without the token cannot fill the disk (docs/security.md, M2).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("mail_imap_mcp.http")

_AUTHORITY = re.compile(
    r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}))(?::(?P<port>[0-9]{1,5}|\*))?"
)
_ORIGIN = re.compile(r"(?P<scheme>https?)://(?P<authority>[^/?#@\s]+)")
ANY_PORT = -1


@dataclass(frozen=True)
class Authority:
    """A host (lower case) and a port: None when absent, :data:`ANY_PORT` for ``*`` in a pattern."""

    host: str
    port: int | None

    @classmethod
    def parse(cls, value: str, *, pattern: bool = False) -> Authority | None:
        """``host[:port]`` with a port of digits only (``*`` too when ``pattern``); else None."""
        found = _AUTHORITY.fullmatch(value)
        if found is None:
            return None
        port_text = found.group("port")
        if port_text == "*":
            return cls(found.group("host").lower(), ANY_PORT) if pattern else None
        port = int(port_text) if port_text is not None else None
        if port is not None and not 0 < port <= 65535:
            return None
        return cls(found.group("host").lower(), port)

    def admits(self, given: Authority) -> bool:
        """Whether ``given`` matches this pattern (a pattern without a port admits any port)."""
        if given.host != self.host:
            return False
        return self.port in (None, ANY_PORT) or self.port == given.port


@dataclass(frozen=True)
class AllowedOrigins:
    """Origins (``scheme://host[:port]``, port ``*`` for any) accepted from browser clients."""

    patterns: tuple[tuple[str, Authority], ...]

    @classmethod
    def of(cls, origins: Iterable[str]) -> AllowedOrigins:
        parsed = [_origin(origin, pattern=True) for origin in origins]
        return cls(tuple(entry for entry in parsed if entry is not None))

    def admit(self, value: str) -> bool:
        given = _origin(value, pattern=False)
        if given is None:
            return False
        scheme, authority = given
        return any(
            scheme == allowed_scheme
            and pattern.admits(authority)
            and (pattern.port is not None or authority.port is None)
            for allowed_scheme, pattern in self.patterns
        )


def _origin(value: str, *, pattern: bool) -> tuple[str, Authority] | None:
    found = _ORIGIN.fullmatch(value)
    if found is None:
        return None
    authority = Authority.parse(found.group("authority"), pattern=pattern)
    return None if authority is None else (found.group("scheme"), authority)


#: A refused request's line is logged with at most this much of its path (repr, then the length).
LOGGED_PATH_CHARS = 100
#: The longest request target (path and query) and the most header bytes a request may carry.
MAX_TARGET_BYTES = 8 * 1024
MAX_HEADER_BYTES = 32 * 1024
#: Every refusal's log line starts with this (see :class:`RateLimitedLog`).
REFUSED = "refused "


def loggable_path(path: str) -> str:
    """``path`` for a log line: its repr, cut to :data:`LOGGED_PATH_CHARS` characters with its length."""
    if len(path) <= LOGGED_PATH_CHARS:
        return repr(path)
    return f"{path[:LOGGED_PATH_CHARS]!r}... ({len(path)} characters)"


def log_refusal(scope: Scope, status: int, why: str) -> None:
    """One line for a refused request: status, method, the start of its path, its peer and why. Rate
    limited per status by :class:`RateLimitedLog`: a flood of one kind does not hide the others."""
    method = str(scope.get("method", "?"))[:16]
    path = loggable_path(str(scope.get("path", "")))
    why = f"{REFUSED}{status} {method} {path} from {_peer(scope)}: {why}"
    log.warning("%s", why, extra={"rate_key": status})


async def _refuse(send: Send, status: int, text: str) -> None:
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


class RequestLimits:
    """414 for a request target longer than :data:`MAX_TARGET_BYTES`, 431 for headers over
    :data:`MAX_HEADER_BYTES` (h11's own limit holds only for requests that arrive in pieces)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            target = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
            headers = sum(len(name) + len(value) for name, value in scope["headers"])
            if target > MAX_TARGET_BYTES:
                log_refusal(scope, 414, f"request target of {target} bytes")
                await _refuse(send, 414, "URI Too Long")
                return
            if headers > MAX_HEADER_BYTES:
                log_refusal(scope, 431, f"{headers} bytes of headers")
                await _refuse(send, 431, "Request Header Fields Too Large")
                return
        await self.app(scope, receive, send)


class HostOriginCheck:
    """421 for a Host, 403 for an Origin that is not allowed, before authentication (DNS-rebinding
    protection that a malformed header such as ``localhost:80@evil.example`` cannot slip through)."""

    def __init__(self, app: ASGIApp, hosts: Iterable[str], origins: Iterable[str]) -> None:
        self.app = app
        self._hosts = tuple(
            authority for authority in (Authority.parse(host, pattern=True) for host in hosts) if authority
        )
        self._origins = AllowedOrigins.of(origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        hosts = [value for name, value in scope["headers"] if name == b"host"]
        origins = [value for name, value in scope["headers"] if name == b"origin"]
        if len(hosts) != 1 or not self._host_allowed(hosts[0].decode("latin-1")):
            log_refusal(scope, 421, "invalid Host header")
            await _refuse(send, 421, "Invalid Host header")
            return
        if len(origins) > 1 or (origins and not self._origins.admit(origins[0].decode("latin-1"))):
            log_refusal(scope, 403, "invalid Origin header")
            await _refuse(send, 403, "Invalid Origin header")
            return
        await self.app(scope, receive, send)

    def _host_allowed(self, value: str) -> bool:
        given = Authority.parse(value)
        return given is not None and any(pattern.admits(given) for pattern in self._hosts)


def _peer(scope: Scope) -> str:
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else "unknown client"


def connection_cap(max_connections: int) -> int:
    """``max_connections``, kept below half the process's file-descriptor limit (IMAP connections,
    spooled attachments and extraction children need the rest)."""
    try:
        import resource
    except ImportError:  # Windows: sockets are handles, with no descriptor limit of this kind
        return max_connections
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return max_connections
    return max(4, min(max_connections, soft // 2))


class ConnectionGuard:
    """The open HTTP connections of one server: header deadline, cap and who sent the token."""

    def __init__(self, *, header_timeout_s: float, max_connections: int) -> None:
        self.header_timeout_s = header_timeout_s
        self.max_connections = connection_cap(max_connections)
        #: Open connections, oldest first (dicts keep insertion order).
        self._open: dict[_GuardedProtocol, None] = {}
        self._trusted: set[tuple[str, int]] = set()
        self.closed_for_room = 0
        self.closed_for_silence = 0

    def opened(self, connection: _GuardedProtocol) -> bool:
        """Registers ``connection``; False when it must be closed at once (no room)."""
        self._open[connection] = None
        if len(self._open) <= self.max_connections:
            return True
        victim = next(
            (
                other
                for other in self._open
                if other is not connection
                and not other.transport.is_closing()
                and not self._is_trusted(other)
            ),
            None,
        )
        self.closed_for_room += 1
        if victim is None:
            self._open.pop(connection, None)
            return False
        victim.close_now()
        return True

    def closed(self, connection: _GuardedProtocol) -> None:
        self._open.pop(connection, None)
        if connection.client is not None:
            self._trusted.discard(connection.client)

    def trust(self, client: tuple[str, int] | None) -> None:
        """The connection from ``client`` sent the token: never closed to make room."""
        if client is not None:
            self._trusted.add(tuple(client))  # type: ignore[arg-type]

    def _is_trusted(self, connection: _GuardedProtocol) -> bool:
        return connection.client is not None and tuple(connection.client) in self._trusted


class _GuardedProtocol(H11Protocol):
    """uvicorn's h11 protocol with a header deadline and a place under :class:`ConnectionGuard`."""

    guard: ConnectionGuard

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_deadline: asyncio.TimerHandle | None = None
        self._cycles_seen: object = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if not self.guard.opened(self):
            self.close_now()
            return
        self._await_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        self.guard.closed(self)
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not None and self.cycle is not self._cycles_seen:
            self._cycles_seen = self.cycle  # a request's headers arrived
            self._stop_waiting()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._await_headers()

    def close_now(self) -> None:
        self._stop_waiting()
        if not self.transport.is_closing():
            self.transport.close()

    def _await_headers(self) -> None:
        self._stop_waiting()
        self._header_deadline = self.loop.call_later(self.guard.header_timeout_s, self._headers_late)

    def _stop_waiting(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _headers_late(self) -> None:
        self._header_deadline = None
        if self.cycle is not None and self.cycle is self._cycles_seen and not self.cycle.response_complete:
            return  # a request is being served: the deadline is for headers only
        self.guard.closed_for_silence += 1
        self.close_now()


def guarded_protocol(guard: ConnectionGuard) -> type[H11Protocol]:
    """The HTTP protocol class for uvicorn's ``http=`` setting, bound to ``guard``."""
    return type("GuardedH11Protocol", (_GuardedProtocol,), {"guard": guard})


class TrustOnToken:
    """Placed behind the bearer check: a request that reaches it sent the token, so its connection
    is one :class:`ConnectionGuard` never closes to make room."""

    def __init__(self, app: ASGIApp, guard: ConnectionGuard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.guard.trust(scope.get("client"))
        await self.app(scope, receive, send)


class RateLimitedLog(logging.Filter):
    """Lets a record whose message starts with ``prefix`` through at most once per ``interval_s`` for each
    ``rate_key`` it carries (``extra={"rate_key": ...}``; one for all without); the next one that passes
    says how many were suppressed. Records without the prefix pass. ``clock`` (monotonic seconds) is the
    one the interval is timed by."""

    def __init__(self, prefix: str, interval_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.prefix = prefix
        self.interval_s = interval_s
        self.clock = clock
        self._last: dict[object, float] = {}
        self._suppressed: dict[object, int] = {}

    @property
    def suppressed(self) -> int:
        """Records suppressed since the last one let through (of every key)."""
        return sum(self._suppressed.values())

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.getMessage().startswith(self.prefix):
            return True
        key = getattr(record, "rate_key", None)
        now = self.clock()
        if now - self._last.get(key, -float("inf")) < self.interval_s:
            self._suppressed[key] = self._suppressed.get(key, 0) + 1
            return False
        self._last[key] = now
        suppressed = self._suppressed.pop(key, 0)
        if suppressed:
            record.msg = f"{record.msg} ({suppressed} more suppressed)"
        record.exc_info = None  # the traceback says nothing the message does not
        return True


#: The event loop's message for a failed accept (e.g. no file descriptor left).
ACCEPT_FAILURE = "socket.accept() out of system resource"


async def send_json(
    send: Send, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]]
) -> None:
    """Answer an HTTP request with ``body`` as JSON (a refusal or metadata the MCP app never sees)."""
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def bearer_of(scope: Scope) -> tuple[bytes, bytes, list[tuple[bytes, bytes]]]:
    """A request's Authorization scheme and credentials (empty when absent), and its other headers:
    what goes on once the header is checked, so nothing downstream sees or logs it."""
    given = b""
    others = []
    for name, value in scope["headers"]:
        if name == b"authorization":
            given = value
        else:
            others.append((name, value))
    scheme, _, credentials = given.strip().partition(b" ")
    return scheme, credentials, others

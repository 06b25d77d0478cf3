"""MCP over streamable HTTP at ``/mcp``: bearer token, Host/Origin checks, graceful shutdown.

The SDK serves the protocol (stateful sessions, so elicitation can reach the client). Around it,
ASGI layers of our own: CORS for the configured browser origins only (:func:`with_cors`),
:class:`BearerAuth` (so an unauthenticated caller learns nothing) and :class:`Drain` (refuses new
calls once SIGTERM arrived and tells shutdown when none is in flight).
Outermost, :mod:`mail_imap_mcp.transport.guards` checks Host and Origin strictly (before the token)
and bounds connections: a deadline for request headers and a cap that closes connections without the
token first. The SDK's DNS-rebinding protection, with the list built by :func:`transport_security`,
checks again behind it. With the shared bearer token no OAuth metadata is published: the token is a
shared secret, not issued by an authorization server. With ``[http.auth]``, :mod:`.oauth` takes the
bearer check's place: each request carries a user's access token, and the server publishes its
protected resource metadata (RFC 9728).
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import math
import os
import re
import signal
import socket
from collections.abc import Iterator

import anyio
import uvicorn
from mcp.server.transport_security import TransportSecuritySettings
from sse_starlette.sse import AppStatus
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import Config, ConfigError, HttpSettings, is_loopback_host
from mail_imap_mcp.config.local_files import refuse_over_http
from mail_imap_mcp.credentials.secrets import introspection_secret
from mail_imap_mcp.server import build_server
from mail_imap_mcp.transport import close_app
from mail_imap_mcp.transport.guards import (
    ACCEPT_FAILURE,
    MAX_HEADER_BYTES,
    REFUSED,
    ConnectionGuard,
    HostOriginCheck,
    RateLimitedLog,
    RequestLimits,
    TrustOnToken,
    bearer_of,
    guarded_protocol,
    log_refusal,
    send_json,
)
from mail_imap_mcp.transport.oauth import AccessTokenVerifier, ResourceServerAuth, metadata_url

log = logging.getLogger("mail_imap_mcp.http")

MCP_PATH = "/mcp"
REALM = "mail-imap-mcp"
#: Host header values (and ``http://`` origins) of a loopback listener.
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
#: Largest request body read while draining to tell answers (let through) from new calls (refused).
_DRAIN_BODY_LIMIT = 4 * 1024 * 1024
#: At most one "accept() out of system resource" line per this many seconds (the loop repeats it).
_ACCEPT_FAILURE_LOG_INTERVAL_S = 10.0
#: Refused requests are logged at most once per this many seconds, with how many were not.
REFUSAL_LOG_INTERVAL_S = 5.0
#: After the calls in flight ended (or the grace ran out): time left for open streams to close.
_STREAMS_CLOSE_S = 2


def transport_security(settings: HttpSettings) -> TransportSecuritySettings:
    """DNS-rebinding protection: the Host and Origin values requests may carry.

    Bound to loopback, the loopback names on any port are accepted; ``allowed_hosts`` and
    ``allowed_origins`` add to that (and are the whole list beyond loopback). A host given without
    a port is accepted on any port.
    """
    hosts: list[str] = []
    origins: list[str] = []
    if is_loopback_host(settings.host):
        for name in LOOPBACK_NAMES:
            hosts += [name, f"{name}:*"]
            origins += [f"http://{name}", f"http://{name}:*"]
    for entry in settings.allowed_hosts:
        hosts.append(entry)
        if ":" not in entry.rsplit("]", 1)[-1]:
            hosts.append(f"{entry}:*")
    origins += settings.allowed_origins
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def with_cors(app: ASGIApp, settings: HttpSettings) -> ASGIApp:
    """CORS for the browser clients of ``allowed_origins`` only (none otherwise): their preflight is
    answered before authentication (a preflight carries no token), and their responses, 401
    included, are readable by the page. The Origin check itself stays the SDK's."""
    if not settings.allowed_origins:
        return app
    exact = [origin for origin in settings.allowed_origins if not origin.endswith(":*")]
    any_port = [origin.removesuffix(":*") for origin in settings.allowed_origins if origin.endswith(":*")]
    return CORSMiddleware(
        app,
        allow_origins=exact,
        allow_origin_regex="|".join(f"{re.escape(base)}:[0-9]+" for base in any_port) or None,
        allow_methods=["GET", "POST", "DELETE"],
        allow_headers=[
            "Authorization",
            "Content-Type",
            "Mcp-Session-Id",
            "Mcp-Protocol-Version",
            "Last-Event-Id",
        ],
        expose_headers=["Mcp-Session-Id", "Mcp-Protocol-Version", "WWW-Authenticate", "Retry-After"],
    )


class BearerAuth:
    """Lets a request through only with ``Authorization: Bearer <token>`` (compared in constant
    time); otherwise 401 with ``WWW-Authenticate: Bearer``. The header is removed before the request
    goes on, so nothing downstream can log it."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scheme, credentials, others = bearer_of(scope)
        if scheme.lower() != b"bearer":
            # RFC 6750 section 3.1: no error code when the request carried no bearer credentials.
            challenge = f'Bearer realm="{REALM}"'
            error, description = "unauthorized", "Authorization: Bearer <token> is required"
        elif hmac.compare_digest(credentials.strip(), self._token):
            await self.app({**scope, "headers": others}, receive, send)
            return
        else:
            challenge = f'Bearer realm="{REALM}", error="invalid_token"'
            error, description = "invalid_token", "the bearer token is not valid for this server"
        log_refusal(scope, 401, description)
        await send_json(
            send,
            401,
            {"error": error, "error_description": description},
            [(b"www-authenticate", challenge.encode())],
        )


def _is_new_call(body: bytes) -> bool:
    """Whether a JSON-RPC body holds a request (has ``method`` and ``id``); answers to the server's
    own requests (elicitation) and notifications (cancellation) are not new calls."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return True
    messages = parsed if isinstance(parsed, list) else [parsed]
    return any(isinstance(m, dict) and "method" in m and "id" in m for m in messages)


class Drain:
    """Counts requests in flight; once :meth:`drain` began, refuses new calls with 503 while answers
    and notifications for the calls still running get through."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.draining = False
        self._in_flight = 0
        self._idle = anyio.Event()
        self._idle.set()

    @property
    def in_flight(self) -> int:
        return self._in_flight

    async def drain(self, grace_s: float) -> bool:
        """Refuse new calls and wait up to ``grace_s`` for the requests in flight; True if they ended."""
        self.draining = True
        with anyio.move_on_after(grace_s):
            await self._idle.wait()
        return self._in_flight == 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # GET is the long-lived stream of server messages: it is not a call, and not waited for.
        if scope["type"] != "http" or scope["method"] != "POST":
            if self.draining and scope["type"] == "http" and scope["method"] == "GET":
                await self._refuse(send)
                return
            await self.app(scope, receive, send)
            return
        if self.draining:
            body, more = await _read_body(receive, _DRAIN_BODY_LIMIT)
            if more or _is_new_call(body):
                await self._refuse(send)
                return
            receive = _replay(body, receive)
        if self._in_flight == 0:
            self._idle = anyio.Event()
        self._in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle.set()

    @staticmethod
    async def _refuse(send: Send) -> None:
        await send_json(
            send,
            503,
            {
                "jsonrpc": "2.0",
                "id": None,
                "error": {
                    "code": -32000,
                    "message": "the server is shutting down; retry on another instance",
                },
            },
            [(b"retry-after", b"5"), (b"connection", b"close")],
        )


async def _read_body(receive: Receive, limit: int) -> tuple[bytes, bool]:
    """The request body up to ``limit`` bytes, and whether more was left unread."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return bytes(body), False
        body += message.get("body", b"")
        if len(body) > limit:
            return bytes(body), True
        if not message.get("more_body", False):
            return bytes(body), False


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


class _Uvicorn(uvicorn.Server):
    """uvicorn without its own signal handlers: SIGTERM first drains the calls in flight (see
    :func:`serve_http`), which uvicorn's handler would cut short."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``; :class:`ConfigError` naming ``--host``/``--port`` if not."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise ConfigError(
            f"--host / [http] host {host}: cannot listen there ({exc.strerror or exc})"
        ) from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"cannot listen on {host} port {port} ({exc.strerror or exc}); choose another with --port "
            "or port in [http]"
        ) from None
    sock.setblocking(False)
    return sock


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}{MCP_PATH}"


async def serve_http(config: Config, settings: HttpSettings, token: str | None, sock: socket.socket) -> None:
    """Serve MCP over streamable HTTP on ``sock`` (see :func:`bind`) until SIGTERM/SIGINT, then
    drain and log out."""
    refuse_over_http(config.server.attachment_dirs, config.server.download_dir, "the HTTP transport")
    app = AppContext.from_config(config)
    app.pool.prepare()
    server = build_server(config, app)
    starlette = server.streamable_http_app(
        streamable_http_path=MCP_PATH, transport_security=transport_security(settings), host=settings.host
    )
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        # Their INFO lines (startup, session ids) add nothing to ours; DEBUG shows them.
        for noisy in ("uvicorn", "mcp.server"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
    drain = Drain(starlette)
    guard = ConnectionGuard(
        header_timeout_s=settings.request_header_timeout_s, max_connections=settings.max_connections
    )
    allowed = transport_security(settings)
    checked: ASGIApp = drain
    if settings.auth is not None:
        secret = introspection_secret(settings.auth) if settings.auth.introspection_url else None
        checked = ResourceServerAuth(TrustOnToken(drain, guard), AccessTokenVerifier(settings.auth, secret))
    elif token is not None:
        checked = BearerAuth(TrustOnToken(drain, guard), token)
    asgi = RequestLimits(
        HostOriginCheck(with_cors(checked, settings), allowed.allowed_hosts, allowed.allowed_origins)
    )
    logging.getLogger("asyncio").addFilter(RateLimitedLog(ACCEPT_FAILURE, _ACCEPT_FAILURE_LOG_INTERVAL_S))
    log.addFilter(RateLimitedLog(REFUSED, REFUSAL_LOG_INTERVAL_S))
    uvicorn_server = _Uvicorn(
        uvicorn.Config(
            asgi,
            http=guarded_protocol(guard),
            h11_max_incomplete_event_size=MAX_HEADER_BYTES,
            log_config=None,
            access_log=False,
            server_header=False,
            lifespan="on",
            timeout_graceful_shutdown=_STREAMS_CLOSE_S,
            # The guard's header deadline is the one idle limit: uvicorn's own 5 s equalled the idle time
            # of the SDK's client (httpx2, 5 s), so a call sent as uvicorn closed failed unretried.
            timeout_keep_alive=math.ceil(settings.request_header_timeout_s) + 1,
        )
    )
    if settings.auth is not None:
        log.info(
            "each user signs in with an access token of %s; metadata at %s",
            settings.auth.issuer,
            metadata_url(settings.auth),
        )
    elif token is None:
        log.warning(
            "no bearer token configured: any program on this machine can use the mailboxes through %s "
            "(set token_env, token_file or token_command in [http])",
            _url(sock),
        )
    how = "access tokens" if settings.auth else "bearer token required" if token else "no token"
    log.info("serving MCP at %s (%s)", _url(sock), how)

    async def shut_down(scope: anyio.CancelScope) -> None:
        with scope:
            if not await drain.drain(settings.shutdown_grace_s):
                log.warning("%d call(s) still running after the grace period: cancelled", drain.in_flight)
        # Ends the open SSE streams (sse-starlette's documented switch), then uvicorn stops.
        AppStatus.should_exit = True
        uvicorn_server.should_exit = True
        # A cancelled call whose IMAP command still blocks its worker thread would hold uvicorn's
        # shutdown until that command times out: past this bound, log out and leave.
        await anyio.sleep(_STREAMS_CLOSE_S + 1)
        log.warning("shutdown still waiting for a blocked IMAP command: exiting without it")
        await close_app(app)
        log.info("stopped")
        logging.shutdown()
        os._exit(0)

    async with anyio.create_task_group() as group:

        async def stop_on_signal() -> None:
            # One receiver for both signals: a second one cuts the wait for calls in flight short.
            waiting: anyio.CancelScope | None = None
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for signum in signals:
                    if waiting is None:
                        log.info(
                            "signal %s received: refusing new calls, waiting up to %g s for %d in flight",
                            signum,
                            settings.shutdown_grace_s,
                            drain.in_flight,
                        )
                        waiting = anyio.CancelScope()
                        group.start_soon(shut_down, waiting)
                    else:
                        log.warning("second signal: not waiting for the calls in flight")
                        waiting.cancel()

        group.start_soon(stop_on_signal)
        await uvicorn_server.serve(sockets=[sock])
        group.cancel_scope.cancel()
    await close_app(app)

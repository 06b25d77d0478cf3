"""The suite's small HTTP servers on loopback (an identity provider, an issuer's metadata, an
introspection endpoint, a web page): their JSON answer, a server served from a thread for as long as
a test needs it, a site that records every request (another site, or a canary nobody may reach), and a
listener that counts every connection (a canary for what connects and requests nothing)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

from tests.support.patience import patient

ServerT = TypeVar("ServerT", bound=ThreadingHTTPServer)


def send_json(handler: BaseHTTPRequestHandler, status: int, payload: Any) -> None:
    """Answer ``handler``'s request with ``payload`` as JSON, its length declared (so that an HTTP/1.1
    connection stays open for the next request)."""
    body = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


@contextmanager
def serving(server: ServerT) -> Iterator[ServerT]:
    """``server`` answering from a thread of its own until the block ends, then shut down and closed."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=patient(10))


@dataclass
class RecordingSite:
    """A web site on loopback: serves the pages a test puts in ``pages`` (404 otherwise) and records the
    path of every request in ``hits``."""

    port: int = 0
    pages: dict[str, str] = field(default_factory=dict)
    hits: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextmanager
def recording_site() -> Iterator[RecordingSite]:
    """A :class:`RecordingSite` answering from a thread until the block ends."""
    site = RecordingSite()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            site.hits.append(self.path)
            page = site.pages.get(self.path)
            body = (page or "not found").encode()
            self.send_response(200 if page is not None else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    with serving(ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as server:
        site.port = server.server_address[1]
        yield site


@dataclass
class ConnectionCanary:
    """A listener on loopback that counts every connection made to it, whether or not a request follows
    (a browser's preconnect opens one and sends nothing): a host nobody may reach."""

    port: int = 0
    connections: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextmanager
def connection_canary() -> Iterator[ConnectionCanary]:
    """A :class:`ConnectionCanary` counting from a thread until the block ends (each connection is
    closed at once, unanswered)."""
    canary = ConnectionCanary()
    listener = socket.create_server(("127.0.0.1", 0))
    canary.port = listener.getsockname()[1]

    def count() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:  # the listener closed: the block ended
                return
            canary.connections += 1
            connection.close()

    thread = threading.Thread(target=count, daemon=True)
    thread.start()
    try:
        yield canary
    finally:
        with suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept (closing alone does not)
        listener.close()
        thread.join(timeout=patient(10))

"""The suite's small HTTP servers on loopback (an identity provider, an issuer's metadata, an
introspection endpoint, a web page): their JSON answer, and a server served from a thread for as long as
a test needs it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
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

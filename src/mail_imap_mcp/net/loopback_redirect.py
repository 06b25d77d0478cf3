"""The loopback redirect of a native app's sign-in (RFC 8252 section 7.3): a listener on 127.0.0.1 at a port
the system gives, whose one redirect on the exact path is taken and answered, after which it closes.
Requests for other paths (a browser's favicon) are answered 404 and do not count.
"""

from __future__ import annotations

import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from types import TracebackType
from typing import Self

CALLBACK_PATH = "/callback"
_DONE_PAGE = (
    b"<!doctype html><meta charset=utf-8><title>mail-imap-mcp</title>"
    b"<p>mail-imap-mcp received the answer of the sign-in. You can close this tab and return to the terminal."
)


class RedirectListener:
    """Use as a context manager; :attr:`redirect_uri` goes in the authorization request."""

    def __init__(self, port: int = 0) -> None:
        """Listen on 127.0.0.1 at ``port`` (0: one the system gives); OSError if it is taken."""
        self.received: str | None = None
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?", 1)[0] != CALLBACK_PATH or listener.received is not None:
                    self.send_error(404)
                    return
                listener.received = f"{listener.redirect_uri}{self.path[len(CALLBACK_PATH) :]}"
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(_DONE_PAGE)))
                self.end_headers()
                self.wfile.write(_DONE_PAGE)

            def log_message(self, format: str, *args: object) -> None:
                pass  # the request line holds the authorization code

        self._server = HTTPServer(("127.0.0.1", port), Handler)

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}{CALLBACK_PATH}"

    def wait(self, timeout_s: float) -> str | None:
        """The redirect's full URL, or None when none came within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while self.received is None and (left := deadline - time.monotonic()) > 0:
            self._server.timeout = min(left, 1.0)
            self._server.handle_request()
        return self.received

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.server_close()

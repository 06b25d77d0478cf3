"""A loopback OAuth2 token introspection endpoint (RFC 7662) for Dovecot's ``oauth2`` passdb.

``IntrospectionEndpoint`` serves ``POST /introspect`` (form field ``token``, Dovecot's
``introspection_mode = post``) and ``GET /introspect?token=<token>`` (``introspection_mode = get``) on
``127.0.0.1`` at a port picked by the OS. A token given to :meth:`accept` is active and names its
user; every other token (or one :meth:`revoke`\\ d since) answers ``{"active": false}``, which Dovecot
turns into a failed login. ``requests`` counts the lookups, so a test can tell how often the server
asked. Within :meth:`down` every lookup is answered ``503``: Dovecot cannot tell whether a token is good
then, and answers ``NO [UNAVAILABLE] Temporary authentication failure``.
"""

from __future__ import annotations

import secrets
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Self

from tests.support.servers.loopback_http import send_json

__all__ = ["IntrospectionEndpoint", "TokenHelper", "new_token"]


def new_token(prefix: str = "tok") -> str:
    """A unique access token (URL-safe, so it needs no escaping in a form or a path)."""
    return f"{prefix}-{secrets.token_urlsafe(24)}"


class IntrospectionEndpoint:
    """Answers Dovecot's introspection requests; use as a context manager."""

    path = "/introspect"

    def __init__(self) -> None:
        self._active: dict[str, tuple[str, str]] = {}
        self._lock = threading.Lock()
        self.requests = 0
        self._down = False
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = urllib.parse.parse_qs(self.rfile.read(length).decode("utf-8", "replace"))
                self._answer(form.get("token", [""])[0])

            def do_GET(self) -> None:
                query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                self._answer(query.get("token", [""])[0])

            def _answer(self, token: str) -> None:
                found = endpoint.introspect(token)
                if endpoint._down:
                    self.send_error(503)
                    return
                send_json(self, 200, found)

            def log_message(self, format: str, *args: object) -> None:
                pass  # tokens are in the request line: never print it

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="introspection", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The endpoint's URL (Dovecot's ``get`` mode appends the token: give it ``url + "?token="``)."""
        return f"http://127.0.0.1:{self.port}{self.path}"

    def accept(self, token: str, username: str, scope: str = "mail") -> None:
        """Make ``token`` an active token of ``username`` with ``scope`` (Dovecot's harness wants ``mail``)."""
        with self._lock:
            self._active[token] = (username.lower(), scope)

    def revoke(self, token: str) -> None:
        """``token`` is no longer active (it expired)."""
        with self._lock:
            self._active.pop(token, None)

    @contextmanager
    def down(self) -> Iterator[None]:
        """Within: every lookup is counted and answered ``503 Service Unavailable``."""
        self._down = True
        try:
            yield
        finally:
            self._down = False

    def introspect(self, token: str) -> dict[str, object]:
        with self._lock:
            self.requests += 1
            found = self._active.get(token)
        if found is None:
            return {"active": False}
        return {"active": True, "username": found[0], "scope": found[1]}

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()


_HELPER = """\
import pathlib, sys
state = pathlib.Path(sys.argv[1])
runs = state / "runs"
runs.write_text(str(int(runs.read_text()) + 1 if runs.exists() else 1))
tokens = (state / "tokens").read_text().splitlines()
if len(tokens) > 1:
    (state / "tokens").write_text("\\n".join(tokens[1:]) + "\\n")
sys.stdout.write(tokens[0] + "\\n")
"""


class TokenHelper:
    """A stand-in for pizauth/oauth2l: ``command`` prints the next token of a queue (the last one again
    once the queue is down to one) and counts its runs."""

    def __init__(self, directory: Path, *tokens: str) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "helper.py").write_text(_HELPER)
        self.queue(*tokens)

    @property
    def command(self) -> list[str]:
        return [sys.executable, str(self.directory / "helper.py"), str(self.directory)]

    def queue(self, *tokens: str) -> None:
        """The tokens the next runs print, in order."""
        (self.directory / "tokens").write_text("".join(f"{token}\n" for token in tokens))

    @property
    def runs(self) -> int:
        path = self.directory / "runs"
        return int(path.read_text()) if path.exists() else 0

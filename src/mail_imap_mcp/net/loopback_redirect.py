"""The loopback redirect of a native app's sign-in (RFC 8252 section 7.3): a listener on 127.0.0.1 at a port
the system gives, whose one redirect on the exact path is taken and answered, after which it closes.

Only a request that names this listener as its Host and carries the ``state`` of the sign-in it waits
for (:meth:`RedirectListener.expect`) is taken: any other is answered and does not end the sign-in (a
browser's favicon, a guess, another local program's forged answer). A connection of another OS user's
program is refused before anything is read (:mod:`.local_peer`). Where peers are checked,
:data:`~.local_peer.LAUNCH_PATH` forwards this user's browser to the authorization URL, so that the
address a browser is given (:attr:`RedirectListener.opening_url`) holds no secret.
"""

from __future__ import annotations

import hmac
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer
from types import TracebackType
from typing import Self

from .local_peer import LAUNCH_PATH, checks_peers, loopback_host_allowed, refusal, refused_page_text

CALLBACK_PATH = "/callback"
_READ_TIMEOUT_S = 10.0
_NOT_THIS_SIGN_IN = (
    "This is not the answer to the sign-in mail-imap-mcp is waiting for (another address or another "
    "sign-in's state), so it was not taken; the sign-in goes on. Finish it in the tab mail-imap-mcp opened."
)
#: Where a user of ``mail-imap-mcp login`` goes back to.
TERMINAL = "the terminal"


def done_text(query: str, back_to: str) -> str:
    """What the browser shows once the provider sent it back: signed in, or the provider's error code
    (``back_to``: where the user returns, which says what happens next)."""
    error = urllib.parse.parse_qs(query).get("error")
    if error:
        return (
            f"The sign-in did not complete (the provider answered {error[0]}). You can close this tab; "
            f"{back_to} says what to do next."
        )
    return f"Signed in to mail-imap-mcp. You can close this tab and return to {back_to}."


def _page(text: str) -> bytes:
    escaped = text.replace("&", "&amp;").replace("<", "&lt;")
    return f"<!doctype html><meta charset=utf-8><title>mail-imap-mcp</title><p>{escaped}".encode()


class RedirectListener:
    """Use as a context manager; :attr:`redirect_uri` goes in the authorization request, whose URL and
    ``state`` go to :meth:`expect` before the browser is opened on :attr:`opening_url`."""

    def __init__(self, port: int = 0, back_to: str = TERMINAL) -> None:
        """Listen on 127.0.0.1 at ``port`` (0: one the system gives); OSError if it is taken.
        ``back_to``: where the page sends the user back (:func:`done_text`)."""
        self.received: str | None = None
        self._authorization_url: str | None = None
        self._state: str | None = None
        listener = self

        class Handler(BaseHTTPRequestHandler):
            # A connection that sends nothing must not hold the one-at-a-time listener.
            timeout = _READ_TIMEOUT_S

            def handle(self) -> None:
                why = refusal(("127.0.0.1", listener.port), self.client_address[:2])
                if why is None:
                    super().handle()
                    return
                # Before a byte is read: another user's request neither ends nor answers the sign-in.
                body = _page(refused_page_text(why))
                head = f"HTTP/1.1 403 Forbidden\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {len(body)}"
                self.wfile.write(f"{head}\r\nConnection: close\r\n\r\n".encode() + body)

            def do_GET(self) -> None:
                if not loopback_host_allowed(self.headers.get("Host"), listener.port):
                    self._answer(421, "This address is not mail-imap-mcp's sign-in listener.")
                    return
                path, _, query = self.path.partition("?")
                if path == LAUNCH_PATH and checks_peers() and listener._authorization_url is not None:
                    self._answer(303, "Go on to the sign-in page.", location=listener._authorization_url)
                elif path != CALLBACK_PATH or listener.received is not None:
                    self.send_error(404)
                elif not listener._answers_this_sign_in(query):
                    self._answer(400, _NOT_THIS_SIGN_IN)
                else:
                    listener.received = f"{listener.redirect_uri}{self.path[len(CALLBACK_PATH) :]}"
                    self._answer(200, done_text(query, back_to))

            def _answer(self, status: int, text: str, location: str | None = None) -> None:
                body = _page(text)
                self.send_response(status)
                if location is not None:
                    self.send_header("Location", location)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.send_header("Referrer-Policy", "no-referrer")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass  # the request line holds the authorization code

        self._server = HTTPServer(("127.0.0.1", port), Handler)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"

    @property
    def opening_url(self) -> str:
        """The address to give the browser: :data:`~.local_peer.LAUNCH_PATH` where peers are checked (it
        holds no secret), else the authorization URL itself (call :meth:`expect` first)."""
        assert self._authorization_url is not None, "expect() the authorization request first"
        return f"http://127.0.0.1:{self.port}{LAUNCH_PATH}" if checks_peers() else self._authorization_url

    def expect(self, authorization_url: str, state: str) -> None:
        """The authorization request the browser is sent to, and the ``state`` its answer must carry."""
        self._authorization_url, self._state = authorization_url, state

    def _answers_this_sign_in(self, query: str) -> bool:
        given = dict(urllib.parse.parse_qsl(query)).get("state")
        return (
            self._state is not None
            and given is not None
            and hmac.compare_digest(given.encode(), self._state.encode())
        )

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

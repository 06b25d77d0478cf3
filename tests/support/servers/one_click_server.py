"""A list's unsubscribe endpoint for the tests: an HTTPS server on a loopback port the system gives, with
a certificate of its own test CA (``trustme``) for a few list host names, that records every request
(method, path, headers, body) and answers by path: ``/ok`` 200, ``/redirect`` 302 to ``/next``,
``/cookie`` 200 with a ``Set-Cookie``, ``/fail`` 503, ``/hang`` nothing until the server stops.

``resolver`` answers names as the test says (``{host: [addresses]}``) and records what was asked;
``connector`` records every connection attempted before making it."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import trustme

from mail_imap_mcp.net.one_click import LoopbackAllowance, OneClickClient, tcp_connect
from tests.support.patience import patient

#: The names the server's certificate is for (an international one among them, as its A-label).
LIST_HOST = "lists.example.com"
IDN_HOST = "xn--bcher-kva.example"  # bücher.example
CERT_NAMES = (LIST_HOST, IDN_HOST)


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class OneClickServer:
    """The running server: its port, what it recorded, and a client that reaches it."""

    port: int
    ca: trustme.CA
    requests: list[Recorded] = field(default_factory=list)
    resolved: list[str] = field(default_factory=list)
    connections: list[tuple[str, int]] = field(default_factory=list)
    names: dict[str, list[str]] = field(default_factory=dict)
    stopping: threading.Event = field(default_factory=threading.Event)

    def resolver(self, host: str, timeout: float) -> Sequence[str]:
        self.resolved.append(host)
        if host not in self.names:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self.names[host]

    def connector(self, address: str, port: int, timeout: float) -> socket.socket:
        self.connections.append((address, port))
        return tcp_connect(address, port, timeout)

    def client(self, *, allowed: bool = True, deadline_s: float = 10.0) -> OneClickClient:
        """A client whose names resolve through :meth:`resolver`; ``allowed``: with the loopback
        allowance that lets it reach this server (trusting its CA)."""
        context = ssl.create_default_context()
        self.ca.configure_trust(context)
        return OneClickClient(
            resolve=self.resolver,
            connect=self.connector,
            deadline_s=deadline_s,
            allowance=LoopbackAllowance(self.port, context) if allowed else None,
        )


def _handler(server: OneClickServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            server.requests.append(Recorded(self.command, self.path, dict(self.headers.items()), body))
            path = self.path.split("?")[0]
            if path == "/hang":
                server.stopping.wait()
                return
            status = {"/redirect": 302, "/fail": 503}.get(path, 200)
            self.send_response(status)
            if status == 302:
                self.send_header("Location", f"https://{LIST_HOST}/next")
            if path == "/cookie":
                self.send_header("Set-Cookie", "tracker=seen; Secure; HttpOnly")
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = _answer

    return Handler


@contextmanager
def one_click_server() -> Iterator[OneClickServer]:
    """The server, stopped after the ``with``."""
    ca = trustme.CA(organization_name="mail-imap-mcp one-click tests")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*CERT_NAMES).configure_cert(context)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    httpd.daemon_threads = True
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    state = OneClickServer(port=httpd.server_address[1], ca=ca)
    httpd.RequestHandlerClass = _handler(state)
    thread = threading.Thread(target=httpd.serve_forever, name="one-click-server", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.stopping.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(patient(10))

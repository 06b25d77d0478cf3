"""The built-in sign-in's requests to a provider (net/oauth.py) share the process's one HTTP client (its
trust store loaded once): the discovery and the token request of a refresh go over one connection where
the provider keeps it open. A provider on loopback speaking HTTP/1.1 counts the connections opened to it."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from mail_imap_mcp.net import oauth
from mail_imap_mcp.net.oauth import OAuthClient
from tests.support.patience import patient
from tests.support.servers.loopback_http import send_json, serving


class KeepAliveProvider(ThreadingHTTPServer):
    """Its metadata where RFC 8414 puts it and a token endpoint that grants any refresh."""

    daemon_threads = True

    def __init__(self) -> None:
        self.connections = 0
        self.requests: list[str] = []
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                provider.connections += 1

            def do_GET(self) -> None:
                provider.requests.append(f"GET {self.path}")
                if self.path != "/.well-known/oauth-authorization-server":
                    send_json(self, 404, {})
                    return
                send_json(
                    self,
                    200,
                    {
                        "issuer": provider.issuer,
                        "authorization_endpoint": f"{provider.issuer}/auth",
                        "token_endpoint": f"{provider.issuer}/token",
                    },
                )

            def do_POST(self) -> None:
                provider.requests.append(f"POST {self.path}")
                form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
                assert form["grant_type"] == ["refresh_token"]
                send_json(self, 200, {"access_token": "a", "refresh_token": "r2", "expires_in": 3600})

            def log_message(self, format: str, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.issuer = f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture
def provider() -> Iterator[KeepAliveProvider]:
    with serving(KeepAliveProvider()) as server:
        yield server


def test_the_discovery_and_the_token_request_of_a_refresh_share_one_connection(
    provider: KeepAliveProvider,
) -> None:
    endpoints = oauth.discover(provider.issuer, timeout_s=patient(10))
    client = OAuthClient(endpoints, "app", ("openid",))
    answer = oauth.refresh(client, "r1", timeout_s=patient(10))
    assert answer.access.value == "a" and answer.refresh_token == "r2"
    assert provider.requests == ["GET /.well-known/oauth-authorization-server", "POST /token"]
    # One client for the process (a client per request, as httpx2's module functions make, opened a
    # connection of its own and loaded the system's trust store again, 10-20 ms of CPU each).
    assert provider.connections == 1

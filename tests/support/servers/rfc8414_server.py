"""A loopback HTTP server that publishes only an OAuth 2.0 authorization server metadata document (RFC
8414) for the issuer ``http://127.0.0.1:<port>/tenant``, at the path the RFC puts it
(``/.well-known/oauth-authorization-server/tenant``), naming a real provider's endpoints; every other
path is 404 (no OpenID Connect discovery document). It records the paths it was asked for.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

from tests.support.patience import patient
from tests.support.servers.loopback_http import send_json

TENANT_PATH = "/tenant"


class Rfc8414Server:
    """Use as a context manager; ``issuer`` is the issuer URL whose metadata it serves."""

    def __init__(self, endpoints: dict[str, Any], names_issuer: str | None = None) -> None:
        """``names_issuer``: the issuer the document names (default: its own ``issuer``)."""
        self.requested: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requested.append(self.path)
                if self.path != f"/.well-known/oauth-authorization-server{TENANT_PATH}":
                    self.send_error(404)
                    return
                send_json(self, 200, {**endpoints, "issuer": names_issuer or server.issuer})

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.issuer = f"http://127.0.0.1:{self._http.server_address[1]}{TENANT_PATH}"
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=patient(10))

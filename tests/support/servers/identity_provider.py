"""A small authorization server on a loopback socket, for the tests of ``[http.auth]``: it publishes
its signing keys (``GET /jwks``, RS256), issues JWT access tokens (``POST /token``, the
client-credentials grant naming the user and the resource; or :meth:`IdentityProvider.jwt` in the
test's own process) and opaque ones (:meth:`IdentityProvider.opaque`) that its introspection endpoint
(``POST /introspect``, RFC 7662, HTTP Basic client authentication) describes. It counts the requests
each endpoint served."""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
import urllib.parse
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.support.servers.loopback_http import send_json

CLIENT_ID = "mail-mcp"
CLIENT_SECRET = "introspection-secret-for-tests"


def _rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class IdentityProvider:
    """Use as a context manager; ``issuer`` is its URL."""

    def __init__(self) -> None:
        self.key = _rsa_key()
        self.key_id = secrets.token_hex(4)
        self.requests: Counter[str] = Counter()
        self._opaque: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = urllib.parse.urlsplit(self.path).path
                provider._count(path)
                if path == "/jwks":
                    send_json(self, 200, provider.jwks())
                else:
                    send_json(self, 404, {"error": "not_found"})

            def do_POST(self) -> None:
                path = urllib.parse.urlsplit(self.path).path
                provider._count(path)
                length = int(self.headers.get("Content-Length") or 0)
                form = {k: v[0] for k, v in urllib.parse.parse_qs(self.rfile.read(length).decode()).items()}
                if path == "/token" and form.get("grant_type") == "client_credentials":
                    token = provider.jwt(
                        form.get("user", ""),
                        audience=form.get("resource", ""),
                        scope=form.get("scope", "mail"),
                    )
                    send_json(self, 200, {"access_token": token, "token_type": "Bearer", "expires_in": 300})
                elif path == "/introspect":
                    if self.headers.get("Authorization") != provider.basic_credentials():
                        send_json(self, 401, {"error": "invalid_client"})
                        return
                    send_json(self, 200, provider.introspect(form.get("token", "")))
                else:
                    send_json(self, 400, {"error": "unsupported"})

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="identity-provider", daemon=True
        )

    def _count(self, path: str) -> None:
        with self._lock:
            self.requests[path] += 1

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def jwks_url(self) -> str:
        return self.issuer + "/jwks"

    @property
    def introspection_url(self) -> str:
        return self.issuer + "/introspect"

    def jwks(self) -> dict[str, Any]:
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**public, "kid": self.key_id, "use": "sig", "alg": "RS256"}]}

    @staticmethod
    def basic_credentials() -> str:
        return "Basic " + base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()

    def claims(self, user: str, *, audience: str, lifetime_s: float = 300, **extra: Any) -> dict[str, Any]:
        now = int(time.time())
        return {
            "iss": self.issuer,
            "sub": f"sub-{user}",
            "aud": audience,
            "preferred_username": user,
            "email": f"{user}@corp.example",
            "email_verified": True,
            "iat": now,
            "nbf": now,
            "exp": now + int(lifetime_s),
            "azp": "test-agent",
            "scope": "mail",
            **extra,
        }

    def jwt(
        self,
        user: str,
        *,
        audience: str,
        lifetime_s: float = 300,
        key: rsa.RSAPrivateKey | None = None,
        **extra: Any,
    ) -> str:
        """A signed access token for ``user`` (``extra`` claims override; ``key`` signs instead of the
        provider's own, under its key id: a forgery)."""
        claims = self.claims(user, audience=audience, lifetime_s=lifetime_s, **extra)
        return jwt.encode(claims, key or self.key, algorithm="RS256", headers={"kid": self.key_id})

    def opaque(self, user: str, *, audience: str, lifetime_s: float = 300, **extra: Any) -> str:
        """An opaque access token the introspection endpoint describes as active."""
        token = "opaque-" + secrets.token_urlsafe(24)
        with self._lock:
            self._opaque[token] = self.claims(user, audience=audience, lifetime_s=lifetime_s, **extra)
        return token

    def introspect(self, token: str) -> dict[str, Any]:
        with self._lock:
            claims = self._opaque.get(token)
        if claims is None or claims["exp"] < time.time():
            return {"active": False}
        return {"active": True, "token_type": "Bearer", "client_id": claims["azp"], **claims}

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()

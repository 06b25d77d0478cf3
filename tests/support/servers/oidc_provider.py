"""node-oidc-provider (OpenID Certified) on a loopback port, the authorization server the built-in
sign-in is tested against: tests/node/oidc-provider/server.mjs, installed by scripts/test into
.cache/oidc-provider/ (``ensure_oidc_provider``).

Its clients: :data:`PUBLIC_CLIENT` (a native app: PKCE S256 required, any loopback port, refresh tokens
rotated on every use with reuse detection, the device grant), :data:`SECRET_CLIENT` (the same with a
client secret, as Google's desktop clients have), :data:`RESOURCE_CLIENT` (the resource
server's identity Dovecot introspects tokens with) and :data:`SERVICE_CLIENT` (client credentials).
Access tokens last ``access_token_ttl`` seconds (:meth:`OidcProvider.set_access_token_ttl` changes it
for the tokens issued next; :meth:`OidcProvider.move_clock` expires them with no wait;
:meth:`OidcProvider.set_token_delay` slows the token endpoint); introspection reports the login as ``username`` and
the scope, which is what Dovecot's ``oauth2`` passdb checks (:meth:`OidcProvider.dovecot_settings`).
:attr:`OidcProvider.token_requests` counts the token endpoint's requests.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import shlex
import shutil
import subprocess
import sys
import threading
import urllib.parse
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from tests.support.clients.oidc_browser import approve
from tests.support.patience import eventually, patient
from tests.support.servers.imapserver import free_ports

ROOT = Path(__file__).resolve().parents[3]
INSTALL_DIR = ROOT / ".cache" / "oidc-provider"
MODULE = INSTALL_DIR / "node_modules" / "oidc-provider" / "lib" / "index.js"
SCRIPT = ROOT / "tests" / "node" / "oidc-provider" / "server.mjs"
BROWSER_SCRIPT = Path(__file__).parent.parent / "clients" / "oidc_browser.py"

PUBLIC_CLIENT = "mail-imap-mcp-tests"
RESOURCE_CLIENT = "dovecot"
RESOURCE_SECRET = "dovecot-introspection-secret"
#: A Google-shaped desktop client: a native app that also has a client secret (sent in the body).
SECRET_CLIENT = "desktop-with-secret"
SECRET_CLIENT_SECRET = "desktop-client-secret-for-tests"
SERVICE_CLIENT = "mail-service"
SERVICE_SECRET = "mail-service-secret"
#: The scope Dovecot requires of a token (its ``scope = mail``).
MAIL_SCOPE = "mail"


def installed() -> bool:
    return shutil.which("node") is not None and MODULE.is_file()


def browser_signing_in_as(user: str) -> dict[str, str]:
    """The environment whose ``BROWSER`` (:data:`BROWSER_SCRIPT`) signs in as ``user`` at the page the
    server opens."""
    return {
        "BROWSER": f"{shlex.quote(sys.executable)} {shlex.quote(str(BROWSER_SCRIPT))} %s",
        "OIDC_TEST_LOGIN": user,
    }


class OidcProvider:
    """Use as a context manager; ``issuer`` is its URL (its OpenID discovery document lies below it)."""

    def __init__(self, directory: Path, access_token_ttl: int = 3600) -> None:
        self.port = free_ports("127.0.0.1")[0]
        self.issuer = f"http://127.0.0.1:{self.port}"
        directory.mkdir(parents=True, exist_ok=True)
        self._ttl_file = directory / "access-token-ttl"
        self._delay_file = directory / "token-delay-ms"
        self._refresh_ttl_file = directory / "refresh-token-ttl"
        self._clock_file = directory / "clock-offset"
        self._clock_offset = 0
        self.set_access_token_ttl(access_token_ttl)
        self._token_requests = 0
        self._metadata_requests = 0
        self._access_tokens: dict[str, list[str]] = {}
        self._refresh_tokens: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None

    def set_access_token_ttl(self, seconds: int) -> None:
        """How long the access tokens issued from now on last."""
        self._ttl_file.write_text(str(seconds))

    def set_refresh_token_ttl(self, seconds: int) -> None:
        """How long the refresh tokens issued from now on last (86,400 s unless set)."""
        self._refresh_ttl_file.write_text(str(seconds))

    def set_clock_offset(self, seconds: int) -> None:
        """Put the provider's clock ``seconds`` ahead of the machine's (negative: behind)."""
        self._clock_offset = seconds
        self._clock_file.write_text(str(seconds))

    def move_clock(self, seconds: int) -> None:
        """Move the provider's clock ``seconds`` further ahead: its tokens expire as if that much time
        had passed, with no wait (a test that slept instead failed when a login took longer than it)."""
        self.set_clock_offset(self._clock_offset + seconds)

    def set_token_delay(self, seconds: float) -> None:
        """How long the token endpoint waits before it answers each request from now on."""
        self._delay_file.write_text(str(int(seconds * 1000)))

    @property
    def token_requests(self) -> int:
        """Requests the token endpoint has answered so far (any grant, granted or refused)."""
        with self._lock:
            return self._token_requests

    @property
    def metadata_requests(self) -> int:
        """Requests for its metadata (discovery documents) answered so far, found or not."""
        with self._lock:
            return self._metadata_requests

    def metadata(self) -> dict[str, Any]:
        """Its discovery document, asked for as a client would; returns once the request is counted
        (:attr:`metadata_requests`), so that a test's own request never lands in a count taken after it."""
        before = self.metadata_requests
        with urllib.request.urlopen(
            f"{self.issuer}/.well-known/openid-configuration", timeout=patient(10)
        ) as answer:
            result: dict[str, Any] = json.load(answer)
        eventually(lambda: self.metadata_requests > before, within=10, what="the metadata request counted")
        return result

    @property
    def entra_authorization_endpoint(self) -> str:
        """An Entra-shaped door to its authorization endpoint (tests/node/oidc-provider/server.mjs), which
        the microsoft preset's tests sign in through: ``prompt=consent`` is refused there with "Need admin
        approval" (AADSTS90094), as a tenant where users may not consent refuses it; a refresh token comes
        for offline_access without it."""
        return f"{self.issuer}/entra/auth"

    def authorization_endpoint_for(self, provider: str) -> str:
        """Where an account of the ``provider`` preset pointed here signs in: the Entra-shaped door for
        microsoft, the authorization endpoint itself for the others."""
        if provider == "microsoft":
            return self.entra_authorization_endpoint
        return str(self.metadata()["authorization_endpoint"])

    @property
    def introspection_url(self) -> str:
        """The introspection endpoint with the resource server's credentials in it (Dovecot sends them
        as HTTP Basic authentication)."""
        return f"http://{RESOURCE_CLIENT}:{RESOURCE_SECRET}@127.0.0.1:{self.port}/token/introspection"

    def _settings(self) -> str:
        native = {
            "client_id": PUBLIC_CLIENT,
            "application_type": "native",
            "token_endpoint_auth_method": "none",
            "redirect_uris": ["http://127.0.0.1/callback"],
            "grant_types": [
                "authorization_code",
                "refresh_token",
                "urn:ietf:params:oauth:grant-type:device_code",
            ],
            "response_types": ["code"],
        }
        with_secret = native | {
            "client_id": SECRET_CLIENT,
            "client_secret": SECRET_CLIENT_SECRET,
            "token_endpoint_auth_method": "client_secret_post",
        }
        resource = {
            "client_id": RESOURCE_CLIENT,
            "client_secret": RESOURCE_SECRET,
            "grant_types": [],
            "redirect_uris": [],
            "response_types": [],
        }
        service = {
            "client_id": SERVICE_CLIENT,
            "client_secret": SERVICE_SECRET,
            "grant_types": ["client_credentials"],
            "redirect_uris": [],
            "response_types": [],
            "token_endpoint_auth_method": "client_secret_post",
        }
        return json.dumps(
            {
                "ttl_file": str(self._ttl_file),
                "delay_file": str(self._delay_file),
                "refresh_ttl_file": str(self._refresh_ttl_file),
                "clock_file": str(self._clock_file),
                "clients": [native, with_secret, resource, service],
            }
        )

    def _read_stderr(self, stream: Any) -> None:
        for line in stream:
            if line.startswith("token "):
                with self._lock:
                    self._token_requests += 1
            elif line.startswith("metadata "):
                with self._lock:
                    self._metadata_requests += 1
            elif line.startswith(("access_token ", "refresh_token ")):
                kind, account, token = line.split()
                issued = self._access_tokens if kind == "access_token" else self._refresh_tokens
                with self._lock:
                    issued.setdefault(account, []).append(token)

    def forget_access_token(self, token: str) -> None:
        """Make ``token`` unknown to the provider (Dovecot's introspection then finds it inactive) while
        its grant, and so the refresh token, stays: as an access token the provider ended early."""
        query = urllib.parse.urlencode({"token": token})
        with urllib.request.urlopen(
            f"{self.issuer}/test/forget-access-token?{query}", timeout=patient(10)
        ) as answer:
            assert json.load(answer)["forgotten"] is True

    def introspect(self, token: str) -> dict[str, Any]:
        """What the introspection endpoint says of ``token`` (asked as Dovecot asks)."""
        credentials = base64.b64encode(f"{RESOURCE_CLIENT}:{RESOURCE_SECRET}".encode()).decode()
        request = urllib.request.Request(
            f"{self.issuer}/token/introspection",
            urllib.parse.urlencode({"token": token}).encode(),
            {"Authorization": f"Basic {credentials}"},
        )
        with urllib.request.urlopen(request, timeout=patient(10)) as answer:
            result: dict[str, Any] = json.load(answer)
        return result

    def access_tokens(self, login: str) -> list[str]:
        """The access tokens issued to ``login`` so far, oldest first."""
        with self._lock:
            return list(self._access_tokens.get(login, []))

    def refresh_tokens(self, login: str) -> list[str]:
        """The refresh tokens issued to ``login`` so far (each rotation's), oldest first."""
        with self._lock:
            return list(self._refresh_tokens.get(login, []))

    def __enter__(self) -> Self:
        assert installed(), (
            "oidc-provider is not installed: run scripts/test (npm ci into .cache/oidc-provider/)"
        )
        env = {**os.environ, "NODE_ENV": "development", "DEBUG": ""}
        self._process = subprocess.Popen(
            ["node", str(SCRIPT), str(MODULE), str(self.port), self._settings()],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self._process.stdout is not None and self._process.stderr is not None
        threading.Thread(target=self._read_stderr, args=(self._process.stderr,), daemon=True).start()
        first = self._process.stdout.readline()
        if not first.startswith("listening "):
            self._process.kill()
            raise RuntimeError(f"oidc-provider did not start (exit {self._process.wait()}): {first!r}")
        return self

    def stop(self) -> None:
        """Stop serving (a provider that is down)."""
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=patient(10))
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def wait_for(condition: Any, within: float = 20.0) -> None:
    """Poll ``condition()`` until it is true (or fail after ``within`` seconds, with patience)."""
    eventually(condition, within=within)


def pkce_pair() -> tuple[str, str]:
    """A PKCE code verifier and its S256 challenge (RFC 7636)."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def sign_in(
    provider: OidcProvider, login: str, scope: str = f"openid offline_access {MAIL_SCOPE}"
) -> dict[str, Any]:
    """The token response of an authorization code grant with PKCE for ``login`` (the test's own client
    code, independent of the product's): what a signed-in application holds."""
    metadata = provider.metadata()
    verifier, challenge = pkce_pair()
    redirect_uri = "http://127.0.0.1:9/callback"  # never requested: approve(deliver=False)
    query = urllib.parse.urlencode(
        {
            "client_id": PUBLIC_CLIENT,
            "response_type": "code",
            "redirect_uri": redirect_uri,
            "scope": scope,
            "state": "test",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "prompt": "consent",
        }
    )
    final = approve(f"{metadata['authorization_endpoint']}?{query}", login, deliver=False)
    code = urllib.parse.parse_qs(urllib.parse.urlsplit(final).query)["code"][0]
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "client_id": PUBLIC_CLIENT,
        "code_verifier": verifier,
    }
    counted = provider.token_requests
    with urllib.request.urlopen(
        metadata["token_endpoint"], urllib.parse.urlencode(form).encode(), timeout=patient(30)
    ) as answer:
        result: dict[str, Any] = json.load(answer)
    # The provider logs the request once it answered: a test counting requests from here on must not
    # count this one when its line arrives late.
    wait_for(lambda: provider.token_requests > counted)
    return result

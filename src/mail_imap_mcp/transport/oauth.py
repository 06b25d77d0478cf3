"""The server as an OAuth 2.1 resource server (``[http.auth]``): each request carries a user's access
token from the team's identity provider; the user it names is the one whose accounts the request sees.

What is checked, before anything else runs: the signature (JWT access tokens, against the issuer's
published keys; only public-key algorithms) or the issuer's answer (RFC 7662 introspection, for opaque
tokens), the expiry and not-before (with ``leeway_s``), the issuer, the audience (this server's own
URL, RFC 8707: a token issued for another service is refused, so this server is no confused deputy),
and ``required_scopes``. A request without a valid token gets 401 with ``WWW-Authenticate: Bearer
resource_metadata="..."``, naming the metadata this module publishes at
``/.well-known/oauth-protected-resource`` (RFC 9728: which issuer to ask). The token itself goes no
further: the Authorization header is removed, the request carries only the verified facts (the SDK's
``AuthenticatedUser``, whose token field holds a digest), and no IMAP server ever sees it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import anyio.to_thread
import jwt
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.routes import build_resource_metadata_url
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.authentication import AuthCredentials
from starlette.types import ASGIApp, Receive, Scope, Send

from mail_imap_mcp.config import HttpAuthSettings
from mail_imap_mcp.state import USER_AS_GIVEN_CLAIM, USER_CLAIM, fold_user
from mail_imap_mcp.transport.guards import bearer_of, log_refusal, send_json

log = logging.getLogger("mail_imap_mcp.http")

METADATA_PATH = "/.well-known/oauth-protected-resource"
#: How long the issuer may take to answer (keys, introspection).
ISSUER_TIMEOUT_S = 5.0
#: At most this many introspection answers are kept.
_MAX_CACHED = 10_000


#: The longest description a refusal carries (it may quote the token, e.g. its key id).
MAX_DESCRIPTION_CHARS = 300


def plain_text(text: str) -> str:
    """``text`` as one printable ASCII line of at most :data:`MAX_DESCRIPTION_CHARS`: a refusal's words
    may quote what the sender wrote (a token's key id), so control characters (a line break would end
    the header) and anything beyond ASCII become ``?``."""
    plain = "".join(char if " " <= char <= "~" else "?" for char in text)
    return plain if len(plain) <= MAX_DESCRIPTION_CHARS else plain[: MAX_DESCRIPTION_CHARS - 3] + "..."


def quoted(text: str) -> str:
    """``text`` (printable ASCII, :func:`plain_text`) as an RFC 9110 quoted-string: a quote or backslash
    is escaped, so it cannot end the value and start parameters of the sender's choosing."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class TokenRefused(Exception):
    """The access token is not valid for this server; the message says why (never the token)."""


class IssuerUnreachable(Exception):
    """The issuer's keys or introspection endpoint could not be reached: nothing can be checked."""


def _valid_user(name: object) -> str:
    if not isinstance(name, str) or not name or len(name) > 254 or not name.isprintable() or " " in name:
        raise TokenRefused("the token's user claim is missing or not a plain name")
    return name


def _scopes(claims: dict[str, Any]) -> list[str]:
    scope = claims.get("scope", claims.get("scp", ""))
    return scope.split() if isinstance(scope, str) else [str(item) for item in scope or []]


def _audiences(claims: dict[str, Any]) -> list[str]:
    aud = claims.get("aud")
    return [aud] if isinstance(aud, str) else [str(item) for item in aud or []]


def _same_url(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


class AccessTokenVerifier:
    """Checks access tokens against ``[http.auth]`` (the SDK's ``TokenVerifier`` protocol, with the
    reason of a refusal kept for the answer and the log)."""

    def __init__(self, settings: HttpAuthSettings, client_secret: str | None = None) -> None:
        self.settings = settings
        self._client_secret = client_secret
        self._jwks = (
            jwt.PyJWKClient(
                settings.jwks_url,
                cache_keys=True,
                lifespan=max(1, int(settings.cache_s)),
                timeout=int(ISSUER_TIMEOUT_S),
            )
            if settings.jwks_url is not None
            else None
        )
        self._introspected: dict[str, tuple[float, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            return await self.verify(token)
        except (TokenRefused, IssuerUnreachable):
            return None

    async def verify(self, token: str) -> AccessToken:
        """The verified token; :class:`TokenRefused` or :class:`IssuerUnreachable`."""
        claims = await anyio.to_thread.run_sync(self._claims, token)
        missing = [scope for scope in self.settings.required_scopes if scope not in _scopes(claims)]
        user = claims.get(self.settings.user_claim)
        # An address the user may have typed in (some providers let them) names nobody: only a verified
        # one does, never another claim in its place (a sub that looks like someone's address).
        if self.settings.user_claim == "email" and claims.get("email_verified") is not True:
            raise TokenRefused("the token's email is not verified (email_verified), so it names nobody")
        expires = claims.get("exp")
        return AccessToken(
            token="sha256:" + hashlib.sha256(token.encode()).hexdigest(),
            client_id=str(claims.get("azp") or claims.get("client_id") or "-"),
            scopes=_scopes(claims),
            expires_at=int(expires) if isinstance(expires, int | float) else None,
            resource=self.settings.audience,
            subject=str(claims.get("sub")) if claims.get("sub") is not None else None,
            claims={
                "iss": self.settings.issuer,
                USER_CLAIM: fold_user(_valid_user(user), self.settings.user_claim),
                USER_AS_GIVEN_CLAIM: user,
                "missing_scopes": missing,
            },
        )

    def _claims(self, token: str) -> dict[str, Any]:
        if self._jwks is not None:
            return self._jwt_claims(token)
        return self._introspect(token)

    def _jwt_claims(self, token: str) -> dict[str, Any]:
        assert self._jwks is not None
        settings = self.settings
        try:
            key = self._jwks.get_signing_key_from_jwt(token)
        except jwt.PyJWKClientConnectionError as exc:
            raise IssuerUnreachable(f"the issuer's keys could not be fetched ({exc})") from None
        except (jwt.PyJWKClientError, jwt.DecodeError) as exc:
            raise TokenRefused(f"not a token signed with one of the issuer's keys ({exc})") from None
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=settings.algorithms,
                audience=settings.audience,
                issuer=settings.issuer,
                leeway=settings.leeway_s,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            raise TokenRefused("the token has expired") from None
        except jwt.ImmatureSignatureError:
            raise TokenRefused("the token is not valid yet (nbf)") from None
        except jwt.InvalidAudienceError:
            raise TokenRefused("the token was issued for another audience") from None
        except jwt.InvalidIssuerError:
            raise TokenRefused("the token was issued by another issuer") from None
        except jwt.InvalidSignatureError:
            raise TokenRefused("the token's signature does not verify") from None
        except jwt.InvalidTokenError as exc:
            raise TokenRefused(f"the token is not valid ({type(exc).__name__})") from None
        return claims

    def _introspect(self, token: str) -> dict[str, Any]:
        settings = self.settings
        assert settings.introspection_url is not None and settings.client_id is not None
        cache_key = hashlib.sha256(token.encode()).hexdigest()
        now = time.time()
        with self._lock:
            cached = self._introspected.get(cache_key)
        if cached is not None and cached[0] > now:
            claims = cached[1]
        else:
            claims = self._ask_issuer(token)
            expires = claims.get("exp")
            until = min(now + settings.cache_s, float(expires) if isinstance(expires, int | float) else now)
            with self._lock:
                if len(self._introspected) >= _MAX_CACHED:
                    self._introspected.clear()
                self._introspected[cache_key] = (until, claims)
        if claims.get("active") is not True:
            raise TokenRefused("the issuer says the token is not active")
        expires = claims.get("exp")
        if not isinstance(expires, int | float) or expires + settings.leeway_s < now:
            raise TokenRefused("the token has expired")
        not_before = claims.get("nbf")
        if isinstance(not_before, int | float) and not_before - settings.leeway_s > now:
            raise TokenRefused("the token is not valid yet (nbf)")
        if not _same_url(str(claims.get("iss", "")), settings.issuer):
            raise TokenRefused("the token was issued by another issuer")
        if not any(_same_url(aud, settings.audience) for aud in _audiences(claims)):
            raise TokenRefused("the token was issued for another audience")
        return claims

    def _ask_issuer(self, token: str) -> dict[str, Any]:
        settings = self.settings
        assert settings.introspection_url is not None
        credentials = (
            f"{urllib.parse.quote(settings.client_id or '')}:{urllib.parse.quote(self._client_secret or '')}"
        )
        request = urllib.request.Request(
            settings.introspection_url,
            data=urllib.parse.urlencode({"token": token, "token_type_hint": "access_token"}).encode(),
            headers={
                "Authorization": "Basic " + base64.b64encode(credentials.encode()).decode(),
                "Content-Type": "application/x-www-form-urlencoded",
                "Accept": "application/json",
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=ISSUER_TIMEOUT_S) as answer:
                parsed = json.loads(answer.read(1_000_000))
        except urllib.error.HTTPError as exc:
            raise IssuerUnreachable(f"the introspection endpoint answered HTTP {exc.code}") from None
        except (OSError, ValueError) as exc:
            raise IssuerUnreachable(f"the introspection endpoint could not be used ({exc})") from None
        if not isinstance(parsed, dict):
            raise IssuerUnreachable("the introspection endpoint did not answer with a JSON object")
        return parsed


def metadata_url(settings: HttpAuthSettings) -> str:
    """Where this server's RFC 9728 metadata is published (after ``audience``'s path)."""
    return str(build_resource_metadata_url(AnyHttpUrl(settings.audience)))


class ResourceServerAuth:
    """ASGI: publishes the protected resource metadata, and lets a request through only with a valid
    access token, as its user (``scope["user"]``, the SDK's ``AuthenticatedUser``) and without its
    Authorization header."""

    def __init__(self, app: ASGIApp, verifier: AccessTokenVerifier) -> None:
        self.app = app
        self.verifier = verifier
        settings = verifier.settings
        self._metadata_url = metadata_url(settings)
        # The SDK's model of RFC 9728 metadata, validated from the strings as configured: an issuer is
        # compared character by character (RFC 8414), so no slash may be added to it.
        self._metadata = ProtectedResourceMetadata.model_validate(
            {
                "resource": settings.audience,
                "authorization_servers": [settings.issuer],
                "scopes_supported": settings.required_scopes or None,
                "resource_name": "mail-imap-mcp",
            }
        ).model_dump(mode="json", exclude_none=True)
        # Also at the root of the well-known path: clients that look there first find it too.
        self._metadata_paths = {METADATA_PATH, urllib.parse.urlsplit(self._metadata_url).path}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"] in self._metadata_paths:
            if scope["method"] not in ("GET", "HEAD"):
                await send_json(send, 405, {"error": "method_not_allowed"}, [(b"allow", b"GET")])
            else:
                await send_json(send, 200, self._metadata, [(b"cache-control", b"max-age=3600")])
            return
        scheme, credentials, others = bearer_of(scope)
        if scheme.lower() != b"bearer" or not credentials.strip():
            # RFC 6750 section 3.1: no error code when the request carried no bearer credentials.
            await self._refuse(scope, send, 401, None, "Authorization: Bearer <access token> is required")
            return
        try:
            token = await self.verifier.verify(credentials.strip().decode("ascii", "replace"))
        except TokenRefused as refused:
            await self._refuse(scope, send, 401, "invalid_token", str(refused))
            return
        except IssuerUnreachable as exc:
            log.warning("access token not checked: %s", exc)
            await send_json(
                send,
                503,
                {
                    "error": "temporarily_unavailable",
                    "error_description": "the identity provider cannot be reached",
                },
                [(b"retry-after", b"5")],
            )
            return
        missing = (token.claims or {}).get("missing_scopes") or []
        if missing:
            await self._refuse(
                scope, send, 403, "insufficient_scope", f"the token lacks the scope {' '.join(missing)}"
            )
            return
        user = AuthenticatedUser(token)
        await self.app(
            {**scope, "headers": others, "user": user, "auth": AuthCredentials(token.scopes)}, receive, send
        )

    async def _refuse(self, scope: Scope, send: Send, status: int, error: str | None, why: str) -> None:
        why = plain_text(why)
        parts = [f"resource_metadata={quoted(self._metadata_url)}"]
        if error is not None:
            parts = [f"error={quoted(error)}", f"error_description={quoted(why)}", *parts]
        if error == "insufficient_scope":
            parts.append(f"scope={quoted(' '.join(self.verifier.settings.required_scopes))}")
        log_refusal(scope, status, why)
        body = {"error": error or "unauthorized", "error_description": why}
        await send_json(send, status, body, [(b"www-authenticate", ("Bearer " + ", ".join(parts)).encode())])

"""The built-in sign-in's OAuth 2.0 client: the authorization code grant with PKCE (RFC 7636, S256), the
refresh token grant, revocation (RFC 7009) and discovery (RFC 8414 / OpenID Connect Discovery).

authlib writes and reads the protocol's messages (the authorization URL, the redirect's parameters with
their ``state`` checked, the token requests' bodies); httpx2, the runtime's HTTP client, carries them.
An access token's expiry is counted from ``expires_in`` on receipt (the provider's clock is never compared
with ours). A refresh token is never put in a message, a log line or an exception. What spends a stored
refresh token, and where it is stored, is :mod:`mail_imap_mcp.credentials`'.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .tokens import AccessToken, TokenUnavailable

if TYPE_CHECKING:
    import httpx2

#: An access token that says nothing of its lifetime is kept this long (RFC 6749 leaves it to the server).
DEFAULT_EXPIRES_IN_S = 3600


@dataclass(frozen=True)
class Endpoints:
    """Where a provider's authorization server answers (``None``: it does not offer that endpoint)."""

    authorization: str
    token: str
    device: str | None = None
    revocation: str | None = None
    #: The issuer an OpenID Connect discovery document named (the configured one): its ID tokens' ``iss``.
    issuer: str | None = None


@dataclass(frozen=True)
class OAuthClient:
    """The application as the provider knows it: its client ID (a secret only where the provider
    requires one of desktop apps, Google), the scopes it asks for and extra authorization parameters."""

    endpoints: Endpoints
    client_id: str
    scopes: tuple[str, ...]
    client_secret: str | None = field(default=None, repr=False)
    extra_authorization: tuple[tuple[str, str], ...] = ()
    #: The ``iss`` of its ID tokens where known (``{tenantid}``: any tenant's); None: not checked.
    issuer: str | None = None


class SignInRequired(TokenUnavailable):
    """No refresh token is stored, or the provider no longer accepts it: the user must sign in again."""


class ProviderRefused(TokenUnavailable):
    """The token endpoint answered with an error; ``error`` is its RFC 6749 code (``slow_down``...)."""

    def __init__(self, reason: str, error: str) -> None:
        super().__init__(reason)
        self.error = error


@dataclass(frozen=True)
class TokenResponse:
    access: AccessToken
    refresh_token: str | None = field(repr=False)
    scope: str | None = None
    id_token: str | None = field(default=None, repr=False)


#: How far the provider's clock may be from ours when an ID token's ``exp`` is checked.
ID_TOKEN_LEEWAY_S = 300


def _id_token_claims(id_token: str) -> dict[str, Any] | None:
    if id_token.count(".") != 2:
        return None
    payload = id_token.split(".")[1]
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except ValueError:
        return None
    return claims if isinstance(claims, dict) else None


def id_token_problem(
    answer: TokenResponse, client: OAuthClient, nonce: str | None, now: float | None = None
) -> str | None:
    """What is wrong with the answer's ID token (None: nothing, or there is none): its ``iss`` is not the
    provider's (where the client knows it; ``{tenantid}`` in it stands for any tenant), its ``aud`` not
    this client, its ``exp`` past, or its ``nonce`` not the request's (``nonce``; None: the device
    grant, which sends none). The signature is not checked: the token came straight from the token
    endpoint over the connection the provider's certificate secured, which OpenID Connect Core 1.0
    section 3.1.3.7 accepts in its place."""
    if answer.id_token is None:
        return None
    claims = _id_token_claims(answer.id_token)
    if claims is None:
        return "its ID token cannot be read"
    issuer = str(claims.get("iss", "")).rstrip("/")
    if "://" not in issuer:  # Google's tokens may name it without the scheme
        issuer = f"https://{issuer}"
    if client.issuer is not None:
        expected = re.escape(client.issuer.rstrip("/")).replace(re.escape("{tenantid}"), "[^/]+")
        if re.fullmatch(expected, issuer) is None:
            return f"its ID token was issued by {issuer[:200]!r}, not {client.issuer!r}"
    audience = claims.get("aud")
    if client.client_id not in (audience if isinstance(audience, list) else [audience]):
        return "its ID token is for another application (aud)"
    expires = claims.get("exp")
    if not isinstance(expires, int | float) or expires + ID_TOKEN_LEEWAY_S < (
        time.time() if now is None else now
    ):
        return "its ID token has expired (exp)"
    if nonce is not None and claims.get("nonce") != nonce:
        return "its ID token answers another sign-in (nonce)"
    return None


def signed_in_as(answer: TokenResponse) -> str | None:
    """Who signed in, by the ID token's ``email`` (where ``email_verified`` is not false),
    ``preferred_username`` or ``sub`` claim (None without an ID token). Shown, never trusted, and only
    once :func:`id_token_problem` found nothing wrong: the mail server decides whose a token is."""
    claims = _id_token_claims(answer.id_token) if answer.id_token is not None else None
    if claims is None:
        return None
    names = (
        ("email", "preferred_username", "sub")
        if claims.get("email_verified") is not False
        else ("preferred_username", "sub")
    )
    for claim in names:
        if isinstance(claims.get(claim), str) and claims[claim]:
            return str(claims[claim])[:200]
    return None


def metadata_urls(issuer: str) -> tuple[str, ...]:
    """Where an issuer's metadata may be, in the order asked: RFC 8414's (``/.well-known/...`` inserted
    before the issuer's path, section 3.1), OpenID Connect Discovery's (appended to the issuer), and
    RFC 8414's appended to the issuer, which some servers of an issuer with a path publish instead."""
    base = issuer.rstrip("/")
    parts = urllib.parse.urlsplit(base)
    inserted = f"{parts.scheme}://{parts.netloc}/.well-known/oauth-authorization-server{parts.path}"
    found = (
        inserted,
        f"{base}/.well-known/openid-configuration",
        f"{base}/.well-known/oauth-authorization-server",
    )
    return tuple(dict.fromkeys(found))


def discover(issuer: str, timeout_s: float = 10.0) -> Endpoints:
    """The endpoints an issuer publishes: OAuth 2.0 authorization server metadata (RFC 8414), else its
    OpenID Connect discovery document. A document naming another issuer is refused (RFC 8414 section
    3.3: it may have been put there to send the sign-in elsewhere)."""
    base = issuer.rstrip("/")
    for url in metadata_urls(base):
        try:
            answer = _client().get(url, timeout=timeout_s)
        except _http().HTTPError as exc:
            raise TokenUnavailable(
                f"the provider {base} could not be reached ({type(exc).__name__})"
            ) from None
        if answer.status_code != 200:
            continue
        meta = _json(answer)
        named = meta.get("issuer")
        if isinstance(named, str) and named.rstrip("/") != base:
            raise TokenUnavailable(f"the metadata at {url} names another issuer ({named[:200]}), not {base}")
        authorization, token = meta.get("authorization_endpoint"), meta.get("token_endpoint")
        if not isinstance(authorization, str) or not isinstance(token, str):
            raise TokenUnavailable(f"the metadata at {url} names no authorization and token endpoints")
        device, revocation = meta.get("device_authorization_endpoint"), meta.get("revocation_endpoint")
        return Endpoints(
            authorization=authorization,
            token=token,
            device=device if isinstance(device, str) else None,
            revocation=revocation if isinstance(revocation, str) else None,
            # OpenID Connect Core 1.0 section 3.1.3.7: an OpenID provider's ID tokens name the issuer its
            # discovery document names; an RFC 8414 document promises nothing of ID tokens.
            issuer=base if isinstance(named, str) and url.endswith("/openid-configuration") else None,
        )
    raise TokenUnavailable(f"{base} publishes no authorization server metadata")


@dataclass(frozen=True)
class AuthorizationRequest:
    """One authorization code request: its URL, and what its answer is checked and redeemed with."""

    url: str
    redirect_uri: str
    state: str = field(repr=False)
    code_verifier: str = field(repr=False)
    #: What the ID token's ``nonce`` must be (OpenID Connect Core 1.0 section 3.1.2.1).
    nonce: str = field(default="", repr=False)


def authorization_request(client: OAuthClient, redirect_uri: str) -> AuthorizationRequest:
    """A new request with a fresh ``state``, ``nonce`` and PKCE verifier (S256)."""
    # authlib with a sign-in: a server's start (its accounts' token sources) needs none of it.
    from authlib.common.security import generate_token
    from authlib.oauth2.rfc6749.parameters import prepare_grant_uri
    from authlib.oauth2.rfc7636 import create_s256_code_challenge

    state, verifier, nonce = generate_token(32), generate_token(64), generate_token(32)
    url = prepare_grant_uri(
        client.endpoints.authorization,
        client.client_id,
        "code",
        redirect_uri=redirect_uri,
        scope=" ".join(client.scopes),
        state=state,
        code_challenge=create_s256_code_challenge(verifier),
        code_challenge_method="S256",
        nonce=nonce,
        **dict(client.extra_authorization),
    )
    return AuthorizationRequest(url, redirect_uri, state, verifier, nonce)


def code_from_redirect(request: AuthorizationRequest, redirect_url: str) -> str:
    """The authorization code of the provider's redirect to ``request``; :class:`SignInRequired` when
    the redirect carries an error (the user declined) or a ``state`` of another request."""
    from authlib.oauth2.rfc6749.errors import OAuth2Error
    from authlib.oauth2.rfc6749.parameters import parse_authorization_code_response

    answered = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(redirect_url).query))
    if "error" in answered and answered.get("state") == request.state:
        said = answered.get("error_description") or answered["error"]
        raise SignInRequired(f"the provider did not grant access ({answered['error'][:100]}: {said[:200]})")
    try:
        params = parse_authorization_code_response(redirect_url, state=request.state)
    except OAuth2Error as exc:
        said = exc.description or exc.error
        raise SignInRequired(f"the provider did not grant access ({exc.error}: {said})") from None
    return str(params["code"])


def redeem_code(
    client: OAuthClient, request: AuthorizationRequest, code: str, timeout_s: float
) -> TokenResponse:
    """The tokens the authorization code ``code`` buys."""
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": request.redirect_uri,
        "code_verifier": request.code_verifier,
    }
    return token_request(client, form, timeout_s)


def refresh(client: OAuthClient, refresh_token: str, timeout_s: float) -> TokenResponse:
    """A new access token (and maybe a rotated refresh token) for ``refresh_token``."""
    form = {"grant_type": "refresh_token", "refresh_token": refresh_token, "scope": " ".join(client.scopes)}
    return token_request(client, form, timeout_s)


def token_request(client: OAuthClient, form: dict[str, str], timeout_s: float) -> TokenResponse:
    """POST ``form`` to the token endpoint; :class:`SignInRequired` when the provider refuses the grant
    (``invalid_grant``: expired, revoked or spent), :class:`TokenUnavailable` for any other failure."""
    body = {**form, "client_id": client.client_id}
    if client.client_secret is not None:
        body["client_secret"] = client.client_secret
    if timeout_s <= 0:
        raise TokenUnavailable("the call's time budget was used up before the token request")
    try:
        answer = _client().post(
            client.endpoints.token, data=body, timeout=timeout_s, headers={"Accept": "application/json"}
        )
    except _http().HTTPError as exc:
        raise TokenUnavailable(
            f"the provider's token endpoint could not be reached ({type(exc).__name__})"
        ) from None
    received = time.monotonic()
    payload = _json(answer)
    if answer.status_code != 200 or "access_token" not in payload:
        error = str(payload.get("error") or f"HTTP {answer.status_code}")[:100]
        said = str(payload.get("error_description") or "")[:200]
        reason = f"the provider refused the token request ({error}{': ' + said if said else ''})"
        if error in {"invalid_grant", "unauthorized_client"}:
            raise SignInRequired(reason)
        raise ProviderRefused(reason, error)
    expires_in = payload.get("expires_in")
    lifetime = (
        float(expires_in)
        if isinstance(expires_in, (int, float, str))
        and str(expires_in).isascii()
        and str(expires_in).isdigit()
        else None  # "²" is a digit to isdigit, not to float
    )
    return TokenResponse(
        AccessToken(str(payload["access_token"]), received + (lifetime or DEFAULT_EXPIRES_IN_S)),
        payload.get("refresh_token"),
        payload.get("scope"),
        payload.get("id_token") if isinstance(payload.get("id_token"), str) else None,
    )


DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


@dataclass(frozen=True)
class DeviceAuthorization:
    """What the user is shown (RFC 8628): where to go and the code to type there."""

    device_code: str = field(repr=False)
    user_code: str
    verification_uri: str
    verification_uri_complete: str | None
    interval_s: float
    expires_in_s: float


def device_authorization(client: OAuthClient, timeout_s: float = 10.0) -> DeviceAuthorization:
    """Start the device authorization grant (the provider must offer its endpoint)."""
    if client.endpoints.device is None:
        raise TokenUnavailable("the provider offers no device authorization endpoint")
    body = {"client_id": client.client_id, "scope": " ".join(client.scopes)}
    try:
        answer = _client().post(client.endpoints.device, data=body, timeout=timeout_s)
    except _http().HTTPError as exc:
        raise TokenUnavailable(f"the provider could not be reached ({type(exc).__name__})") from None
    payload = _json(answer)
    if answer.status_code != 200 or "device_code" not in payload:
        error = str(payload.get("error") or f"HTTP {answer.status_code}")[:100]
        said = str(payload.get("error_description") or "")[:200]
        raise ProviderRefused(
            f"the provider refused the device sign-in ({error}{': ' + said if said else ''})", error
        )
    return DeviceAuthorization(
        str(payload["device_code"]),
        str(payload["user_code"]),
        str(payload.get("verification_uri") or payload.get("verification_url")),
        payload.get("verification_uri_complete"),
        float(payload.get("interval") or 5),
        float(payload.get("expires_in") or 600),
    )


def poll_device(
    client: OAuthClient, device: DeviceAuthorization, sleep: Callable[[float], None] = time.sleep
) -> TokenResponse:
    """Ask the token endpoint until the user approved the device (or declined, or the code expired)."""
    interval, deadline = device.interval_s, time.monotonic() + device.expires_in_s
    form = {"grant_type": DEVICE_GRANT, "device_code": device.device_code}
    while time.monotonic() < deadline:
        sleep(interval)
        try:
            return token_request(client, form, 30.0)
        except ProviderRefused as refused:
            if refused.error == "slow_down":
                interval += 5  # RFC 8628 section 3.5
            elif refused.error != "authorization_pending":
                raise SignInRequired(refused.reason) from None
    raise SignInRequired("the code expired before the sign-in was approved")


def revoke(client: OAuthClient, token: str, timeout_s: float = 10.0) -> bool:
    """Ask the provider to revoke ``token`` (RFC 7009); whether it offers revocation and said yes."""
    if client.endpoints.revocation is None:
        return False
    body = {"token": token, "token_type_hint": "refresh_token", "client_id": client.client_id}
    if client.client_secret is not None:
        body["client_secret"] = client.client_secret
    try:
        return bool(
            _client().post(client.endpoints.revocation, data=body, timeout=timeout_s).status_code == 200
        )
    except _http().HTTPError:
        return False


def _json(answer: httpx2.Response) -> dict[str, Any]:
    try:
        payload = answer.json()
    except ValueError:
        return {}
    return payload if isinstance(payload, dict) else {}


def _http() -> ModuleType:
    """httpx2, imported on first use: the commands that never sign in start without it (0.1 s)."""
    import httpx2

    return httpx2


#: How long an idle connection to a provider is kept: long enough for the request that follows at once
#: (the token request after the discovery), short of the keep-alive timeouts servers use (node's and
#: Apache's 5 s, nginx's 75 s), so that no request goes out on a connection the provider is closing.
KEEPALIVE_S = 2.0

_client_lock = threading.Lock()
_shared_client: httpx2.Client | None = None


def _client() -> httpx2.Client:
    """The process's one HTTP client for the providers' endpoints, made on first use.

    A client per request, as httpx2's module functions make, loaded the system's trust store each time
    (26 ms of CPU on the 2-core test machine) and opened a connection each time: the discovery and the
    token request of a refresh now go over one connection where the provider keeps it open. The client's
    connection pool is shared by threads under its own lock; each request passes its own timeout."""
    global _shared_client
    with _client_lock:
        if _shared_client is None:
            http = _http()
            _shared_client = http.Client(limits=http.Limits(keepalive_expiry=KEEPALIVE_S))
        return _shared_client

"""``[state]`` (state several instances share) and ``[http.auth]`` (each user signs in with an access
token from the team's identity provider): the settings of a team deployment."""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .accounts import is_loopback_host
from .secrets import check_env_names, resolve_secret


class StateSettings(BaseModel):
    """``[state]``: where confirmations, background operations and the signing secret live."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    redis_url: str | None = Field(
        default=None,
        min_length=1,
        description="Redis (or Valkey) shared by every instance, e.g. `redis://127.0.0.1:6379/0` "
        "(`rediss://` for TLS). Unset: everything stays in this process, as for one instance. Needs "
        "the `team` extra (`pip install 'mail-imap-mcp[team]'`).",
    )
    redis_url_env: str | None = Field(
        default=None,
        min_length=1,
        description="Name of an environment variable holding redis_url (for a URL with a password).",
    )
    operation_ttl_s: float = Field(
        default=3600.0,
        ge=60,
        le=7 * 86400,
        description="How long a background write's status and result stay readable after it ended.",
    )

    @model_validator(mode="after")
    def _check(self) -> StateSettings:
        if self.redis_url is not None and self.redis_url_env is not None:
            raise ValueError("set at most one of redis_url, redis_url_env")
        if self.redis_url_env is not None:
            check_env_names([self.redis_url_env])
        if self.redis_url is not None and not self.redis_url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("redis_url must start with redis://, rediss:// or unix://")
        return self

    def resolve_url(self, env: Mapping[str, str] | None = None) -> str | None:
        """The Redis URL (None: no shared state); :class:`ConfigError` naming the setting."""
        if self.redis_url_env is not None:
            return resolve_secret(env_var=self.redis_url_env, env=env, what="redis_url")
        return self.redis_url


#: Where the introspection client's secret comes from: exactly one of them.
CLIENT_SECRET_SOURCES = ("client_secret_env", "client_secret_file", "client_secret_keyring")


class HttpAuthSettings(BaseModel):
    """``[http.auth]``: the server is an OAuth 2.1 resource server; each request carries a user's
    access token, checked here, and sees only that user's accounts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    issuer: str = Field(
        min_length=1, description="The authorization server's issuer (the `iss` its tokens carry)."
    )
    audience: str = Field(
        min_length=1,
        description="This server's public URL, e.g. `https://mail-mcp.example.com/mcp`: the resource "
        "tokens must be issued for (`aud`, RFC 8707), and where its metadata is published (RFC 9728).",
    )
    jwks_url: str | None = Field(
        default=None, min_length=1, description="Where the issuer publishes its signing keys (JWT tokens)."
    )
    introspection_url: str | None = Field(
        default=None,
        min_length=1,
        description="The issuer's token introspection endpoint (RFC 7662), for opaque tokens; needs "
        "client_id and a client secret.",
    )
    client_id: str | None = Field(default=None, min_length=1, description="Client id for introspection.")
    client_secret_env: str | None = Field(
        default=None, min_length=1, description="Environment variable holding the introspection secret."
    )
    client_secret_file: Path | None = Field(
        default=None, description="File holding the introspection client secret."
    )
    client_secret_keyring: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="Read the introspection client secret from the OS keychain: the entry of this "
        "service name and client_id (keyring library).",
    )
    user_claim: str = Field(
        default="email",
        min_length=1,
        description="The claim naming the user, as `users` of an account lists them and `{user}` "
        "substitutes; `email` counts only with `email_verified: true` (an address a user typed in names "
        "nobody).",
    )
    required_scopes: list[str] = Field(
        default_factory=list, description='Scopes every token must carry (e.g. `["mail"]`).'
    )
    algorithms: list[str] = Field(
        default_factory=lambda: ["RS256", "ES256", "PS256", "EdDSA"],
        min_length=1,
        description="Signature algorithms accepted for JWT access tokens (never `none` or a shared "
        "secret's HS*).",
    )
    user_idle_s: float = Field(
        default=900.0,
        ge=1,
        le=86400,
        description="A signed-in user's connections, mailbox watches and local indexes unused this long "
        "are closed (their IMAP sessions logged out, index files closed); their next call opens them "
        "again.",
    )
    leeway_s: float = Field(default=30.0, ge=0, le=300, description="Clock skew allowed for exp and nbf.")
    cache_s: float = Field(
        default=300.0,
        ge=0,
        le=86400,
        description="How long signing keys are kept before they are fetched again (a token signed "
        "with an unknown key fetches them at once); how long an introspection answer is kept, at most "
        "until the token expires.",
    )

    @model_validator(mode="after")
    def _check(self) -> HttpAuthSettings:
        if (self.jwks_url is None) == (self.introspection_url is None):
            raise ValueError("set exactly one of jwks_url (JWT access tokens) or introspection_url")
        if self.introspection_url is not None:
            secrets = [n for n in CLIENT_SECRET_SOURCES if getattr(self, n) is not None]
            if self.client_id is None or len(secrets) != 1:
                raise ValueError(
                    "introspection_url needs client_id and exactly one of client_secret_env, "
                    "client_secret_file, client_secret_keyring"
                )
        if self.client_secret_env is not None:
            check_env_names([self.client_secret_env])
        bad = [a for a in self.algorithms if a.lower() == "none" or a.upper().startswith("HS")]
        if bad:
            raise ValueError(f"algorithms: {', '.join(bad)} cannot be accepted (a public key must sign)")
        for name in ("issuer", "audience", "jwks_url", "introspection_url"):
            value = getattr(self, name)
            if value is not None and not value.startswith(("https://", "http://")):
                raise ValueError(f"{name} must be an http(s) URL")
        # Keys and introspection in the clear would let anyone on the path sign or vouch for any user.
        for name in ("issuer", "jwks_url", "introspection_url"):
            value = getattr(self, name)
            if value is not None and value.startswith("http://") and not _is_loopback_url(value):
                raise ValueError(f"{name} must be an https URL (plain http only on loopback)")
        return self


def _is_loopback_url(url: str) -> bool:
    host = urllib.parse.urlsplit(url).hostname or ""
    return is_loopback_host(host)

"""``[http]`` settings: the streamable HTTP transport's address, its bearer token and where the token comes
from, and its users' sign-in (``[http.auth]``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .accounts import ConfigError, format_validation_error, is_loopback_host
from .env_names import HTTP_TOKEN_ENV
from .secrets import resolve_secret
from .team import HttpAuthSettings

#: Shorter tokens are refused: a bearer token is the only thing between the network and the mailboxes.
MIN_HTTP_TOKEN_CHARS = 16
HTTP_TOKEN_SOURCES = ("token_env", "token_file", "token_command")


class HttpSettings(BaseModel):
    """``[http]``: the streamable HTTP transport (``serve --transport http``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = Field(
        default="127.0.0.1",
        min_length=1,
        max_length=253,
        description="Address to listen on (`--host`). Any address but loopback needs a bearer token "
        "and allowed_hosts.",
    )
    port: int = Field(
        default=8000, ge=0, le=65535, description="TCP port (`--port`); 0 picks a free one (logged)."
    )
    token_env: str | None = Field(
        default=None,
        min_length=1,
        description="Name of an environment variable holding the bearer token clients must send. "
        f"Without any token source, ${HTTP_TOKEN_ENV} is used when set.",
    )
    token_file: Path | None = Field(
        default=None, description="File holding the bearer token (keep it readable by you only)."
    )
    token_command: list[str] | None = Field(
        default=None, min_length=1, description="Command (argv list) whose stdout is the bearer token."
    )
    token_command_env: list[str] = Field(
        default_factory=list,
        description="Environment variables passed to token_command besides PATH, HOME, locale and the "
        "like (see helper_env of an account).",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host header values accepted besides the loopback names (`name`, `name:port`, or "
        "`name:*` for any port), e.g. the name a reverse proxy forwards. Required when host is not "
        "loopback (DNS-rebinding protection).",
    )
    allowed_origins: list[str] = Field(
        default_factory=list,
        description="Origin header values accepted from browser clients (e.g. "
        "`https://agent.example.com`, or `scheme://host:*` for any port); these also get CORS answers. "
        "Requests with another Origin get 403, requests without one are accepted. Loopback origins are "
        "accepted (without CORS) when bound to loopback.",
    )
    shutdown_grace_s: float = Field(
        default=10.0,
        gt=0,
        le=600,
        description="On SIGTERM, how long calls in flight may run on before they are cancelled; new "
        "calls are refused meanwhile.",
    )
    request_header_timeout_s: float = Field(
        default=10.0,
        gt=0,
        le=300,
        description="How long a connection may take to send a request's headers (from its opening, or "
        "from the end of its previous answer); then it is closed, so silent or slow clients cannot hold "
        "connections. It is also how long an idle connection is kept: keep it above the idle time of the "
        "clients and proxies in front (the MCP SDK's client keeps one 5 s, node's fetch 4 s), so that "
        "they, not the server, close it.",
    )
    max_connections: int = Field(
        default=128,
        ge=4,
        le=65_536,
        description="Most open client connections; beyond it, the oldest connection that has not "
        "authenticated is closed (never one that sent the token), else the new one. Also kept below half "
        "the process's file-descriptor limit.",
    )
    auth: HttpAuthSettings | None = Field(
        default=None,
        description="`[http.auth]`: each user signs in with an access token of the team's identity "
        "provider instead of the one shared bearer token (see the fields below).",
    )

    @model_validator(mode="after")
    def _check(self) -> HttpSettings:
        sources = [name for name in HTTP_TOKEN_SOURCES if getattr(self, name) is not None]
        if len(sources) > 1:
            raise ValueError(
                f"set at most one of {', '.join(HTTP_TOKEN_SOURCES)} (found: {', '.join(sources)})"
            )
        if sources and self.auth is not None:
            raise ValueError(
                f"[http.auth] signs each user in with their own access token: remove {sources[0]} (the "
                "shared bearer token is for a one-person server)"
            )
        if not is_loopback_host(self.host):
            if not sources and self.auth is None:
                raise ValueError(
                    f"host {self.host} is not a loopback address, so anyone who can reach the port could "
                    f"read the mail: set token_env, token_file or token_command in [http] (or "
                    f"{HTTP_TOKEN_ENV}), or listen on 127.0.0.1 behind a reverse proxy"
                )
            if not self.allowed_hosts:
                raise ValueError(
                    f"host {self.host} is not a loopback address: list the host names clients use to "
                    'reach the server in allowed_hosts in [http] (e.g. ["mail-mcp.example.com"]); '
                    "requests with any other Host header are refused (DNS-rebinding protection)"
                )
        for name in ("allowed_hosts", "allowed_origins"):
            for entry in getattr(self, name):
                if not entry or entry != entry.strip() or "/" in entry.split("://", 1)[-1]:
                    raise ValueError(f"{name}: {entry!r} is not a host[:port] or scheme://host[:port]")
        return self

    @property
    def token_configured(self) -> bool:
        return any(getattr(self, name) is not None for name in HTTP_TOKEN_SOURCES)

    def with_overrides(self, **overrides: Any) -> HttpSettings:
        """These settings with command-line values (``host``, ``port``, ...) applied and checked again;
        a :class:`ConfigError` names the flag or key."""
        given = {key: value for key, value in overrides.items() if value is not None}
        try:
            return HttpSettings.model_validate({**self.model_dump(), **given})
        except ValidationError as exc:
            flags = ", ".join(f"--{key.replace('_', '-')}" for key in given)
            raise ConfigError(
                format_validation_error(
                    exc,
                    name_of=lambda key: f"--{key.replace('_', '-')}" if key in given else f"http.{key}",
                    fallback=f"http ({flags} given)" if flags else "http",
                )
            ) from None

    def resolve_token(self, env: Mapping[str, str] | None = None) -> str | None:
        """The bearer token from its source (``None`` when none is configured); raise
        :class:`ConfigError` naming the setting, never echoing the value."""
        if not self.token_configured:
            return None
        token = resolve_secret(
            env_var=self.token_env,
            command=self.token_command,
            file=self.token_file,
            env=env,
            command_setting="token_command in [http]",
            file_setting="token_file in [http]",
            what="token",
            command_env=self.token_command_env,
        )
        if len(token) < MIN_HTTP_TOKEN_CHARS or not token.isprintable() or " " in token:
            raise ConfigError(
                f"the HTTP bearer token must be at least {MIN_HTTP_TOKEN_CHARS} printable characters "
                'without spaces; generate one with: python3 -c "import secrets; '
                'print(secrets.token_urlsafe(32))"'
            )
        return token

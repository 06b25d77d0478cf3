"""Configuration: a TOML file plus env-only accounts, validated by pydantic.

Lookup order for the file: ``--config``, ``$MAIL_IMAP_MCP_CONFIG``, then
``~/.config/mail-imap-mcp/config.toml`` (optional when env accounts exist). Errors name the key
and the reason and never echo a value, so a misplaced secret cannot leak through them.
"""

from __future__ import annotations

import difflib
import functools
import ipaddress
import json
import os
import re
import shlex
import subprocess
import tomllib
from collections.abc import Callable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

ACCOUNT_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
DEFAULT_CONFIG_PATH = Path("~/.config/mail-imap-mcp/config.toml")
CONFIG_ENV = "MAIL_IMAP_MCP_CONFIG"
#: Bearer token of the HTTP transport when ``[http]`` names no token source.
HTTP_TOKEN_ENV = "MAIL_IMAP_MCP_HTTP_TOKEN"
PASSWORD_COMMAND_TIMEOUT_S = 30.0

_ENV_ACCOUNT = re.compile(r"^MAIL_IMAP_([A-Z0-9_]+?)_HOST$")
ENV_PREFIX = "MAIL_IMAP_"
#: Variables of the ``MAIL_IMAP_`` family that are not account settings.
GLOBAL_ENV = frozenset({CONFIG_ENV, "MAIL_IMAP_MCP_LOG_LEVEL", "MAIL_IMAP_WRITE_ENABLED", HTTP_TOKEN_ENV})
#: Account key -> suffix of its ``MAIL_IMAP_<ID>_*`` variable (``_SECURE`` is the seed server's
#: boolean spelling of ``security``).
ENV_SUFFIXES = {
    "host": "HOST",
    "port": "PORT",
    "username": "USER",
    "addresses": "ADDRESSES",
    "password_env": "PASS",
    "security": "SECURITY",
    "ca_file": "CA_FILE",
    "write_enabled": "WRITE_ENABLED",
    "auth": "AUTH",
    "oauth2_token_command": "OAUTH2_TOKEN_COMMAND",
}
_SECURE_SUFFIX = "SECURE"
_ADDRESS = re.compile(r"[^@\s<>,;\"]+@[^@\s<>,;\"]+")
_KNOWN_SUFFIXES = (*ENV_SUFFIXES.values(), _SECURE_SUFFIX)


class ConfigError(Exception):
    """The configuration is invalid; the message names the key and the reason."""


class Security(StrEnum):
    TLS = "tls"
    STARTTLS = "starttls"
    PLAIN = "plain"


DEFAULT_PORTS = {Security.TLS: 993, Security.STARTTLS: 143, Security.PLAIN: 143}


class AuthMethod(StrEnum):
    """How an account logs in: LOGIN with a password, or SASL with an OAuth2 access token."""

    PASSWORD = "password"
    XOAUTH2 = "xoauth2"
    OAUTHBEARER = "oauthbearer"

    @property
    def mechanism(self) -> str:
        """The SASL mechanism name (``XOAUTH2``, ``OAUTHBEARER``); ``LOGIN`` for passwords."""
        return "LOGIN" if self is AuthMethod.PASSWORD else self.value.upper()


_PASSWORD_KEYS = ("password_env", "password_command", "password")


def is_loopback_host(host: str) -> bool:
    """True for ``localhost`` and literal loopback addresses (no DNS lookups)."""
    if host.lower() in {"localhost", "localhost.localdomain"}:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class AccountConfig(BaseModel):
    """One IMAP account (``[accounts.<account_id>]``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = Field(min_length=1, max_length=253, description="IMAP server host name or address.")
    port: int | None = Field(
        default=None, ge=1, le=65535, description="Port; default 993 for tls, 143 otherwise."
    )
    security: Security = Field(
        default=Security.TLS,
        description="tls (implicit TLS), starttls (upgrade required), or plain (loopback only).",
    )
    username: str = Field(min_length=1, description="Login name.")
    addresses: list[Annotated[str, Field(min_length=3, max_length=254)]] = Field(
        default_factory=list,
        max_length=50,
        description="Your own email addresses on this account, aliases included. Compact results show a "
        "recipient with one of them as 'me', and drafts are from the first. Default: the username, when "
        "it is an email address.",
    )
    auth: AuthMethod = Field(
        default=AuthMethod.PASSWORD,
        description="password (LOGIN with one of the password settings), or xoauth2 / oauthbearer "
        "(SASL with an OAuth2 access token from oauth2_token_command; e.g. Gmail, Microsoft 365).",
    )
    oauth2_token_command: list[str] | None = Field(
        default=None,
        min_length=1,
        description="Command (argv list) printing a current OAuth2 access token (e.g. from oauth2l, "
        "pizauth or mailctl); run at each login, and once more when the server rejects the token.",
    )
    oauth2_token_timeout_s: float = Field(
        default=20.0,
        gt=0,
        le=300,
        description="How long oauth2_token_command may run (within the call's budget) before it is "
        "stopped and the login fails.",
    )
    password_env: str | None = Field(
        default=None, min_length=1, description="Name of an environment variable holding the password."
    )
    password_command: list[str] | None = Field(
        default=None, min_length=1, description="Command (argv list) whose stdout is the password."
    )
    password: SecretStr | None = Field(
        default=None, description="The password itself (discouraged; `check` warns)."
    )
    ca_file: Path | None = Field(
        default=None, description="Extra trust anchors (PEM) for a self-signed server certificate."
    )
    connect_timeout_s: float = Field(
        default=10.0,
        gt=0,
        le=300,
        description="Budget for TCP connect, TLS handshake and greeting. A whole call is bounded by "
        "connect_timeout_s + command_timeout_s.",
    )
    command_timeout_s: float = Field(
        default=30.0,
        gt=0,
        le=600,
        description="Budget for each IMAP command (login included), within the call's overall budget.",
    )
    write_enabled: bool | None = Field(
        default=None,
        description="Allow write tools (flags, move, copy, delete, mailboxes, drafts) on this account; "
        "unset means [server] write_enabled.",
    )
    trash_mailbox: str | None = Field(
        default=None,
        min_length=1,
        max_length=1000,
        description="Where deleted messages go when the server marks no mailbox as \\Trash.",
    )
    drafts_mailbox: str | None = Field(
        default=None,
        min_length=1,
        max_length=1000,
        description="Where drafts are saved when the server marks no mailbox as \\Drafts.",
    )

    @field_validator("addresses")
    @classmethod
    def _addresses_are_addresses(cls, addresses: list[str]) -> list[str]:
        for address in addresses:
            if not _ADDRESS.fullmatch(address.strip()):
                raise ValueError(f"{address!r} is not an email address (name@domain)")
        return [address.strip() for address in addresses]

    @model_validator(mode="after")
    def _check(self) -> AccountConfig:
        sources = [name for name in _PASSWORD_KEYS if getattr(self, name) is not None]
        if self.auth is not AuthMethod.PASSWORD:
            if self.oauth2_token_command is None:
                raise ValueError(
                    f"auth = '{self.auth.value}' needs oauth2_token_command (a command printing an access "
                    'token, e.g. ["pizauth", "show", "work"])'
                )
            if sources:
                raise ValueError(
                    f"auth = '{self.auth.value}' logs in with oauth2_token_command; remove "
                    f"{', '.join(sources)} (passwords are not used)"
                )
        elif self.oauth2_token_command is not None:
            raise ValueError(
                "oauth2_token_command is only used with auth = 'xoauth2' or 'oauthbearer'; set auth, "
                "or remove oauth2_token_command"
            )
        elif len(sources) != 1:
            found = ", ".join(sources) if sources else "none"
            raise ValueError(f"set exactly one of password_env, password_command, password (found: {found})")
        if self.security is Security.PLAIN and not is_loopback_host(self.host):
            raise ValueError(
                "security = 'plain' sends the password unencrypted and is only allowed for loopback "
                "hosts; use 'tls' or 'starttls'"
            )
        if self.ca_file is not None and not self.ca_file.expanduser().is_file():
            raise ValueError("ca_file does not exist or is not a file")
        return self

    # Where the account came from, so messages name a setting the way the user wrote it.
    _file_section: str | None = PrivateAttr(default=None)
    _env_prefix: str | None = PrivateAttr(default=None)
    _env_secure: bool = PrivateAttr(default=False)

    def setting(self, key: str, value: str | None = None) -> str:
        """How the user sets ``key`` for this account, optionally to ``value``.

        ``MAIL_IMAP_WORK_CA_FILE`` for an environment account, ``ca_file in [accounts.work]`` for a
        file account; ``security`` of an account configured with ``_SECURE`` is named as ``_SECURE``
        (``true`` for tls, ``false`` for starttls).
        """
        if self._env_prefix is not None:
            suffix = ENV_SUFFIXES.get(key, key.upper())
            if key == "security" and self._env_secure and value in {None, "tls", "starttls"}:
                suffix = _SECURE_SUFFIX
                value = None if value is None else str(value == "tls").lower()
            name = self._env_prefix + suffix
            return name if value is None else f"{name}={value}"
        assignment = key if value is None else f"{key} = {_toml_value(value)}"
        return assignment if self._file_section is None else f"{assignment} in [{self._file_section}]"

    @property
    def effective_addresses(self) -> list[str]:
        """``addresses``, else the username when it is an email address; drafts are from the first."""
        return self.addresses or ([self.username] if _ADDRESS.fullmatch(self.username) else [])

    @property
    def own_addresses(self) -> frozenset[str]:
        """The effective addresses lower-cased, to recognise this account among a message's recipients."""
        return frozenset(address.lower() for address in self.effective_addresses)

    @property
    def effective_port(self) -> int:
        return self.port if self.port is not None else DEFAULT_PORTS[self.security]

    @property
    def password_source(self) -> str:
        if self.auth is not AuthMethod.PASSWORD:
            return "oauth2_token_command"
        if self.password_env is not None:
            return f"env:{self.password_env}"
        if self.password_command is not None:
            return "command"
        return "inline"

    def resolve_password(self, env: Mapping[str, str] | None = None) -> str:
        """Return the password from its source; raise :class:`ConfigError` without echoing it."""
        if self.password is not None:
            return self.password.get_secret_value()
        return resolve_secret(
            env_var=self.password_env,
            command=self.password_command,
            env=env,
            command_setting="password_command",
            what="password",
        )


def resolve_secret(
    *,
    env_var: str | None = None,
    command: list[str] | None = None,
    file: Path | None = None,
    env: Mapping[str, str] | None = None,
    command_setting: str = "command",
    file_setting: str = "file",
    what: str = "secret",
) -> str:
    """A secret from exactly one of an environment variable, a command's stdout or a file (trailing
    newlines trimmed). Raises :class:`ConfigError` naming the setting, never echoing the value or the
    command's output."""
    env = os.environ if env is None else env
    if env_var is not None:
        value = env.get(env_var)
        if not value:
            raise ConfigError(f"the environment variable {env_var} is not set or empty")
        return value
    if file is not None:
        try:
            value = file.expanduser().read_text(encoding="utf-8").rstrip("\r\n")
        except OSError as exc:
            raise ConfigError(f"{file_setting}: cannot read {file} ({exc.strerror})") from None
        except UnicodeDecodeError:
            raise ConfigError(f"{file_setting}: {file} is not UTF-8 text") from None
        if not value:
            raise ConfigError(f"{file_setting}: {file} is empty")
        return value
    assert command is not None
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            timeout=PASSWORD_COMMAND_TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise ConfigError(f"{command_setting} could not run: {type(exc).__name__}") from None
    if done.returncode != 0:
        raise ConfigError(f"{command_setting} exited with status {done.returncode}")
    value = done.stdout.decode("utf-8", "replace").rstrip("\r\n")
    if not value:
        raise ConfigError(f"{command_setting} printed an empty {what}")
    return value


class ServerSettings(BaseModel):
    """``[server]``: switches and the limits that bound every response."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    write_enabled: bool = Field(
        default=False,
        description="Allow write tools on every account that does not set its own write_enabled. "
        "When no account allows writes, write tools are not even listed.",
    )
    audit_file: Path | None = Field(
        default=None,
        description="Append one JSON line per write (time, request id, tool, account, action, message "
        "count, outcome; never content) to this file, besides the log line on stderr.",
    )
    allow_permanent_delete: bool = Field(
        default=False,
        description="Allow imap_apply_to_messages to expunge (permanent: true, after confirmation); "
        "otherwise deleting moves messages to Trash.",
    )
    max_mailboxes: int = Field(
        default=1000, ge=1, le=100_000, description="Most mailboxes one imap_list_mailboxes call returns."
    )
    max_search_limit: int = Field(
        default=100, ge=1, le=1000, description="Upper bound for imap_search_messages `limit`."
    )
    max_snippet_chars: int = Field(default=500, ge=0, le=5000, description="Upper bound for `snippet_chars`.")
    max_body_chars: int = Field(
        default=100_000, ge=100, le=2_000_000, description="Upper bound for `body_max_chars`."
    )
    max_raw_bytes: int = Field(
        default=65_536, ge=1024, le=1_048_576, description="Upper bound for imap_get_message_raw `max_bytes`."
    )
    keepalive_interval_s: float = Field(
        default=240.0,
        ge=0,
        le=1740,
        description="Send NOOP on an account's connection after it sat idle this many seconds, so a "
        "server's idle logout or a NAT router does not drop it and the next call needs no reconnect; "
        "0 turns it off. The default stays below common NAT timeouts (5 minutes) and IMAP's 30.",
    )
    summary_cache_entries: int = Field(
        default=2000,
        ge=0,
        le=100_000,
        description="Search-result summaries kept per account for messages already seen, so a page "
        "seen before is answered from the server's flags alone (a message's content never changes "
        "under its UID); 0 keeps none. An entry is typically under 1 KB plus its snippet; whatever "
        "this allows, the kept summaries of an account hold at most 4 million characters of text.",
    )
    max_text_part_bytes: int = Field(
        default=2_000_000,
        ge=10_000,
        le=50_000_000,
        description="Most bytes fetched from one text part; larger parts are read in part and flagged.",
    )
    max_attachment_bytes: int = Field(
        default=25 * 1024 * 1024,
        ge=64 * 1024,
        le=1024 * 1024 * 1024,
        description="Most decoded bytes of one attachment the server reads (fetched in chunks into a "
        "temporary file, never whole into memory); a document or image beyond it is limit_exceeded, "
        "text beyond it is cut and flagged, bytes windows must end within it.",
    )
    extract_timeout_s: float = Field(
        default=20.0,
        gt=0,
        le=600,
        description="Wall-clock limit for extracting one document's text (PDF, Office, ODF, calendar) in "
        "the sandboxed child process; its CPU time is limited to the same.",
    )
    extract_memory_mb: int = Field(
        default=512,
        ge=64,
        le=16_384,
        description="Address-space limit (RLIMIT_AS) of the sandboxed extraction process, in MiB.",
    )
    max_attachment_text_chars: int = Field(
        default=100_000,
        ge=1000,
        le=2_000_000,
        description="Upper bound for imap_get_attachment `max_chars` and imap_get_message "
        "`attachment_text_max_chars`.",
    )
    max_image_pixels: int = Field(
        default=50_000_000,
        ge=10_000,
        le=500_000_000,
        description="Largest image (width x height) opened for imap_get_attachment mode=image; a bigger "
        "one (a decompression bomb, or simply huge) is limit_exceeded.",
    )
    image_max_dimension: int = Field(
        default=1568,
        ge=64,
        le=8192,
        description="Images are downscaled so that neither side exceeds this many pixels.",
    )
    max_image_output_bytes: int = Field(
        default=1_500_000,
        ge=50_000,
        le=20_000_000,
        description="Most bytes of the image block imap_get_attachment returns (re-encoded smaller "
        "when needed, else limit_exceeded).",
    )
    max_resource_bytes: int = Field(
        default=10 * 1024 * 1024,
        ge=64 * 1024,
        le=1024 * 1024 * 1024,
        description="Largest attachment served whole as an MCP resource (attachment resource_uri); "
        "larger ones are read with imap_get_attachment windows.",
    )


#: Shorter tokens are refused: a bearer token is the only thing between the network and the mailboxes.
MIN_HTTP_TOKEN_CHARS = 16
_TOKEN_SOURCES = ("token_env", "token_file", "token_command")


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

    @model_validator(mode="after")
    def _check(self) -> HttpSettings:
        sources = [name for name in _TOKEN_SOURCES if getattr(self, name) is not None]
        if len(sources) > 1:
            raise ValueError(f"set at most one of {', '.join(_TOKEN_SOURCES)} (found: {', '.join(sources)})")
        if not is_loopback_host(self.host):
            if not sources:
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
        return any(getattr(self, name) is not None for name in _TOKEN_SOURCES)

    def with_overrides(self, **overrides: Any) -> HttpSettings:
        """These settings with command-line values (``host``, ``port``, ...) applied and checked again;
        a :class:`ConfigError` names the flag or key."""
        given = {key: value for key, value in overrides.items() if value is not None}
        try:
            return HttpSettings.model_validate({**self.model_dump(), **given})
        except ValidationError as exc:
            flags = ", ".join(f"--{key.replace('_', '-')}" for key in given)
            raise ConfigError(
                _format_validation_error(
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
        )
        if len(token) < MIN_HTTP_TOKEN_CHARS or not token.isprintable() or " " in token:
            raise ConfigError(
                f"the HTTP bearer token must be at least {MIN_HTTP_TOKEN_CHARS} printable characters "
                'without spaces; generate one with: python3 -c "import secrets; '
                'print(secrets.token_urlsafe(32))"'
            )
        return token


class Config(BaseModel):
    """The whole configuration: accounts by id, and server settings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    accounts: dict[str, AccountConfig] = Field(default_factory=dict)
    server: ServerSettings = Field(default_factory=ServerSettings)
    http: HttpSettings = Field(default_factory=HttpSettings)

    def writes_allowed(self, account_id: str) -> bool:
        """Whether write tools may change mail of ``account_id``."""
        own = self.accounts[account_id].write_enabled
        return self.server.write_enabled if own is None else own

    @model_validator(mode="after")
    def _check_ids(self) -> Config:
        for account_id in self.accounts:
            if not re.match(ACCOUNT_ID_PATTERN, account_id):
                raise ValueError(
                    f"account id {account_id!r} must match {ACCOUNT_ID_PATTERN} (letters, digits, _ and -)"
                )
        for account_id, account in self.accounts.items():
            if account._env_prefix is None:
                account._file_section = f"accounts.{account_id}"
        return self


def _toml_value(value: str) -> str:
    return value if value.isdigit() or value in {"true", "false"} else f'"{value}"'


def _format_validation_error(
    exc: ValidationError, name_of: Callable[[str], str] | None = None, fallback: str = "config"
) -> str:
    """One line per error, each naming its key; ``name_of`` turns a key into the user's spelling."""
    lines = []
    for err in exc.errors(include_url=False, include_input=False):
        key = ".".join(str(p) for p in err["loc"])
        key = (name_of(key) if name_of else key) if key else fallback
        reason = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        lines.append(f"{key}: {reason.removeprefix('Value error, ')}")
    return "invalid configuration: " + "; ".join(lines)


def _truthy(value: str) -> bool:
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _env_name(prefix: str, key: str) -> str:
    return prefix + ENV_SUFFIXES.get(key, key.upper())


def _check_env_names(env: Mapping[str, str], prefixes: list[str], referenced: set[str]) -> None:
    """Refuse ``MAIL_IMAP_<ID>_*`` variables that configure nothing: a misspelt suffix, or an account
    without ``_HOST``. Variables named by a file account's ``password_env`` are left alone."""
    by_length = sorted(prefixes, key=len, reverse=True)
    for name in sorted(env):
        if not name.startswith(ENV_PREFIX) or name in GLOBAL_ENV or name in referenced:
            continue
        owner = next((prefix for prefix in by_length if name.startswith(prefix)), None)
        if owner is not None:
            suffix = name.removeprefix(owner)
            if suffix in _KNOWN_SUFFIXES:
                continue
            # A known name the variable starts with (AUTHENTICATION: AUTH), else the most similar one.
            close = sorted((k for k in _KNOWN_SUFFIXES if suffix.startswith(k)), key=len, reverse=True)
            close = close or difflib.get_close_matches(suffix, _KNOWN_SUFFIXES, n=1, cutoff=0.5)
            hint = f"did you mean {owner}{close[0]}? " if close else ""
            raise ConfigError(
                f"{name} is not a setting of account {owner.removeprefix(ENV_PREFIX)[:-1].lower()!r}: "
                f"{hint}Known: {', '.join(owner + known for known in _KNOWN_SUFFIXES)}"
            )
        for suffix in _KNOWN_SUFFIXES:
            if name.endswith(f"_{suffix}") and len(name) > len(ENV_PREFIX) + len(suffix) + 1:
                host = name.removesuffix(suffix) + "HOST"
                raise ConfigError(
                    f"{name} is set but {host} is not: an environment account needs {host} "
                    "(the IMAP server's host name); set it or remove the account's other variables"
                )


def env_accounts(
    env: Mapping[str, str], referenced: set[str] | None = None
) -> tuple[dict[str, dict[str, Any]], bool | None]:
    """Accounts from ``MAIL_IMAP_<ID>_*`` variables (seed-server compatible) and the write switch.

    The password is referenced by variable name, never copied, so it cannot end up in a dump.
    Unknown suffixes and accounts without ``_HOST`` are a :class:`ConfigError` naming the variable.
    """
    accounts: dict[str, dict[str, Any]] = {}
    prefixes = [
        f"{ENV_PREFIX}{match.group(1)}_" for name in env if (match := _ENV_ACCOUNT.match(name)) is not None
    ]
    _check_env_names(env, prefixes, referenced or set())
    for name in sorted(env):
        match = _ENV_ACCOUNT.match(name)
        if not match:
            continue
        prefix = f"{ENV_PREFIX}{match.group(1)}_"
        raw: dict[str, Any] = {"host": env[name]}
        if f"{prefix}PORT" in env:
            raw["port"] = env[f"{prefix}PORT"]
        if f"{prefix}USER" in env:
            raw["username"] = env[f"{prefix}USER"]
        if f"{prefix}ADDRESSES" in env:
            raw["addresses"] = [a.strip() for a in env[f"{prefix}ADDRESSES"].split(",") if a.strip()]
        if f"{prefix}PASS" in env:
            raw["password_env"] = f"{prefix}PASS"
        if f"{prefix}SECURITY" in env:
            raw["security"] = env[f"{prefix}SECURITY"].strip().lower()
        elif f"{prefix}SECURE" in env:
            # The seed server only spoke implicit TLS; "false" here means upgrade, never plaintext.
            raw["security"] = "tls" if _truthy(env[f"{prefix}SECURE"]) else "starttls"
        if f"{prefix}CA_FILE" in env:
            raw["ca_file"] = env[f"{prefix}CA_FILE"]
        if f"{prefix}WRITE_ENABLED" in env:
            raw["write_enabled"] = _truthy(env[f"{prefix}WRITE_ENABLED"])
        if f"{prefix}AUTH" in env:
            raw["auth"] = env[f"{prefix}AUTH"].strip().lower()
        if f"{prefix}OAUTH2_TOKEN_COMMAND" in env:
            raw["oauth2_token_command"] = parse_command(
                env[f"{prefix}OAUTH2_TOKEN_COMMAND"], f"{prefix}OAUTH2_TOKEN_COMMAND"
            )
        accounts[match.group(1).lower()] = raw
    write = env.get("MAIL_IMAP_WRITE_ENABLED")
    return accounts, (None if write is None else _truthy(write))


def parse_command(value: str, name: str) -> list[str]:
    """An argv from an environment variable: a JSON array of strings (``["pizauth", "show", "work"]``),
    or else words split as a POSIX shell would (``pizauth show work``), without running a shell."""
    text = value.strip()
    argv: list[str]
    if text.startswith("["):
        try:
            parsed: Any = json.loads(text)
        except ValueError:
            parsed = None
        if not isinstance(parsed, list) or not all(isinstance(arg, str) for arg in parsed):
            raise ConfigError(f'{name}: not a JSON array of strings (e.g. ["pizauth", "show", "work"])')
        argv = [str(arg) for arg in parsed]
    else:
        try:
            argv = shlex.split(text)
        except ValueError as exc:
            raise ConfigError(f"{name}: cannot split into words ({exc})") from None
    if not argv or not argv[0]:
        raise ConfigError(f"{name}: empty command")
    return argv


def resolve_config_path(explicit: Path | None, env: Mapping[str, str]) -> tuple[Path, bool]:
    """Which file to read, and whether it must exist (explicitly named)."""
    if explicit is not None:
        return explicit.expanduser(), True
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV]).expanduser(), True
    return DEFAULT_CONFIG_PATH.expanduser(), False


def load_config(path: Path | None = None, env: Mapping[str, str] | None = None) -> Config:
    """Load, merge and validate the file and env accounts; raise :class:`ConfigError` on any problem."""
    env = os.environ if env is None else env
    file_path, required = resolve_config_path(path, env)
    raw: dict[str, Any] = {}
    if file_path.is_file():
        try:
            raw = tomllib.loads(file_path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{file_path}: not valid TOML ({exc})") from None
        except OSError as exc:
            raise ConfigError(f"{file_path}: cannot read ({exc.strerror})") from None
    elif required:
        raise ConfigError(f"config file {file_path} does not exist")

    file_accounts = raw.get("accounts", {})
    if not isinstance(file_accounts, dict):
        raise ConfigError("accounts: must be a table of [accounts.<account_id>] sections")
    referenced = {
        str(account["password_env"])
        for account in file_accounts.values()
        if isinstance(account, dict) and "password_env" in account
    }
    from_env, write_enabled = env_accounts(env, referenced)
    for account_id in from_env:
        if account_id in file_accounts:
            raise ConfigError(
                f"account {account_id!r} is defined twice: [accounts.{account_id}] in {file_path} "
                f"and MAIL_IMAP_{account_id.upper()}_HOST in the environment; remove one"
            )
    for account_id, account in from_env.items():
        prefix = f"{ENV_PREFIX}{account_id.upper()}_"
        oauth2 = account.get("auth") in {AuthMethod.XOAUTH2.value, AuthMethod.OAUTHBEARER.value}
        for key in ("username", "oauth2_token_command" if oauth2 else "password_env"):
            if key not in account:
                needs = [f"{prefix}{suffix}" for suffix in ("HOST", "USER")]
                needs += [f"{prefix}AUTH", f"{prefix}OAUTH2_TOKEN_COMMAND"] if oauth2 else [f"{prefix}PASS"]
                raise ConfigError(
                    f"{prefix}{ENV_SUFFIXES[key]} is not set: an environment account needs "
                    f"{', '.join(needs[:-1])} and {needs[-1]}"
                )
        if oauth2 and "password_env" in account:
            raise ConfigError(
                f"{prefix}PASS is set, but {prefix}AUTH={account['auth']} logs in with the token of "
                f"{prefix}OAUTH2_TOKEN_COMMAND; unset {prefix}PASS"
            )
        try:
            AccountConfig.model_validate(account)
        except ValidationError as exc:
            raise ConfigError(
                _format_validation_error(
                    exc,
                    name_of=functools.partial(_env_name, prefix),
                    fallback=f"{prefix}*",
                )
            ) from None
    merged = {**raw, "accounts": {**file_accounts, **from_env}}
    if write_enabled is not None:
        merged["server"] = {**raw.get("server", {}), "write_enabled": write_enabled}
    http = raw.get("http", {})
    if env.get(HTTP_TOKEN_ENV) and isinstance(http, dict) and not any(key in http for key in _TOKEN_SOURCES):
        merged["http"] = {**http, "token_env": HTTP_TOKEN_ENV}
    try:
        config = Config.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(_format_validation_error(exc)) from None
    if not config.accounts:
        raise ConfigError(
            f"no accounts configured: create {file_path} with an [accounts.<id>] table "
            "(`mail-imap-mcp config-example` prints a commented one), or set the environment "
            "variables MAIL_IMAP_<ID>_HOST, _USER and _PASS (e.g. MAIL_IMAP_DEFAULT_HOST)"
        )
    for account_id, settings in config.accounts.items():
        if account_id in from_env:
            settings._file_section = None
            prefix = f"{ENV_PREFIX}{account_id.upper()}_"
            settings._env_prefix = prefix
            settings._env_secure = f"{prefix}{_SECURE_SUFFIX}" in env and f"{prefix}SECURITY" not in env
    return config

"""Loading: the TOML file, env-only accounts and the variables that name no setting."""

from __future__ import annotations

import difflib
import functools
import json
import os
import re
import shlex
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from . import local_files
from .accounts import DEFAULT_CONFIG_PATH, AccountConfig, AuthMethod, ConfigError, format_validation_error
from .env_names import (
    CONFIG_ENV,
    ENV_ACCOUNT_PATTERN,
    ENV_PREFIX,
    ENV_SUFFIXES,
    GLOBAL_ENV,
    HTTP_TOKEN_ENV,
    INDEX_ENV,
    INDEX_MEANING_ENV,
    KNOWN_ENV_SUFFIXES,
    SECURE_ENV_SUFFIX,
    UNSUBSCRIBE_ENABLED_ENV,
)
from .errors import SettingFault
from .faults import set_aside
from .http_settings import HTTP_TOKEN_SOURCES
from .providers import provider_for_address
from .settings import Config
from .sign_in_env import sign_in_from_env

_SMTP_HOST = "_" + ENV_SUFFIXES["smtp_host"]
_SIEVE_HOST = "_" + ENV_SUFFIXES["sieve_host"]
#: A value Claude Desktop leaves as it is when an optional field of an MCP Bundle's form was never filled
#: and has no default (modelcontextprotocol/mcpb issue 250): as unset as an empty one.
_UNSUBSTITUTED = re.compile(r"^\$\{user_config\.[^}]*\}$")


def is_unset(value: str) -> bool:
    """An empty (or blank) value counts as unset, as does a bundle's unsubstituted ``${user_config.*}``."""
    return not value.strip() or _UNSUBSTITUTED.fullmatch(value.strip()) is not None


def set_variables(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without the ``MAIL_IMAP_*`` variables that are empty: a form field left empty is unset."""
    return {
        name: value for name, value in env.items() if not (name.startswith(ENV_PREFIX) and is_unset(value))
    }


def _truthy(value: str) -> bool:
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _env_name(prefix: str, key: str) -> str:
    key = key.replace(".", "_")  # smtp.port, a key of the nested table, is SMTP_PORT (sieve.port: SIEVE_PORT)
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
            if suffix in KNOWN_ENV_SUFFIXES:
                continue
            # A known name the variable starts with (AUTHENTICATION: AUTH), else the most similar one.
            close = sorted((k for k in KNOWN_ENV_SUFFIXES if suffix.startswith(k)), key=len, reverse=True)
            close = close or difflib.get_close_matches(suffix, KNOWN_ENV_SUFFIXES, n=1, cutoff=0.5)
            hint = f"did you mean {owner}{close[0]}? " if close else ""
            raise ConfigError(
                f"{name} is not a setting of account {owner.removeprefix(ENV_PREFIX)[:-1].lower()!r}: "
                f"{hint}Known: {', '.join(owner + known for known in KNOWN_ENV_SUFFIXES)}"
            )
        for suffix in sorted(KNOWN_ENV_SUFFIXES, key=len, reverse=True):  # SMTP_HOST before HOST
            if name.endswith(f"_{suffix}") and len(name) > len(ENV_PREFIX) + len(suffix) + 1:
                host = name.removesuffix(suffix) + "HOST"
                raise ConfigError(
                    f"{name} is set but {host} is not: an environment account needs {host} "
                    "(the IMAP server's host name) or an address at a known provider in "
                    f"{name.removesuffix(suffix)}USER; set it or remove the account's other variables"
                )


def env_accounts(
    env: Mapping[str, str], referenced: set[str] | None = None
) -> tuple[dict[str, dict[str, Any]], bool | None]:
    """Accounts from ``MAIL_IMAP_<ID>_*`` variables (seed-server compatible) and the write switch.

    The password is referenced by variable name, never copied, so it cannot end up in a dump.
    Unknown suffixes are a :class:`ConfigError` naming the variable; an account without ``_HOST`` at no
    known provider gets no host (:func:`~.faults.set_aside` makes it a fault).
    """
    accounts: dict[str, dict[str, Any]] = {}
    env = set_variables(env)
    referenced = referenced or set()
    account_ids = sorted(
        {
            match.group(1)
            for name in env
            if name not in referenced
            and not name.endswith(_SMTP_HOST)  # the submission server of an account, declaring none
            and not name.endswith(_SIEVE_HOST)  # its ManageSieve server, the same
            and (match := ENV_ACCOUNT_PATTERN.match(name)) is not None
        }
    )
    prefixes = [f"{ENV_PREFIX}{account_id}_" for account_id in account_ids]
    # An id that is another's prefix plus a suffix (MAIL_IMAP_DEFAULT_USER_HOST) belongs to the longer.
    _check_env_names(env, prefixes, referenced)
    for account_id in account_ids:
        prefix = f"{ENV_PREFIX}{account_id}_"
        raw: dict[str, Any] = {}
        for key, suffix in (
            ("addresses", "ADDRESSES"),
            ("helper_env", "HELPER_ENV"),
            ("allowed_recipients", "ALLOWED_RECIPIENTS"),
        ):
            if f"{prefix}{suffix}" in env:
                raw[key] = [item.strip() for item in env[f"{prefix}{suffix}"].split(",") if item.strip()]
        if f"{prefix}USER" in env:
            raw["username"] = env[f"{prefix}USER"]
        elif raw.get("addresses"):
            raw["username"] = raw["addresses"][0]
        if f"{prefix}HOST" in env:
            raw["host"] = env[f"{prefix}HOST"]
        else:
            raw.update(_provider_server(prefix, raw))
        if f"{prefix}PORT" in env:
            raw["port"] = env[f"{prefix}PORT"]
        if f"{prefix}PASS" in env:
            raw["password_env"] = f"{prefix}PASS"
        if f"{prefix}SECURITY" in env:
            raw["security"] = env[f"{prefix}SECURITY"].strip().lower()
        elif f"{prefix}SECURE" in env:
            # The seed server only spoke implicit TLS; "false" here means upgrade, never plaintext.
            raw["security"] = "tls" if _truthy(env[f"{prefix}SECURE"]) else "starttls"
        if f"{prefix}CA_FILE" in env:
            raw["ca_file"] = env[f"{prefix}CA_FILE"]
        for key in ("write_enabled", "send_enabled", "index", "index_meaning", "rules_enabled"):
            if f"{prefix}{ENV_SUFFIXES[key]}" in env:
                raw[key] = _truthy(env[f"{prefix}{ENV_SUFFIXES[key]}"])
        smtp = {
            key: env[f"{prefix}SMTP_{key.upper()}"].strip()
            for key in ("host", "port", "security")
            if f"{prefix}SMTP_{key.upper()}" in env
        }
        if smtp:
            raw["smtp"] = {**smtp, **({"security": smtp["security"].lower()} if "security" in smtp else {})}
        sieve = {
            key: env[f"{prefix}SIEVE_{key.upper()}"].strip()
            for key in ("host", "port", "security")
            if f"{prefix}SIEVE_{key.upper()}" in env
        }
        if sieve:
            raw["sieve"] = {
                **sieve,
                **({"security": sieve["security"].lower()} if "security" in sieve else {}),
            }
        raw.update(sign_in_from_env(env, prefix))
        if f"{prefix}AUTH" in env:
            raw["auth"] = env[f"{prefix}AUTH"].strip().lower()
        if f"{prefix}OAUTH2_TOKEN_COMMAND" in env:
            raw["oauth2_token_command"] = parse_command(
                env[f"{prefix}OAUTH2_TOKEN_COMMAND"], f"{prefix}OAUTH2_TOKEN_COMMAND"
            )
            # A token command says how the account logs in; XOAUTH2 is what Gmail and Microsoft speak.
            raw.setdefault("auth", "xoauth2")
        accounts[account_id.lower()] = raw
    write = env.get("MAIL_IMAP_WRITE_ENABLED")
    return accounts, (None if write is None else _truthy(write))


def _provider_server(prefix: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """The host, port and security of the provider of an environment account without ``_HOST``, from
    its address (``_ADDRESSES``, else ``_USER``); none when it is no known one (a fault: faults.py)."""
    addresses = [*raw.get("addresses", []), str(raw.get("username", ""))]
    address = next((item for item in addresses if "@" in item), addresses[0])
    provider = provider_for_address(address)
    if provider is None:
        return {}
    return {"host": provider.imap_host, "port": provider.port, "security": provider.security.value}


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
    """Load, merge and validate the file and env accounts; raise :class:`ConfigError` on any problem of the
    file, or of the environment that is no account's setting (a misspelt variable).

    A wrong setting of an environment account (its password, host, port, security, addresses or
    certificate: :mod:`.faults`) leaves that account in the configuration, unusable, with its
    :attr:`~.AccountConfig.faults`. A ``MAIL_IMAP_*`` variable that is empty counts as unset
    (:func:`is_unset`)."""
    env = set_variables(os.environ if env is None else env)
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
    faults: dict[str, list[SettingFault]] = {}
    for account_id, account in list(from_env.items()):
        prefix = f"{ENV_PREFIX}{account_id.upper()}_"
        oauth2 = account.get("auth") in {AuthMethod.XOAUTH2.value, AuthMethod.OAUTHBEARER.value}
        # No field of the bundle's form leaves these out (its address is required; AUTH is not on it).
        # The built-in sign-in (_OAUTH2_PROVIDER) needs no token command.
        command_needed = oauth2 and "oauth2_provider" not in account
        for key in ("username", "oauth2_token_command") if command_needed else ("username",):
            if key not in account:
                needs = [f"{prefix}{suffix}" for suffix in ("HOST", "USER")]
                needs += (
                    [f"{prefix}AUTH", f"{prefix}OAUTH2_TOKEN_COMMAND (or {prefix}OAUTH2_PROVIDER)"]
                    if oauth2
                    else [f"{prefix}PASS"]
                )
                raise ConfigError(
                    f"{prefix}{ENV_SUFFIXES[key]} is not set: an environment account needs "
                    f"{', '.join(needs[:-1])} and {needs[-1]}"
                )
        from_env[account_id], faults[account_id] = set_aside(prefix, account)
        try:
            AccountConfig.model_validate(from_env[account_id])
        except ValidationError as exc:
            raise ConfigError(
                format_validation_error(
                    exc,
                    name_of=functools.partial(_env_name, prefix),
                    fallback=f"{prefix}*",
                )
            ) from None
    merged = {**raw, "accounts": {**file_accounts, **from_env}}
    server_env = local_files.from_env(env) | (
        {} if write_enabled is None else {"write_enabled": write_enabled}
    )
    if env.get(UNSUBSCRIBE_ENABLED_ENV, "").strip():
        server_env["unsubscribe_enabled"] = _truthy(env[UNSUBSCRIBE_ENABLED_ENV])
    for key, variable in (("index", INDEX_ENV), ("index_meaning", INDEX_MEANING_ENV)):
        if env.get(variable, "").strip():
            server_env[key] = _truthy(env[variable])
    if server_env:
        merged["server"] = {**raw.get("server", {}), **server_env}
    http = raw.get("http", {})
    if (
        env.get(HTTP_TOKEN_ENV)
        and isinstance(http, dict)
        and not any(key in http for key in HTTP_TOKEN_SOURCES)
        and "auth" not in http
    ):
        merged["http"] = {**http, "token_env": HTTP_TOKEN_ENV}
    try:
        config = Config.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc)) from None
    if not config.accounts:
        raise ConfigError(
            f"no accounts configured: create {file_path} with an [accounts.<id>] table "
            "(`mail-imap-mcp config-example` prints a commented one), or set the environment "
            "variables MAIL_IMAP_<ID>_HOST, _USER and _PASS (e.g. MAIL_IMAP_DEFAULT_HOST)"
        )
    if "index" in raw:
        config.index._file_folder = file_path.absolute().parent
    for account_id, settings in config.accounts.items():
        if account_id in from_env:
            settings._file_section = None
            prefix = f"{ENV_PREFIX}{account_id.upper()}_"
            settings._env_prefix = prefix
            settings._env_secure = f"{prefix}{SECURE_ENV_SUFFIX}" in env and f"{prefix}SECURITY" not in env
            settings._faults = tuple(faults[account_id])
    return config

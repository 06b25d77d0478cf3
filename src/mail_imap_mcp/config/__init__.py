"""Configuration: a TOML file plus env-only accounts, validated by pydantic.

Lookup order for the file: ``--config``, ``$MAIL_IMAP_MCP_CONFIG``, then
``~/.config/mail-imap-mcp/config.toml`` (optional when env accounts exist). Errors name the key
and the reason and never echo a value, so a misplaced secret cannot leak through them.
"""

from .accounts import (
    ACCOUNT_ID_PATTERN,
    DEFAULT_PORTS,
    AccountConfig,
    AuthMethod,
    ConfigError,
    Security,
    is_loopback_host,
)
from .env_names import CONFIG_ENV, ENV_PREFIX, ENV_SUFFIXES, HTTP_TOKEN_ENV
from .http_settings import HttpSettings
from .index_settings import IndexSettings
from .loading import env_accounts, load_config, parse_command, resolve_config_path
from .secrets import helper_environment, resolve_secret
from .settings import Config, ServerSettings
from .team import HttpAuthSettings, StateSettings

__all__ = [
    "ACCOUNT_ID_PATTERN",
    "CONFIG_ENV",
    "DEFAULT_PORTS",
    "ENV_PREFIX",
    "ENV_SUFFIXES",
    "HTTP_TOKEN_ENV",
    "AccountConfig",
    "AuthMethod",
    "Config",
    "ConfigError",
    "HttpAuthSettings",
    "HttpSettings",
    "IndexSettings",
    "Security",
    "ServerSettings",
    "StateSettings",
    "env_accounts",
    "helper_environment",
    "is_loopback_host",
    "load_config",
    "parse_command",
    "resolve_config_path",
    "resolve_secret",
]

"""The secrets a setting may keep in the OS keychain (:mod:`.keychain`), read from their source when they
are needed: an account's password, the index database's password, the introspection client's secret.
Each raises the settings' :class:`~mail_imap_mcp.config.ConfigError` naming the setting, never the value.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping

from mail_imap_mcp.config import AccountConfig, ConfigError, resolve_secret
from mail_imap_mcp.config.index_settings import IndexSettings
from mail_imap_mcp.config.secret_storage import read_secret_file
from mail_imap_mcp.config.team import HttpAuthSettings

from .keychain import read_password


def account_password(account: AccountConfig, env: Mapping[str, str] | None = None) -> str:
    """The account's password from its source."""
    if account.password is not None:
        return account.password.get_secret_value()
    if account.password_keyring is not None:
        return read_password(account.password_keyring, account.username, account.setting("password_keyring"))
    if account.password_file is not None:
        return read_secret_file(account.password_file, account.setting("password_file"))
    return resolve_secret(
        env_var=account.password_env,
        command=account.password_command,
        env=env,
        command_setting="password_command",
        what="password",
        command_env=account.helper_env,
    )


def index_password(index: IndexSettings, env: Mapping[str, str] | None = None) -> str | None:
    """The index database's password (None: none is configured)."""
    if index.index_password_keyring is not None:
        user = urllib.parse.urlsplit(index.index_url or "").username or ""
        return read_password(index.index_password_keyring, user, "index_password_keyring in [index]")
    if index.index_password_env is None and index.index_password_file is None:
        return None
    try:
        return resolve_secret(
            env_var=index.index_password_env,
            file=index.index_password_file,
            env=env,
            file_setting="index_password_file in [index]",
            what="database password",
        )
    except ConfigError as exc:
        raise ConfigError(f"[index] {exc}") from None


def introspection_secret(auth: HttpAuthSettings, env: Mapping[str, str] | None = None) -> str:
    """The introspection client's secret of ``[http.auth]``."""
    if auth.client_secret_keyring is not None and auth.client_id is not None:
        return read_password(
            auth.client_secret_keyring, auth.client_id, "client_secret_keyring in [http.auth]"
        )
    if auth.client_secret_env is None and auth.client_secret_file is None:
        raise ConfigError(
            "[http.auth] introspection needs client_secret_env, client_secret_file or client_secret_keyring"
        )
    return resolve_secret(
        env_var=auth.client_secret_env,
        file=auth.client_secret_file,
        env=env,
        file_setting="client_secret_file in [http.auth]",
        what="client secret",
    )

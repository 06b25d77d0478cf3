"""Account settings and config files for a throwaway IMAP server (Dovecot, Cyrus, Courier), shared by tests,
demo, bench and soak."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import annotated_types

from mail_imap_mcp.config.settings import ServerSettings
from tests.support.servers.imapserver import ImapServer

#: Environment variable that carries the test servers' password in tests (never written to a file).
PASSWORD_ENV = "MIM_TEST_IMAP_PASSWORD"


def _most_the_setting_takes(name: str) -> float:
    field = ServerSettings.model_fields[name]
    (most,) = (bound.le for bound in field.metadata if isinstance(bound, annotated_types.Le))
    assert isinstance(most, int | float), most
    return float(most)


#: ``background_after_s`` of a test's server settings unless it gives its own: the most the setting takes.
#: A bulk write's inline answer is then never a race against the wall clock of a loaded machine (a dry run
#: on Cyrus once outlasted the product's 1.5 s in a full run and was answered as a background operation);
#: the tests of the background path say ``background_after_s=0``.
INLINE_FOR_TESTS_S = _most_the_setting_takes("background_after_s")


def server_settings(**given: Any) -> dict[str, Any]:
    """A test's ``[server]`` settings: ``given``, bulk writes answering inline unless it says otherwise."""
    return {"background_after_s": INLINE_FOR_TESTS_S, **given}


def server_toml(**given: Any) -> str:
    """:func:`server_settings` as a config file's ``[server]`` section (for a ``serve`` child)."""
    return "[server]\n" + "".join(
        f"{key} = {json.dumps(value)}\n" for key, value in server_settings(**given).items()
    )


def account_settings(server: ImapServer, user: str, **overrides: Any) -> dict[str, Any]:
    """Raw account settings for ``user`` of ``server`` over verified TLS; a ``None`` override drops the key."""
    settings: dict[str, Any] = {
        "host": server.host,
        "port": server.tls_port,
        "security": "tls",
        "username": user,
        "password_env": PASSWORD_ENV,
        "ca_file": str(server.ca_file),
        "connect_timeout_s": 5,
        "command_timeout_s": 10,
    }
    settings.update(overrides)
    return {k: v for k, v in settings.items() if v is not None}


def config_toml(accounts: dict[str, dict[str, Any]]) -> str:
    """A config file with one ``[accounts.<id>]`` table per account (JSON scalars are valid TOML; a dict,
    such as ``sieve``, is an inline table of them)."""
    return "\n".join(
        f"[accounts.{account_id}]\n" + "".join(f"{key} = {_toml_value(v)}\n" for key, v in settings.items())
        for account_id, settings in accounts.items()
    )


def _toml_value(value: Any) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{key} = {_toml_value(v)}" for key, v in value.items()) + " }"
    return json.dumps(str(value) if isinstance(value, Path) else value)


def env_account(
    server: ImapServer, user: str, account_id: str = "DEFAULT", **variables: str
) -> dict[str, str]:
    """``MAIL_IMAP_<ID>_*`` variables of an environment-only account for ``user`` over verified TLS.

    ``variables`` add or override (an empty value drops the variable).
    """
    prefix = f"MAIL_IMAP_{account_id}_"
    env = {
        f"{prefix}HOST": server.host,
        f"{prefix}PORT": str(server.tls_port),
        f"{prefix}USER": user,
        f"{prefix}PASS": server.password,
        f"{prefix}SECURE": "true",
        f"{prefix}CA_FILE": str(server.ca_file),
        **variables,
    }
    return {name: value for name, value in env.items() if value}

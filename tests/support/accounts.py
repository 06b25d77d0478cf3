"""Account settings and config files for a throwaway Dovecot, shared by tests, demo, bench and soak."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.dovecot import Dovecot

#: Environment variable that carries the Dovecot password in tests (never written to a file).
PASSWORD_ENV = "MIM_TEST_IMAP_PASSWORD"


def account_settings(dovecot: Dovecot, user: str, **overrides: Any) -> dict[str, Any]:
    """Raw account settings for ``user`` over verified TLS; a ``None`` override drops the key."""
    settings: dict[str, Any] = {
        "host": dovecot.host,
        "port": dovecot.tls_port,
        "security": "tls",
        "username": user,
        "password_env": PASSWORD_ENV,
        "ca_file": str(dovecot.ca_file),
        "connect_timeout_s": 5,
        "command_timeout_s": 10,
    }
    settings.update(overrides)
    return {k: v for k, v in settings.items() if v is not None}


def config_toml(accounts: dict[str, dict[str, Any]]) -> str:
    """A config file with one ``[accounts.<id>]`` table per account (JSON scalars are valid TOML)."""
    return "\n".join(
        f"[accounts.{account_id}]\n"
        + "".join(
            f"{key} = {json.dumps(str(v) if isinstance(v, Path) else v)}\n" for key, v in settings.items()
        )
        for account_id, settings in accounts.items()
    )

"""The built-in sign-in's settings of an environment account (``MAIL_IMAP_<ID>_OAUTH2_*``), as the other
account settings have theirs: what the MCP Bundle's form, or any client that configures the server by
environment alone, sets. The client secret is referenced by the variable's name (``oauth2_client_secret_env``),
never copied, as the password is (``_PASS``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: Setting -> the suffix of its variable (``MAIL_IMAP_<ID>_<suffix>``).
SIGN_IN_ENV_SUFFIXES = {
    "oauth2_provider": "OAUTH2_PROVIDER",
    "oauth2_client_id": "OAUTH2_CLIENT_ID",
    "oauth2_client_secret_env": "OAUTH2_CLIENT_SECRET",
    "oauth2_client_secret_file": "OAUTH2_CLIENT_SECRET_FILE",
    "oauth2_tenant": "OAUTH2_TENANT",
    "oauth2_issuer": "OAUTH2_ISSUER",
    "oauth2_scopes": "OAUTH2_SCOPES",
    "oauth2_authorization_url": "OAUTH2_AUTHORIZATION_URL",
    "oauth2_token_url": "OAUTH2_TOKEN_URL",
    "oauth2_device_url": "OAUTH2_DEVICE_URL",
    "oauth2_revocation_url": "OAUTH2_REVOCATION_URL",
    "oauth2_redirect_port": "OAUTH2_REDIRECT_PORT",
}


def sign_in_from_env(env: Mapping[str, str], prefix: str) -> dict[str, Any]:
    """The sign-in settings of the account whose variables start with ``prefix`` (``MAIL_IMAP_WORK_``);
    with ``_OAUTH2_PROVIDER`` set, ``auth`` defaults to ``xoauth2`` (what Microsoft and Google speak)."""
    raw: dict[str, Any] = {}
    for key, suffix in SIGN_IN_ENV_SUFFIXES.items():
        name = prefix + suffix
        if name not in env:
            continue
        value = env[name].strip()
        if key == "oauth2_client_secret_env":
            raw[key] = name
        elif key == "oauth2_scopes":
            raw[key] = [scope for scope in re.split(r"[\s,]+", value) if scope]
        elif key == "oauth2_provider":
            raw[key] = value.lower()
        else:
            raw[key] = value
    if "oauth2_provider" in raw:
        raw["auth"] = "xoauth2"
    return raw

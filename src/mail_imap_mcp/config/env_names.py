"""The environment's names: the ``MAIL_IMAP_*`` variables that configure the server (the file's path, the
HTTP token, switches) and those that declare an environment account (``MAIL_IMAP_<ID>_<suffix>``), each
account setting with its suffix."""

from __future__ import annotations

import re

from .local_files import LOCAL_FILES_ENV
from .sign_in_env import SIGN_IN_ENV_SUFFIXES
from .switches import INDEX, INDEX_MEANING, RULES_ENABLED, SEND_ENABLED, UNSUBSCRIBE_ENABLED, WRITE_ENABLED

CONFIG_ENV = "MAIL_IMAP_MCP_CONFIG"
#: Bearer token of the HTTP transport when ``[http]`` names no token source.
HTTP_TOKEN_ENV = "MAIL_IMAP_MCP_HTTP_TOKEN"
#: ``[server] unsubscribe_enabled`` from the environment (the bundle's form sets it).
UNSUBSCRIBE_ENABLED_ENV = UNSUBSCRIBE_ENABLED.env
#: ``[server] index`` from the environment (the bundle's form sets it).
INDEX_ENV = str(INDEX.server_env)
#: ``[server] index_meaning`` from the environment.
INDEX_MEANING_ENV = str(INDEX_MEANING.server_env)

#: The variables that declare an environment account: its host, or an address whose provider is known.
ENV_ACCOUNT_PATTERN = re.compile(r"^MAIL_IMAP_([A-Z0-9_]+?)_(HOST|USER|ADDRESSES)$")
ENV_PREFIX = "MAIL_IMAP_"
#: Variables of the ``MAIL_IMAP_`` family that are not account settings.
GLOBAL_ENV = frozenset(
    {
        CONFIG_ENV,
        "MAIL_IMAP_MCP_LOG_LEVEL",
        str(WRITE_ENABLED.server_env),
        UNSUBSCRIBE_ENABLED_ENV,
        INDEX_ENV,
        INDEX_MEANING_ENV,
        HTTP_TOKEN_ENV,
        *LOCAL_FILES_ENV,
    }
)
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
    WRITE_ENABLED.key: WRITE_ENABLED.env,
    "auth": "AUTH",
    "oauth2_token_command": "OAUTH2_TOKEN_COMMAND",
    "helper_env": "HELPER_ENV",
    "smtp_host": "SMTP_HOST",
    "smtp_port": "SMTP_PORT",
    "smtp_security": "SMTP_SECURITY",
    SEND_ENABLED.key: SEND_ENABLED.env,
    INDEX.key: INDEX.env,
    INDEX_MEANING.key: INDEX_MEANING.env,
    RULES_ENABLED.key: RULES_ENABLED.env,
    "sieve_host": "SIEVE_HOST",
    "sieve_port": "SIEVE_PORT",
    "sieve_security": "SIEVE_SECURITY",
    "allowed_recipients": "ALLOWED_RECIPIENTS",
    **SIGN_IN_ENV_SUFFIXES,
}
SECURE_ENV_SUFFIX = "SECURE"
KNOWN_ENV_SUFFIXES = (*ENV_SUFFIXES.values(), SECURE_ENV_SUFFIX)

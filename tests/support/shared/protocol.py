"""What tests/pure/test_protocol.py shares with other test modules."""

from __future__ import annotations

from mail_imap_mcp.config import Config

_ACCOUNTS = {"default": {"host": "127.0.0.1", "username": "u", "password_env": "UNUSED_PASSWORD"}}


OFFLINE = Config.model_validate({"accounts": _ACCOUNTS})


OFFLINE_WRITES = Config.model_validate({"accounts": _ACCOUNTS, "server": {"write_enabled": True}})

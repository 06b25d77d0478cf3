"""The configuration's one error type (its own module: the keychain and the settings both raise it)."""

from __future__ import annotations


class ConfigError(Exception):
    """The configuration is invalid; the message names the key and the reason."""

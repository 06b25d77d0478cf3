"""What is wrong in a configuration: the error that refuses it, and the fault that leaves one account of
the environment unusable (their own module: the keychain, the settings and the loading all use them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import ValidationError


class ConfigError(Exception):
    """The configuration is invalid; the message names the key and the reason."""


@dataclass(frozen=True)
class SettingFault:
    """One setting of an environment account that cannot work: ``key`` (the account's key: ``host``,
    ``port``, ``security``, ``password_env``, ``addresses``, ``ca_file``), ``setting`` (its variable),
    ``label`` (the bundle form's field that sets it, if one does), ``reason`` (never the password),
    ``given`` (the value given, for the listing; None when missing or secret)."""

    key: str
    setting: str
    label: str | None
    reason: str
    given: str | None = None

    @property
    def named(self) -> str:
        """The field as its user knows it: ``"IMAP port (optional)" (MAIL_IMAP_DEFAULT_PORT)``."""
        return self.setting if self.label is None else f'"{self.label}" ({self.setting})'


def format_validation_error(
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

"""What is wrong in a configuration: the error that refuses it, and the fault that leaves one account of
the environment unusable (their own module: the keychain, the settings and the loading all use them)."""

from __future__ import annotations

from dataclasses import dataclass


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

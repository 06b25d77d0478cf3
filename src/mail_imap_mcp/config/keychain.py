"""Passwords in the operating system's keychain, through the keyring library (``password_keyring``).

keyring picks the keychain itself (macOS Keychain, Windows Credential Locker, the Secret Service of GNOME
Keyring or KWallet; ``PYTHON_KEYRING_BACKEND`` or its config file chooses another). Where it finds none
(a headless Linux machine without a Secret Service), every failure is a :class:`ConfigError` that names
the backend keyring chose and what to do instead, never the password.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from .errors import ConfigError


def install_hint() -> str:
    """How to add the keyring extra to this installation, with this virtualenv's own pip: the locked
    way (requirements-keyring.lock beside the source, hash-checked) or by the extra's name."""
    found = Path(sys.executable).parent / ("pip.exe" if sys.platform == "win32" else "pip")
    pip = str(found) if found.is_file() else f"{sys.executable} -m pip"
    return (
        f"{pip} install --require-hashes -r mail-imap-mcp/requirements-keyring.lock (the file is in the "
        f"source, beside requirements-runtime.lock), or {pip} install 'mail-imap-mcp[keyring]'"
    )


NO_KEYCHAIN_HINT = (
    "no keychain is usable here; on a desktop, unlock or start the keychain, on a machine without one use "
    "password_command or password_env instead (or choose a keyring backend with PYTHON_KEYRING_BACKEND)"
)


class KeychainUnavailable(ConfigError):
    """No usable keychain: keyring's backend failed or keyring is missing; the message names the backend."""


def _keyring() -> Any:
    try:
        import keyring
    except ImportError:
        raise KeychainUnavailable(f"the keyring library is not installed: {install_hint()}") from None
    return keyring


def backend_name() -> str:
    """The keychain keyring uses here, as a dotted class name (``keyring.backends.macOS.Keyring``)."""
    try:
        backend = _keyring().get_keyring()
    except Exception as exc:  # e.g. PYTHON_KEYRING_BACKEND names no class keyring can load
        return f"none loaded ({type(exc).__name__}: {exc})"
    kind = type(backend)
    return f"{kind.__module__}.{kind.__qualname__}"


def _unavailable(setting: str, exc: Exception) -> KeychainUnavailable:
    # keyring's messages say which backend failed and why; none of them holds a secret.
    reason = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
    return KeychainUnavailable(
        f"{setting}: the keychain failed (keyring backend {backend_name()}: {reason}); {NO_KEYCHAIN_HINT}"
    )


def read_password(service: str, username: str, setting: str) -> str:
    """The password stored under ``service`` for ``username``; ConfigError naming ``setting`` otherwise."""
    keyring = _keyring()
    try:
        value = keyring.get_password(service, username)
    except Exception as exc:  # keyring's backends raise their own types (D-Bus, Security framework...)
        raise _unavailable(setting, exc) from None
    if not value:
        raise ConfigError(
            f"{setting}: the keychain ({backend_name()}) holds no password for {username!r} under the "
            f"service {service!r}; store it with `mail-imap-mcp setup` or `keyring set {service} {username}`"
        )
    return str(value)


def store_password(service: str, username: str, password: str, setting: str = "password_keyring") -> str:
    """Store ``password`` under ``service`` for ``username``; returns the backend's name."""
    keyring = _keyring()
    try:
        keyring.set_password(service, username, password)
    except Exception as exc:  # as in read_password: each backend has its own failures
        raise _unavailable(setting, exc) from None
    return backend_name()

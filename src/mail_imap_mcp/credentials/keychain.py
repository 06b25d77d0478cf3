"""Passwords in the operating system's keychain, through the keyring library (``password_keyring``).

keyring picks the keychain itself (macOS Keychain, Windows Credential Locker, the Secret Service of GNOME
Keyring or KWallet; ``PYTHON_KEYRING_BACKEND`` or its config file chooses another). A backend that is no
keychain (:data:`~mail_imap_mcp.config.secret_storage.REFUSED_KEYCHAINS`: keyring's fail and null, every keyrings.alt file) is
never used, not even behind keyring's chainer; where only such backends are found (a headless Linux
machine without a Secret Service), every failure is a :class:`ConfigError` that names the backends and
what to do instead, never the password.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mail_imap_mcp.config.errors import ConfigError
from mail_imap_mcp.config.installation import locked_install
from mail_imap_mcp.config.secret_storage import REFUSED_KEYCHAINS, is_refused_keychain


def install_hint() -> str:
    """How to repair an installation that lost keyring (a runtime dependency), with this virtualenv's own
    pip: the locked way (requirements-runtime.lock beside the source, hash-checked)."""
    return f"it is a dependency of mail-imap-mcp: reinstall them with {locked_install('requirements-runtime.lock')}"


NO_KEYCHAIN_HINT = (
    "no keychain is usable here; on a desktop, unlock or start the keychain, on a machine without one use "
    "password_file (a file only you can read), password_command or password_env instead (or choose a "
    "keyring backend with PYTHON_KEYRING_BACKEND)"
)


class KeychainUnavailable(ConfigError):
    """No usable keychain: keyring's backend failed or keyring is missing; the message names the backend.
    ``reason`` is why alone, without the advice, for a caller that acts on it itself (setup)."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason or message


def _keyring() -> Any:
    try:
        import keyring
    except ImportError:
        raise KeychainUnavailable(
            f"the keyring library is not installed: {install_hint()}", "the keyring library is not installed"
        ) from None
    return keyring


def _dotted(backend: object) -> str:
    """The backend's class as keyring names it (this package's own wrappers as the class they wrap)."""
    kind = next(k for k in type(backend).__mro__ if not k.__module__.startswith("mail_imap_mcp."))
    return f"{kind.__module__}.{kind.__qualname__}"


def _greeting(backend: Any) -> Any:
    """``backend``, made safe for GNOME Keyring where it is keyring's Secret Service backend."""
    if _dotted(backend) != "keyring.backends.SecretService.Keyring":
        return backend
    from mail_imap_mcp.credentials.secret_service import greeting  # secretstorage: Linux only

    return greeting(backend)


def _candidates() -> list[Any]:
    """The backends keyring would use, best first: its chainer's, or the one it chose."""
    chosen = _keyring().get_keyring()
    chained = getattr(chosen, "backends", None)
    return [chosen] if chained is None else list(chained)


def backend_name() -> str:
    """The keychain used here, as a dotted class name (``keyring.backends.macOS.Keyring``), whether it is
    usable or refused."""
    try:
        candidates = _candidates()
    except Exception as exc:  # e.g. PYTHON_KEYRING_BACKEND names no class keyring can load
        return f"none loaded ({type(exc).__name__}: {exc})"
    usable = [backend for backend in candidates if not is_refused_keychain(_dotted(backend))]
    return _dotted((usable or candidates)[0]) if candidates else "none found"


def _backend(setting: str) -> Any:
    """The best backend that is a keychain; :class:`KeychainUnavailable` naming the refused ones."""
    try:
        candidates = _candidates()
    except KeychainUnavailable:  # the keyring library is missing: the message says how to add it
        raise
    except Exception as exc:  # as in backend_name
        raise _unavailable(setting, exc) from None
    for backend in candidates:
        if not is_refused_keychain(_dotted(backend)):
            return _greeting(backend)
    found = ", ".join(_dotted(backend) for backend in candidates) or "no backend"
    raise KeychainUnavailable(
        f"{setting}: no keychain here: keyring offers only {found}, and {REFUSED_KEYCHAINS} (PlaintextKeyring "
        f"included) are refused, as they keep no secret safe; {NO_KEYCHAIN_HINT}",
        f"no keychain here: keyring offers only {found}, which keeps no secret safe",
    )


def unusable_reason() -> str | None:
    """Why no keychain is usable here (:attr:`KeychainUnavailable.reason`: the backends keyring offers,
    or the library missing), None where one is; nothing is read from it."""
    try:
        _backend("the keychain")
    except KeychainUnavailable as exc:
        return exc.reason
    return None


def _unavailable(setting: str, exc: Exception) -> KeychainUnavailable:
    # keyring's messages say which backend failed and why; none of them holds a secret.
    reason = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
    failed = f"the keychain failed (keyring backend {backend_name()}: {reason})"
    return KeychainUnavailable(f"{setting}: {failed}; {NO_KEYCHAIN_HINT}", failed)


def _collection_glitch(exc: Exception) -> bool:
    """keyring found no collection to use (its InitError), or the collection left in the middle of a call
    (secretstorage's ItemNotFoundException): GNOME Keyring's ``default`` alias fails to resolve for an
    instant while another program writes, and keyring then asks for a new collection, whose prompt fails
    headless (or which a desktop user may dismiss)."""
    kind = type(exc)
    vanished = kind.__module__.startswith("secretstorage") and kind.__name__ == "ItemNotFoundException"
    return vanished or isinstance(exc, _keyring().errors.InitError)


def _call(setting: str, operation: Callable[[], Any]) -> Any:
    """``operation`` on the keychain, once more after a :func:`_collection_glitch`; a failure is a
    :class:`KeychainUnavailable` naming ``setting``."""
    try:
        return operation()
    except Exception as exc:  # keyring's backends raise their own types (D-Bus, Security framework...)
        if not _collection_glitch(exc):
            raise _unavailable(setting, exc) from None
    try:
        return operation()
    except Exception as exc:  # as above, and a second glitch is a failure
        raise _unavailable(setting, exc) from None


def read_password(service: str, username: str, setting: str) -> str:
    """The password stored under ``service`` for ``username``; ConfigError naming ``setting`` otherwise."""
    backend = _backend(setting)
    value = _call(setting, lambda: backend.get_password(service, username))
    if not value:
        raise ConfigError(
            f"{setting}: the keychain ({_dotted(backend)}) holds no password for {username!r} under the "
            f"service {service!r}; store it with `mail-imap-mcp setup` or `keyring set {service} {username}`"
        )
    return str(value)


def store_password(service: str, username: str, password: str, setting: str = "password_keyring") -> str:
    """Store ``password`` under ``service`` for ``username``; returns the backend's name."""
    backend = _backend(setting)
    _call(setting, lambda: backend.set_password(service, username, password))
    return _dotted(backend)


def find_secret(service: str, username: str, setting: str) -> str | None:
    """The secret stored under ``service`` for ``username``, None when there is none."""
    backend = _backend(setting)
    value = _call(setting, lambda: backend.get_password(service, username))
    return str(value) if value else None


def delete_secret(service: str, username: str, setting: str) -> None:
    """Forget the secret stored under ``service`` for ``username`` (nothing if there is none)."""
    backend = _backend(setting)
    if find_secret(service, username, setting) is None:
        return
    _call(setting, lambda: backend.delete_password(service, username))

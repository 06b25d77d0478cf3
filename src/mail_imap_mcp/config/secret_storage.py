"""Where a secret may be kept: the one rule for every secret the project keeps (account passwords, the
HTTP bearer token, the introspection client's secret; OAuth refresh tokens follow it).

A secret lives in the operating system's keychain (:mod:`mail_imap_mcp.credentials.keychain`), in a file that is its user's alone,
in an environment variable or in a command's output. Two places are refused, each with the setting and
the fix in the message: a file another user can read, write or owns (POSIX: mode 0600 or stricter and
owned by the current user; Windows: an access list granting the current user alone), and a "keychain"
that keeps nothing safe (:data:`REFUSED_KEYCHAINS`: keyring's ``fail`` and ``null`` backends, and every
keyrings.alt backend, which writes secrets to a file in plain text or base64).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from .errors import ConfigError

#: keyring backends that are no keychain: nothing stored (fail, null) or a file in the user's data
#: directory holding the secret in plain text or base64 (keyrings.alt, PlaintextKeyring included).
REFUSED_KEYCHAINS = (
    "keyring.backends.fail.Keyring, keyring.backends.null.Keyring and every keyrings.alt backend"
)
_REFUSED_NAMES = frozenset({"keyring.backends.fail.Keyring", "keyring.backends.null.Keyring"})
_REFUSED_PACKAGE = "keyrings.alt."


def is_refused_keychain(backend: str) -> bool:
    """Whether the keyring backend of dotted class name ``backend`` is refused as a keychain."""
    return backend in _REFUSED_NAMES or backend.startswith(_REFUSED_PACKAGE)


class UnsafeSecretFile(ConfigError):
    """A secret file others could read or replace; the message names the setting and the fix."""


def windows_acl_problem(owner: str, user: str, entries: Sequence[tuple[str, bool]] | None) -> str | None:
    """Why a file of ``owner`` with these access entries, each (SID, grants), is not the user's (SID
    ``user``) alone; None when it is. No access list at all (None) opens the file to everyone."""
    if owner != user:
        return f"its owner is {owner}, not you ({user})"
    if entries is None:
        return "it has no access list, so everyone may read it"
    others = sorted({sid for sid, grants in entries if grants and sid != user})
    return f"its access list also grants {', '.join(others)}" if others else None


def _posix_problem(status: os.stat_result, path: Path) -> str | None:
    if status.st_uid != os.getuid():
        return (
            f"it belongs to user id {status.st_uid}, not to you (user id {os.getuid()}); make a copy of "
            f"your own and `chmod 600` it"
        )
    if status.st_mode & 0o077:
        return f"its mode is {stat.filemode(status.st_mode)}, open to other users: chmod 600 {path}"
    return None


def _windows_problem(path: Path) -> str | None:
    from .windows_acl import read_acl

    try:
        owner, user, entries = read_acl(path)
    except (OSError, AttributeError, ImportError) as exc:  # no Windows API here, or it refused
        return f"its access list cannot be read ({type(exc).__name__}: {exc})"
    problem = windows_acl_problem(owner, user, entries)
    if problem is None:
        return None
    return f'{problem}: icacls "{path}" /inheritance:r /grant:r "%USERNAME%:F", then /remove any other name'


def read_secret_file(path: Path, setting: str) -> str:
    """The secret in ``path`` (trailing newlines trimmed), once the file is known to be its user's alone;
    :class:`ConfigError` naming ``setting`` otherwise, never echoing the contents."""
    where = path.expanduser()
    try:
        descriptor = os.open(where, os.O_RDONLY)
    except OSError as exc:
        raise ConfigError(f"{setting}: cannot read {path} ({exc.strerror})") from None
    with os.fdopen(descriptor, "rb") as file:
        status = os.fstat(file.fileno())  # the file read, not whatever the path names later
        if not stat.S_ISREG(status.st_mode):
            raise ConfigError(f"{setting}: {path} is not a regular file")
        # POSIX is found by feature: where os.getuid is missing (Windows), the access list decides.
        problem = _posix_problem(status, where) if hasattr(os, "getuid") else _windows_problem(where)
        if problem is not None:
            raise UnsafeSecretFile(f"{setting}: {path} must be yours alone, but {problem}")
        data = file.read()
    try:
        value = data.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        raise ConfigError(f"{setting}: {path} is not UTF-8 text") from None
    if not value:
        raise ConfigError(f"{setting}: {path} is empty")
    return value


def write_secret_file(path: Path, secret: str, setting: str) -> None:
    """Write ``secret`` to a new ``path`` only its user can read (0600 in a 0700 directory), then read it
    back under :func:`read_secret_file`'s rule: a platform where the file would not be the user's alone
    refuses with :class:`UnsafeSecretFile` and leaves no file."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(secret + "\n")
    try:
        read_secret_file(path, setting)
    except ConfigError:
        path.unlink()
        raise

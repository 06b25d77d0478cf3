"""The opt-in file of a signed-in account's refresh token (``oauth2_token_file``), for a machine without a
usable keychain: the secret-storage rule's opt-in file (:mod:`mail_imap_mcp.config.secret_storage`), as ``password_file`` is
for a password.

The file is the user's alone (POSIX: mode 0600, owned by the user; Windows: an access list of the user
alone); one readable by others is refused, naming the setting, before the token in it is used. A new
token (at sign-in, or rotated by the provider) is written to a new file beside it, checked by the same
rule, then renamed over the old one: a crash at any point leaves the old token or the new one whole
(a crashed store's temporary file is removed by the next store; every store runs under the account's
lock).
"""

from __future__ import annotations

import os
from pathlib import Path

from mail_imap_mcp.config.secret_storage import read_secret_file

#: The account setting naming the file.
SETTING = "oauth2_token_file"


class FileRefreshTokens:
    """One account's refresh token in a file of the user's alone; ``setting`` names it in messages."""

    def __init__(self, path: Path, setting: str) -> None:
        self.path = path.expanduser()
        self._setting = setting

    def load(self) -> str | None:
        if not self.path.exists():
            return None
        return read_secret_file(self.path, self._setting)

    def save(self, refresh_token: str) -> None:
        """Keep ``refresh_token`` in place of the one before, which stays until the new file is whole."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        for stale in self.path.parent.glob(f".{self.path.name}.*.tmp"):  # a crashed store's (under the lock)
            stale.unlink(missing_ok=True)
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                file.write(refresh_token + "\n")
                file.flush()
                os.fsync(file.fileno())
            read_secret_file(temporary, self._setting)  # Windows: the access list must be the user's alone
            os.replace(temporary, self.path)
        finally:
            temporary.unlink(missing_ok=True)

    def forget(self) -> None:
        self.path.unlink(missing_ok=True)

    def stored_at(self) -> float | None:
        """When the refresh token was last stored (the file's modification time), as a Unix time."""
        try:
            return self.path.stat().st_mtime
        except FileNotFoundError:
            return None

    def where(self) -> str:
        return f"in the file {self.path} ({SETTING})"

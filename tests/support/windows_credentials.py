"""The Windows Credential Manager's size limit on the tests' real keychain: a keyring backend that is the
Secret Service (:mod:`tests.support.servers.secret_service`) but refuses, as ``CredWrite`` does, a credential
whose blob is over 2,560 bytes (``CRED_MAX_CREDENTIAL_BLOB_SIZE``; keyring's Windows backend writes the
password as UTF-16, so 1,280 characters). Chosen with ``PYTHON_KEYRING_BACKEND`` = :data:`BACKEND` (the
tests' directory on ``PYTHONPATH``).

Under the Windows simulation (:mod:`tests.support.windows_like`) it stands in for Windows' own service,
which needs no POSIX: D-Bus's authentication needs the user id the simulation removes from ``os``, so
each call of this backend lends ``os.geteuid`` back from ``posix`` for its own duration.
"""

from __future__ import annotations

import os
import posix
from collections.abc import Iterator
from contextlib import contextmanager

from keyring.compat import properties

from mail_imap_mcp.credentials.secret_service import GreetingKeyring

BACKEND = "tests.support.windows_credentials.Keyring"
#: CRED_MAX_CREDENTIAL_BLOB_SIZE (wincred.h): 5 * 512 bytes.
BLOB_LIMIT = 2560


@contextmanager
def _user_id_for_dbus() -> Iterator[None]:
    hidden = not hasattr(os, "geteuid")
    if hidden:
        os.geteuid = posix.geteuid
    try:
        yield
    finally:
        if hidden:
            del os.geteuid


class Keyring(GreetingKeyring):
    """The Secret Service with the Credential Manager's limit of one credential's size."""

    @properties.classproperty
    def priority(cls) -> float:
        """Never chosen by keyring itself (a chainer takes only backends above 0): only when named."""
        return 0.0

    def get_password(self, service: str, username: str) -> str | None:
        with _user_id_for_dbus():
            found = super().get_password(service, username)
        return None if found is None else str(found)

    def set_password(self, service: str, username: str, password: str) -> None:
        if len(password.encode("utf-16-le")) > BLOB_LIMIT:
            # What pywin32-ctypes raises from CredWrite for an oversized blob (keyring passes it on).
            raise OSError(1783, "CredWrite: The stub received bad data.")
        with _user_id_for_dbus():
            super().set_password(service, username, password)

    def delete_password(self, service: str, username: str) -> None:
        with _user_id_for_dbus():
            super().delete_password(service, username)

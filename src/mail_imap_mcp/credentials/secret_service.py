"""keyring's Secret Service backend, made safe for GNOME Keyring.

GNOME Keyring (42, and 50 by its users' reports) registers a D-Bus caller only after it handled the
caller's first message; a first message that needs the caller (a collection's property, ``OpenSession``)
finds none and the daemon aborts (``gkd_secret_service_get_pkcs11_session: assertion 'client' failed``),
taking the desktop's keychain with it. keyring opens a new connection for every call, and its first
message is a collection's ``Label``: this server's concurrent keychain calls could crash it. Here every
connection first asks the service ``ReadAlias("default")``, which needs no registered caller (its answer
is not used); by its reply the caller is registered. Measured in
``tests/integration/sign_in/test_keychain_greeting.py``.
"""

from __future__ import annotations

from typing import Any

import secretstorage
from jeepney import DBusAddress, new_method_call
from jeepney.io.blocking import DBusConnection
from keyring.backends import SecretService
from keyring.errors import InitError, KeyringLocked

SERVICE = DBusAddress(
    "/org/freedesktop/secrets",
    bus_name="org.freedesktop.secrets",
    interface="org.freedesktop.Secret.Service",
)


def greet(connection: DBusConnection) -> None:
    """Introduce ``connection`` to the Secret Service before anything that needs it introduced."""
    connection.send_and_get_reply(new_method_call(SERVICE, "ReadAlias", "s", ("default",)))


class GreetingKeyring(SecretService.Keyring):
    """keyring's Secret Service backend whose every connection greets the service first."""

    def get_preferred_collection(self) -> Any:
        """As keyring's: the configured collection or the default one, unlocked (a prompt where locked)."""
        connection = secretstorage.dbus_init()
        try:
            greet(connection)
            if hasattr(self, "preferred_collection"):
                collection = secretstorage.Collection(connection, self.preferred_collection)
            else:
                collection = secretstorage.get_default_collection(connection)
        except secretstorage.exceptions.SecretStorageException as exc:
            connection.close()
            raise InitError(f"Failed to create the collection: {exc}.") from exc
        if collection.is_locked():
            collection.unlock()
            if collection.is_locked():  # the user dismissed the prompt
                raise KeyringLocked("Failed to unlock the collection!")
        return collection


def greeting(backend: Any) -> Any:
    """``backend``, greeting the service first where it is keyring's own Secret Service backend (a
    subclass is someone's own and kept as it is)."""
    if type(backend) is not SecretService.Keyring:
        return backend
    greeter = GreetingKeyring.__new__(GreetingKeyring)
    greeter.__dict__.update(backend.__dict__)
    return greeter

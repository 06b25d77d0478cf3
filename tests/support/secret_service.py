"""The tests' keychain: a real Secret Service, GNOME Keyring's daemon (Debian's ``gnome-keyring``) on a
D-Bus session bus of its own (``dbus-run-session``), its login keyring made and unlocked with a password
on standard input, its files in a temporary home. keyring finds it as a desktop user's: through
``DBUS_SESSION_BUS_ADDRESS`` (:meth:`SecretService.environment`), with no backend named.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from jeepney.bus_messages import message_bus
from jeepney.io.blocking import open_dbus_connection

from tests.support.patience import eventually, patient

SECRETS_BUS_NAME = "org.freedesktop.secrets"
SECRET_SERVICE_BACKEND = "keyring.backends.SecretService.Keyring"
_LOGIN_PASSWORD = "login keyring password of the tests"
# The shell prints its pid, which the daemon keeps (exec): stopping the daemon ends dbus-run-session,
# which then stops its bus.
_SESSION = 'printf "%s %s\\n" "$$" "$DBUS_SESSION_BUS_ADDRESS"; exec gnome-keyring-daemon --foreground --unlock --components=secrets'


@dataclass(frozen=True)
class SecretService:
    bus: str
    home: Path

    def environment(self) -> dict[str, str]:
        """What a process needs to find this keychain (and keep keyring's own files in the home)."""
        return {
            "DBUS_SESSION_BUS_ADDRESS": self.bus,
            "HOME": str(self.home),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
        }


def _offers_secrets(bus: str) -> bool:
    with open_dbus_connection(bus=bus) as connection:
        reply = connection.send_and_get_reply(message_bus.NameHasOwner(SECRETS_BUS_NAME), timeout=patient(5))
    return bool(reply.body[0])


@contextmanager
def running_secret_service(root: Path, within: float = 30.0) -> Iterator[SecretService]:
    """A Secret Service whose keyrings live under ``root``, stopped on leaving."""
    home, runtime = root / "home", root / "run"
    home.mkdir(parents=True, exist_ok=True)
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "XDG_RUNTIME_DIR": str(runtime),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
    }
    process = subprocess.Popen(
        ["dbus-run-session", "--", "sh", "-c", _SESSION],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(_LOGIN_PASSWORD)
    process.stdin.close()
    daemon, bus = process.stdout.readline().split()
    try:

        def offered() -> bool:
            if process.poll() is not None:
                raise RuntimeError(
                    f"gnome-keyring-daemon exited before it offered {SECRETS_BUS_NAME} on {bus}"
                )
            return _offers_secrets(bus)

        eventually(offered, within=within, what=f"gnome-keyring-daemon offering {SECRETS_BUS_NAME} on {bus}")
        yield SecretService(bus, home)
    finally:
        with suppress(ProcessLookupError):
            os.kill(int(daemon), signal.SIGTERM)
        process.wait(timeout=patient(30))
        process.stdout.close()

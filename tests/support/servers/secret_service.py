"""The tests' keychain: a real Secret Service, GNOME Keyring's daemon (Debian's ``gnome-keyring``) on a
D-Bus session bus of its own (``dbus-run-session``), its login keyring made and unlocked with a password
on standard input, its files in a temporary home. keyring finds it as a desktop user's: through
``DBUS_SESSION_BUS_ADDRESS`` (:meth:`SecretService.environment`), with no backend named. What the daemon
and its bus say goes to ``gnome-keyring.log`` beside the home (a failed prompt is logged there); a daemon
that ended during the test fails the test on leaving, with that log. Every client here, as the product's
(:mod:`mail_imap_mcp.credentials.secret_service`), greets the daemon before it reads a collection: GNOME
Keyring aborts when a new connection's first message needs its caller registered.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import secretstorage
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import open_dbus_connection
from secretstorage.exceptions import ItemNotFoundException

from mail_imap_mcp.credentials.secret_service import greet
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
    log: Path
    pid: int

    def environment(self) -> dict[str, str]:
        """What a process needs to find this keychain (and keep keyring's own files in the home)."""
        return {
            "DBUS_SESSION_BUS_ADDRESS": self.bus,
            "HOME": str(self.home),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
        }


def daemon_running(pid: int) -> bool:
    """Whether the daemon ``pid`` still runs (an ended one may wait a moment as a zombie)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):  # reaped before or while its stat was read
        return False
    return state not in ("Z", "X")


def _default_collection_unlocked(bus: str) -> bool:
    """The daemon offers its service, and its ``default`` alias resolves to an unlocked collection (the
    login keyring): else keyring would ask it to create one, which needs a prompt no test can answer."""
    with open_dbus_connection(bus=bus, auth_timeout=patient(5)) as connection:
        reply = connection.send_and_get_reply(message_bus.NameHasOwner(SECRETS_BUS_NAME), timeout=patient(5))
        if not reply.body[0]:
            return False
        try:
            greet(connection)
            return not secretstorage.Collection(connection).is_locked()
        except ItemNotFoundException:
            return False


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
    log = root / "gnome-keyring.log"
    with log.open("w") as errors:
        process = subprocess.Popen(
            ["dbus-run-session", "--", "sh", "-c", _SESSION],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            env=env,
            text=True,
        )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(_LOGIN_PASSWORD)
    process.stdin.close()
    daemon, bus = process.stdout.readline().split()
    try:

        def ready() -> bool:
            if process.poll() is not None:
                raise RuntimeError(
                    f"gnome-keyring-daemon exited before it was ready on {bus}; its log: {log.read_text()}"
                )
            return _default_collection_unlocked(bus)

        eventually(ready, within=within, what=f"gnome-keyring-daemon's unlocked default collection on {bus}")
        yield SecretService(bus, home, log, int(daemon))
        if not daemon_running(int(daemon)):
            raise RuntimeError(
                "gnome-keyring-daemon ended during the test: the test's "
                f"keychain was gone, a fault of GNOME Keyring rather than of the code under test; "
                f"its log: {log.read_text()[-2000:]}"
            )
    finally:
        with suppress(ProcessLookupError):
            os.kill(int(daemon), signal.SIGTERM)
        process.wait(timeout=patient(30))
        process.stdout.close()

"""GNOME Keyring survives many new connections at once when each greets it first
(:mod:`mail_imap_mcp.credentials.secret_service`).

The daemon aborts (``gkd_secret_service_get_pkcs11_session: assertion 'client' failed``, then GLib's
``Bail out! ... invoke_get_property_in_idle_cb``) when a new connection's first message reads a collection
before the daemon registered its caller: keyring's first message on each of its connections, and the
tests' own readiness probe, which failed issue 57's CI run. The race is the daemon's, so no test provokes
it at will: on this machine these rounds without the greeting aborted the daemon in 5 of 10 (the suite's
two workers), other loads in 2 of 10 to 14 of 20; with it, in none of 80 rounds.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from jeepney import DBusAddress, MessageType, Properties
from jeepney.io.blocking import open_dbus_connection

from mail_imap_mcp.credentials.secret_service import greet
from tests.support.patience import patient
from tests.support.servers.secret_service import running_secret_service

CLIENTS = 4
CONNECTIONS_EACH = 300
DEFAULT_COLLECTION = DBusAddress(
    "/org/freedesktop/secrets/aliases/default",
    bus_name="org.freedesktop.secrets",
    interface="org.freedesktop.Secret.Collection",
)


def _connect_greet_and_read_the_label(bus: str, answers: list[str], failures: list[str]) -> None:
    try:
        for _ in range(CONNECTIONS_EACH):
            _read_the_label(bus, answers)
    except Exception as failure:  # the assert quotes it: a thread's own exception is only a warning
        failures.append(repr(failure))


def _read_the_label(bus: str, answers: list[str]) -> None:
    with open_dbus_connection(bus=bus, auth_timeout=patient(5)) as connection:
        greet(connection)
        reply = connection.send_and_get_reply(
            Properties(DEFAULT_COLLECTION).get("Label"), timeout=patient(10)
        )
        # The daemon's other race: its "default" alias fails to resolve for an instant while it
        # reads the alias file for a new caller ("Object does not exist"; keyring's calls are asked
        # again then, credentials/keychain.py): an answer all the same.
        answers.append(reply.body[0][1] if reply.header.message_type is MessageType.method_return else "")


@pytest.mark.parametrize("round_", range(3))
def test_regression_connections_that_greet_first_never_abort_gnome_keyring(
    tmp_path: Path, round_: int
) -> None:
    """Issue 57: 1,200 new connections from four clients at once, each reading the default collection's
    label as keyring does after its greeting: every one answered, and the daemon lives (the harness fails
    the test on leaving when it ended)."""
    answers: list[str] = []
    failures: list[str] = []
    with running_secret_service(tmp_path) as service:
        clients = [
            threading.Thread(target=_connect_greet_and_read_the_label, args=(service.bus, answers, failures))
            for _ in range(CLIENTS)
        ]
        for client in clients:
            client.start()
        for client in clients:
            client.join()
    assert len(answers) == CLIENTS * CONNECTIONS_EACH, failures
    assert "Login" in answers, "no connection read the collection: the test provoked nothing"

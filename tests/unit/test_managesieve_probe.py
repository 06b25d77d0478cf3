"""managesieve/probe.py beside the integration tests (Courier, a refusing port, a silent one, Dovecot): a
name that does not resolve, and a port that accepts the connection and closes it at once, say nothing of
ManageSieve ("could not tell": not kept, the next call looks again); a ManageSieve greeting is one."""

from __future__ import annotations

import socket
import threading

from mail_imap_mcp.managesieve.probe import probe
from mail_imap_mcp.managesieve.session import SieveServer
from tests.support.patience import patient


def test_a_name_that_does_not_resolve_says_nothing_of_managesieve() -> None:
    assert probe(SieveServer("no-such-host.invalid", 4190, "starttls", None, patient(2), patient(2))) == (
        False,
        None,
    )


def test_a_port_that_closes_at_once_says_nothing_of_managesieve() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(patient(5))

        def close_one() -> None:
            accepted, _ = listener.accept()
            accepted.close()

        closer = threading.Thread(target=close_one)
        closer.start()
        port = listener.getsockname()[1]
        found = probe(SieveServer("127.0.0.1", port, "starttls", None, patient(5), patient(5)))
        closer.join(patient(5))
    assert found == (False, None)


def test_a_managesieve_greeting_is_managesieve() -> None:
    greeting = b'"IMPLEMENTATION" "Test"\r\n"SIEVE" "fileinto"\r\n"STARTTLS"\r\nOK "ready"\r\n'
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(patient(5))

        def greet() -> None:
            accepted, _ = listener.accept()
            with accepted:
                accepted.sendall(greeting)

        greeter = threading.Thread(target=greet)
        greeter.start()
        found = probe(
            SieveServer("127.0.0.1", listener.getsockname()[1], "starttls", None, patient(5), patient(5))
        )
        greeter.join(patient(5))
    assert found == (True, None)

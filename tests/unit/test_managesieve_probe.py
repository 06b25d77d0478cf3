"""managesieve/probe.py beside the integration tests (Courier, a refusing port, a silent one, Dovecot): a
name that does not resolve, and a port that accepts the connection and closes it at once, say nothing of
ManageSieve ("could not tell": not kept, the next call looks again); a ManageSieve greeting is one; a
port that accepts and never answers is no ManageSieve for a while only (a server slow to start)."""

from __future__ import annotations

import math
import socket
import threading

from mail_imap_mcp.mail.sieve_presence import Look
from mail_imap_mcp.managesieve.probe import UNANSWERED_KEPT_S, probe
from mail_imap_mcp.managesieve.session import SieveServer
from tests.support.patience import patient


def test_a_name_that_does_not_resolve_says_nothing_of_managesieve() -> None:
    assert probe(SieveServer("no-such-host.invalid", 4190, "starttls", None, patient(2), patient(2))) == Look(
        False, None
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
    assert found == Look(False, None)


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
    assert found == Look(True, None) and found.kept_s == math.inf


def test_a_port_that_never_answers_is_no_managesieve_for_a_while_only() -> None:
    with socket.create_server(("127.0.0.1", 0), backlog=8) as silent:  # never accepted: the kernel's backlog
        port = silent.getsockname()[1]
        found = probe(SieveServer("127.0.0.1", port, "starttls", None, 0.5, patient(5)))
    assert found == Look(
        True, f"no ManageSieve on this server (port {port} did not answer in 0.5 s)", UNANSWERED_KEPT_S
    )

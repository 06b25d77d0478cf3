"""The pure tier: tests that need no server, no socket and no child process, run in seconds.

Every test here runs with sockets and processes refused, so a test that starts to need one fails at
once, by name, instead of slowing the tier down: it belongs in ``tests/unit`` (the scripted fake IMAP
server, the sandbox) or ``tests/integration``.
"""

from __future__ import annotations

import socket
import subprocess
from typing import Any, NoReturn

import pytest


class ImpureTest(AssertionError):
    """A pure test reached for a socket or a child process."""


def _refuse(what: str) -> Any:
    def refused(*args: object, **kwargs: object) -> NoReturn:
        raise ImpureTest(f"the pure tier opens no {what}: move this test to tests/unit or tests/integration")

    return refused


@pytest.fixture(autouse=True)
def pure(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sockets (connect, bind, name lookups) and child processes are refused (an event loop's own
    socketpair is in-process and allowed)."""
    for name in ("connect", "connect_ex", "bind"):
        monkeypatch.setattr(socket.socket, name, _refuse("socket"))
    monkeypatch.setattr(socket, "getaddrinfo", _refuse("name lookup"))
    monkeypatch.setattr(subprocess.Popen, "__init__", _refuse("child process"))

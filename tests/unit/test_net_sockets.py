"""What net/sockets.py tells of an idle connection, on real sockets (a connected pair on loopback)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from mail_imap_mcp.net.sockets import closed_while_idle, readable

#: The client's own socket timeout, which the check restores: a value of the product under test, not a wait
#: of the test's (scaled by patience, the restored value differed from it on a loaded run).
CLIENT_TIMEOUT = 5.0


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    """Our end (as a client holds it, with a timeout) and the server's end of a TCP connection."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        ours = socket.create_connection(listener.getsockname())
        theirs, _ = listener.accept()
    ours.settimeout(CLIENT_TIMEOUT)
    with ours, theirs:
        yield ours, theirs


@pytest.fixture(autouse=True)
def without_msg_dontwait(monkeypatch: pytest.MonkeyPatch) -> None:
    # Windows has no MSG_DONTWAIT: the check must not need it (it used it, so an idle connection that
    # the server had written to raised AttributeError there).
    monkeypatch.delattr(socket, "MSG_DONTWAIT", raising=False)


def test_an_idle_connection_nothing_was_said_on_is_open(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, _ = pair
    assert not closed_while_idle(ours, CLIENT_TIMEOUT, goodbye=b"* BYE")
    assert ours.gettimeout() == CLIENT_TIMEOUT


def test_an_unsolicited_response_is_left_for_the_client_to_read(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, theirs = pair
    theirs.sendall(b"* 3 EXISTS\r\n")
    assert readable(ours, 5)  # arrived: the check looks only at what is there
    assert not closed_while_idle(ours, CLIENT_TIMEOUT, goodbye=b"* BYE")
    assert ours.recv(100) == b"* 3 EXISTS\r\n" and ours.gettimeout() == CLIENT_TIMEOUT


@pytest.mark.parametrize("said", [b"* BYE idle too long\r\n", b""])
def test_a_goodbye_or_a_closed_connection_is_closed(
    pair: tuple[socket.socket, socket.socket], said: bytes
) -> None:
    ours, theirs = pair
    theirs.sendall(said)
    theirs.close()
    assert readable(ours, 5)
    assert closed_while_idle(ours, CLIENT_TIMEOUT, goodbye=b"* BYE")

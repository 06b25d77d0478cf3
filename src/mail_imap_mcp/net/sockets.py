"""TCP sockets as a protocol client uses them: a connect bounded by the call's budget, and what an idle
or waiting connection can tell without reading a protocol's bytes (closed by the server, input waiting).

The only module besides :mod:`.tls` that touches ``socket``, ``ssl`` and ``select``; a protocol's client
(``imap/``, an SMTP one) gets a connected socket and asks these questions through it.
"""

from __future__ import annotations

import select
import socket
import ssl
import time
from collections.abc import Callable

#: A connected stream socket (plain TCP, or TLS over it).
Socket = socket.socket

#: Opens the TCP connection to ``(host, port)`` within ``timeout`` seconds. The default is a TCP connect
#: to each address of the host in turn; unit tests pass a scripted server's (tests/support/fake_imap.py).
OpenSocket = Callable[[str, int, float], socket.socket]

#: Errors that mean "this connection is dead" as the socket layer raises them (a protocol library adds
#: its own: imaplib's ``abort``).
CONNECTION_DEAD: tuple[type[BaseException], ...] = (ConnectionError, ssl.SSLEOFError, EOFError)


def is_timeout(exc: BaseException) -> bool:
    """Whether ``exc`` is a socket's timeout (a slow server, not a dead connection)."""
    return isinstance(exc, socket.timeout | TimeoutError)


def connect_tcp(host: str, port: int, timeout: Callable[[], float], attempt: Callable[[], None]) -> Socket:
    """``socket.create_connection``, except that each address tried gets only what ``timeout()`` says is
    left of the budget; ``attempt()`` is called before each try (each is a round trip). TCP_NODELAY is
    set: Nagle would hold back the second write of a command (clients send some in two)."""
    last_error: OSError = OSError(f"{host!r} resolved to no address")
    for family, kind, proto, _, address in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        sock = socket.socket(family, kind, proto)
        attempt()
        try:
            sock.settimeout(timeout())
            sock.connect(address)
        except OSError as exc:
            sock.close()
            last_error = exc
            continue
        no_delay(sock)
        return sock
    raise last_error


def no_delay(sock: Socket) -> None:
    """Send each write at once (TCP_NODELAY)."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def readable(sock: Socket, wait: float) -> bool:
    """Whether ``sock`` has something to read (data, an EOF or a reset) within ``wait`` seconds."""
    return bool(select.select([sock], [], [], max(wait, 0))[0])


def closed_while_idle(sock: Socket, restore_timeout: float, *, goodbye: bytes) -> bool:
    """Whether the idle connection on ``sock`` was closed or reset by the server (or a router on the
    way), at no round trip: with nothing asked, the socket is readable only for an EOF, a reset, the
    server's unsolicited goodbye (a line starting with ``goodbye``, IMAP's ``* BYE``) or a TLS record.
    Over TLS, data read here is lost to the client's reader: any counts as closed."""
    try:
        if not readable(sock, 0):
            return False
        # Non-blocking by the socket's mode, not by MSG_DONTWAIT, which Windows lacks.
        sock.setblocking(False)
        try:
            if isinstance(sock, ssl.SSLSocket):
                sock.recv(4096)
            else:
                data = sock.recv(4096, socket.MSG_PEEK)
                if data and not data.startswith(goodbye):
                    return False  # an unsolicited response: the client reads it with the next command
        finally:
            sock.settimeout(restore_timeout)
    except (ssl.SSLWantReadError, BlockingIOError, InterruptedError):
        return False  # a TLS record that carried no data (a session ticket), or nothing after all
    except (OSError, ValueError):
        pass  # reset, or the socket is already closed
    return True


def input_buffered(sock: Socket, peek: Callable[[], bytes], restore_timeout: float) -> bool:
    """Whether a read on ``sock`` would return at once: bytes in TLS's buffer, in the client's own read
    buffer (``peek()``, a non-blocking peek of it) or on the socket. An EOF or a reset counts (the read
    then fails), a TLS record without data (a session ticket) does not."""
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return True
    sock.setblocking(False)
    try:
        # One non-blocking read at most: the client's buffer, else what the socket has. Over TLS, b""
        # is the EOF (no data raises); over plain TCP it may also be "nothing yet": the socket says.
        if peek() or isinstance(sock, ssl.SSLSocket):
            return True
        sock.recv(1, socket.MSG_PEEK)  # data, or b"" at the EOF; raises when there is nothing
        return True
    except (BlockingIOError, ssl.SSLWantReadError, InterruptedError):
        return False
    except OSError:
        return True  # reset: the next read reports it
    finally:
        sock.settimeout(restore_timeout)


def wait_for_input(sock: Socket, timeout: float, peek: Callable[[], bytes], restore_timeout: float) -> bool:
    """Whether a read can return within ``timeout`` seconds (see :func:`input_buffered`)."""
    deadline = time.monotonic() + timeout
    while True:
        if input_buffered(sock, peek, restore_timeout):
            return True
        left = deadline - time.monotonic()
        if left <= 0 or not readable(sock, left):
            return False

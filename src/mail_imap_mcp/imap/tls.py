"""TLS facts about a socket the wire needs (:mod:`.wire`): whether a port answers in TLS (a connection
configured without TLS to a port that speaks it, such as 993, is told so instead of timing out), and
how many round trips a completed handshake took (the connection counts them)."""

from __future__ import annotations

import contextlib
import socket
import ssl
import time
from typing import Any

#: How long the check waits for the answer to its TLS ClientHello, on a connection of its own.
TLS_PROBE_S = 1.0


def answers_tls(address: tuple[Any, ...], timeout: float) -> bool:
    """Whether the server at ``address`` answers a TLS ClientHello with a TLS record (a handshake or an
    alert), on a connection of its own closed after the first bytes of the answer, all within ``timeout``."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    outgoing = ssl.MemoryBIO()
    client = context.wrap_bio(ssl.MemoryBIO(), outgoing)
    with contextlib.suppress(ssl.SSLWantReadError):
        client.do_handshake()  # writes the ClientHello, then waits for an answer that never comes here
    deadline = time.monotonic() + timeout
    first = b""
    try:
        with socket.create_connection(address[:2], timeout=timeout) as sock:
            sock.sendall(outgoing.read())
            while len(first) < 2:
                sock.settimeout(max(deadline - time.monotonic(), 0.001))
                chunk = sock.recv(2 - len(first))
                if not chunk:
                    break
                first += chunk
    except OSError:
        pass
    # A TLS record starts with its content type (22: handshake, 21: alert), then major version 3.
    return len(first) == 2 and first[0] in (21, 22) and first[1] == 3


def handshake_round_trips(sock: socket.socket) -> int:
    """Round trips of the TLS handshake just completed on ``sock``: one for TLS 1.3, two before."""
    version = sock.version() if isinstance(sock, ssl.SSLSocket) else None
    return 1 if version == "TLSv1.3" else 2

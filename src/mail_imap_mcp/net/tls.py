"""TLS for a protocol client: the account's context (the system's trust store, or its ``ca_file``), a
handshake bounded by the call's budget, and facts about a socket: whether a port answers in TLS (a
connection configured without TLS to a port that speaks it, such as 993, is told so instead of timing
out), how many round trips a completed handshake took (the connection counts them), and whether a failed
handshake met a peer that answered in plain text."""

from __future__ import annotations

import contextlib
import functools
import socket
import ssl
import time
from pathlib import Path
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


# What an SSL error says when the peer answered in plaintext (a protocol's greeting is not a TLS record).
_PLAINTEXT_PEER = (
    "WRONG_VERSION_NUMBER",
    "RECORD_LAYER_FAILURE",
    "PACKET_LENGTH_TOO_LONG",
    "UNKNOWN_PROTOCOL",
)

#: A client's TLS context (verifying the server's certificate and name).
TlsContext = ssl.SSLContext


def client_context(ca_file: Path | None) -> TlsContext:
    """A context that verifies the server against the system's trust store, or against ``ca_file``'s
    certificates as well.

    Loading the trust store takes 10-20 ms of CPU, which every new connection pool paid again: one
    context per CA file, as the file is on disk (a file changed since is loaded again), is shared by
    every connection of the process. A shared context is never changed after it is built.
    """
    if ca_file is None:
        return _built_context(None)
    path = ca_file.expanduser()
    try:
        facts = path.stat()
    except OSError:
        return _new_context(str(path))  # raises as loading the file does, naming it
    return _built_context((str(path.resolve()), facts.st_mtime_ns, facts.st_size))


@functools.lru_cache(maxsize=16)
def _built_context(ca_file: tuple[str, int, int] | None) -> TlsContext:
    return _new_context(ca_file[0] if ca_file is not None else None)


def _new_context(ca_file: str | None) -> TlsContext:
    context = ssl.create_default_context()
    if ca_file is not None:
        context.load_verify_locations(cafile=ca_file)
    return context


def wrap(sock: socket.socket, context: TlsContext, host: str, timeout: float) -> socket.socket:
    """The TLS handshake on ``sock`` (closed when it fails), within ``timeout`` seconds."""
    try:
        sock.settimeout(timeout)
        return context.wrap_socket(sock, server_hostname=host)
    except BaseException:
        sock.close()
        raise


def is_tls(sock: socket.socket) -> bool:
    """Whether ``sock`` speaks TLS (implicit TLS, or after STARTTLS)."""
    return isinstance(sock, ssl.SSLSocket)


def answered_in_plaintext(exc: BaseException) -> bool:
    """True when a TLS handshake failed because the peer answered without TLS (a protocol's greeting is
    no TLS record): the port is no implicit-TLS port."""
    return isinstance(exc, ssl.SSLError) and any(reason in str(exc) for reason in _PLAINTEXT_PEER)


def is_tls_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is a failed TLS handshake or certificate check (not a dead connection)."""
    return isinstance(exc, ssl.SSLError) and not isinstance(exc, ssl.SSLEOFError)


def is_certificate_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is the server's certificate failing verification (name, trust, expiry)."""
    return isinstance(exc, ssl.SSLCertVerificationError)

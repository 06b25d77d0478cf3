"""Whether a server speaks ManageSieve at all, found without logging in: its greeting read within the
connect budget (``connect_timeout_s``). A port that refuses the connection, does not answer, or answers in
another protocol (an IMAP greeting) is a server without ManageSieve; a name that does not resolve, a
network that is down, or a TLS failure says nothing of it (the session then reports its own failure). A
port that did not answer is looked at again after :data:`UNANSWERED_KEPT_S`: a firewall that drops it is
then asked once in that while, and a server that was slow at startup gets its rules back."""

from __future__ import annotations

import contextlib
import math
import time

from mail_imap_mcp.mail.sieve_presence import Look
from mail_imap_mcp.managesieve.errors import SieveTimedOut
from mail_imap_mcp.managesieve.session import SieveServer
from mail_imap_mcp.managesieve.wire import Atom, Reader
from mail_imap_mcp.net.budget import CallBudget
from mail_imap_mcp.net.sockets import Socket, connect_tcp, is_timeout
from mail_imap_mcp.net.tls import client_context, wrap

#: How long "did not answer" is kept before the server is looked at again (seconds).
UNANSWERED_KEPT_S = 300.0


def probe(server: SieveServer) -> Look:
    """Whether ``server`` offers ManageSieve, as :class:`~mail_imap_mcp.mail.sieve_presence.Look` says."""
    budget = CallBudget(server.connect_timeout_s)
    sock: Socket | None = None
    refused = None
    kept_s = math.inf
    try:
        with budget.connecting(time.monotonic() + server.connect_timeout_s):
            try:
                sock = connect_tcp(server.host, server.port, budget.timeout, lambda: None)
            except ConnectionRefusedError:
                refused = "refused the connection"
            if sock is not None and server.security == "tls":
                sock = wrap(sock, client_context(server.ca_file), server.host, budget.timeout())
            if sock is not None:
                refused = None if _greets(Reader(sock, budget.timeout)) else "answered in another protocol"
    except Exception as exc:  # whatever else failed (a name lookup, TLS) says nothing of ManageSieve
        if not (is_timeout(exc) or isinstance(exc, SieveTimedOut)):
            return Look(False, None)
        refused = f"did not answer in {server.connect_timeout_s:g} s"
        kept_s = UNANSWERED_KEPT_S
    finally:
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()
    why = None if refused is None else f"no ManageSieve on this server (port {server.port} {refused})"
    return Look(True, why, kept_s)


def _greets(reader: Reader) -> bool:
    """Whether the greeting is ManageSieve's: capability lines (``"NAME" "value"``), then ``OK``."""
    for _ in range(64):
        items = reader.items()
        if items and isinstance(items[0], Atom):
            return items[0].upper() == "OK"
        if not items or not isinstance(items[0], bytes):
            return False
    return False


__all__ = ["UNANSWERED_KEPT_S", "probe"]

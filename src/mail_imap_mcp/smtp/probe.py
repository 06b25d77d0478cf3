"""A check of an account's submission server that sends nothing: connect, EHLO, implicit TLS or STARTTLS,
the AUTH mechanisms offered, and a login where a secret is given; then QUIT. No MAIL FROM, RCPT or DATA
is ever written, so no message can leave.

``setup`` and ``check`` run it so that a wrong server, port, security or password shows before the user
presses Send. A port that speaks TLS from its first byte, reached without it (security ``starttls`` on
465), greets nobody in plain text: after :data:`GREETING_WAIT_S` the probe asks the port whether it
answers TLS and says so, where the send would wait for its whole command timeout.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from mail_imap_mcp.net.sockets import Socket, readable
from mail_imap_mcp.net.tls import TLS_PROBE_S, answers_tls, client_context
from mail_imap_mcp.smtp.client import Login, Server, SubmissionClient, log_in
from mail_imap_mcp.smtp.errors import Stage, SubmissionError, SubmissionTlsFailed, classify

#: How long a connection without TLS waits for the greeting before asking whether the port speaks TLS.
GREETING_WAIT_S = 2.0


@dataclass(frozen=True)
class SubmissionReached:
    """What the server said once the connection was secured: the AUTH mechanisms it offers, and whether
    the login was tried (and, having returned, succeeded)."""

    mechanisms: tuple[str, ...]
    logged_in: bool


class _ProbeClient(SubmissionClient):
    """The submission client, told when a plain-text connection meets a port that speaks TLS."""

    def _get_socket(self, host: str, port: int, timeout: float) -> Socket:
        sock = super()._get_socket(host, port, timeout)
        silent = self._server.security != "tls" and not readable(
            sock, min(GREETING_WAIT_S, self._connect_left())
        )
        if silent and answers_tls(sock.getpeername(), min(TLS_PROBE_S, self._connect_left())):
            sock.close()
            raise SubmissionTlsFailed(
                Stage.TLS,
                f"port {port} speaks TLS from its first byte and greets nobody in plain text "
                f"(an implicit-TLS port, such as 465: its security is tls, not {self._server.security})",
            )
        return sock


def reach_submission(server: Server, login: Login | None) -> SubmissionReached:
    """Reach ``server`` as a send does up to the login (``login``: None to stop at the mechanisms), then
    say goodbye. Raises a :class:`~mail_imap_mcp.smtp.errors.SubmissionError` saying how far it got."""
    stage = Stage.CONNECT  # TLS failures carry their own stage
    client: _ProbeClient | None = None
    try:
        client = _ProbeClient(server, client_context(server.ca_file))
        client.open()
        mechanisms = tuple(client.esmtp_features.get("auth", "").upper().split())
        if login is not None:
            stage = Stage.LOGIN
            log_in(client, server, login)
        with contextlib.suppress(Exception):  # the check is done: a goodbye lost changes nothing
            client.quit()
        return SubmissionReached(mechanisms, login is not None)
    except SubmissionError:
        raise
    except Exception as exc:
        raise classify(exc, stage) from None
    finally:
        if client is not None:
            with contextlib.suppress(Exception):  # closing a socket already closed
                client.close()


__all__ = ["GREETING_WAIT_S", "SubmissionReached", "reach_submission"]

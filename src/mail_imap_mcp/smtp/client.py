"""An SMTP submission client (RFC 6409) on ``net/``'s sockets, TLS and SASL: implicit TLS (465) or STARTTLS
(587, required), AUTH PLAIN with a password or XOAUTH2/OAUTHBEARER with the account's token, the
server's SIZE respected, each recipient's refusal kept.

smtplib speaks the protocol; it never opens a socket or wraps TLS itself (``_get_socket`` and
:meth:`SubmissionClient.starttls` are ``net/``'s). :func:`submit` is the one call: connect, log in, send
one message, quit. Where it fails, :func:`~mail_imap_mcp.smtp.errors.classify` says how far it got; once
the message's bytes started to go out, a lost connection is an unknown outcome, never retried here.
"""

from __future__ import annotations

import base64
import contextlib
import re
import smtplib
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mail_imap_mcp.mime.message_file import crlf_chunks
from mail_imap_mcp.net.sasl import SaslExchange, oauth_initial_response
from mail_imap_mcp.net.sockets import Socket, connect_tcp
from mail_imap_mcp.net.tls import TlsContext, client_context, is_tls, wrap
from mail_imap_mcp.smtp.errors import (
    MessageTooLarge,
    RecipientsRefused,
    Stage,
    SubmissionError,
    SubmissionLoginRefused,
    SubmissionOutcomeUnknown,
    SubmissionRefused,
    SubmissionTlsFailed,
    classify,
)


@dataclass(frozen=True)
class Server:
    """Where to submit and how: ``security`` is ``tls``, ``starttls`` or ``plain`` (loopback only)."""

    host: str
    port: int
    security: str
    ca_file: Path | None = None
    connect_timeout_s: float = 10.0
    command_timeout_s: float = 30.0


@dataclass(frozen=True)
class Login:
    """Who logs in: ``mechanism`` ``PLAIN`` with ``secret()`` the password, or ``XOAUTH2``/``OAUTHBEARER``
    with ``secret()`` an access token (called once, when the server asks)."""

    username: str
    mechanism: str
    secret: Callable[[float], str] = field(repr=False)
    #: Told when the server refused the secret (a token source invalidates its token).
    refused: Callable[[str], None] = field(default=lambda _: None, repr=False)


@dataclass
class Submitted:
    """The server accepted the message for ``accepted``; ``refused`` maps each other address to the
    server's reply; ``reply`` is the server's answer to the message (its queue id, as a rule)."""

    accepted: list[str]
    refused: dict[str, str]
    reply: str


class SubmissionClient(smtplib.SMTP):
    """smtplib's protocol over ``net/``'s sockets (see the module)."""

    def __init__(self, server: Server, context: TlsContext) -> None:
        self._server = server
        self._context = context
        self._connect_deadline = time.monotonic() + server.connect_timeout_s
        super().__init__(timeout=server.command_timeout_s)
        self._host = server.host

    def _get_socket(self, host: str, port: int, timeout: float) -> Socket:
        sock = connect_tcp(host, port, self._connect_left, lambda: None)
        if self._server.security == "tls":
            sock = wrap(sock, self._context, host, self._connect_left())
        sock.settimeout(self._server.command_timeout_s)
        return sock

    def _connect_left(self) -> float:
        left = self._connect_deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the connect budget is used up")
        return left

    def open(self) -> None:
        """Connect, greet (EHLO) and, where the server's security is ``starttls``, upgrade and greet
        again: what a probe of the server needs before it asks anything."""
        self.connect(self._server.host, self._server.port)
        self.ehlo()
        if self._server.security == "starttls":
            self.starttls()
            self.ehlo()

    def starttls(self, *args: Any, **kwargs: Any) -> tuple[int, bytes]:
        """STARTTLS with ``net/``'s TLS (the account's context, the server's name verified)."""
        self.ehlo_or_helo_if_needed()
        if not self.has_extn("starttls"):
            raise SubmissionTlsFailed(
                Stage.TLS, "the server does not offer STARTTLS, which the account requires"
            )
        code, reply = self.docmd("STARTTLS")
        if code != 220:
            raise SubmissionTlsFailed(Stage.TLS, f"STARTTLS refused: {code} {reply.decode(errors='replace')}")
        assert self.sock is not None
        self.sock = wrap(self.sock, self._context, self._server.host, self._connect_left())
        self.sock.settimeout(self._server.command_timeout_s)
        self.file = None
        self.helo_resp = self.ehlo_resp = None
        self.esmtp_features = {}
        self.does_esmtp = False
        return code, reply


_DOT_AFTER_LINE_END = re.compile(rb"(?<=\n)\.")
_MAX_AUTH_ROUNDS = 4
#: A message as :func:`submit` takes it: its bytes, or a call giving them afresh in pieces each time.
Message = bytes | Callable[[], Iterable[bytes]]


def dot_stuffed(message: bytes) -> bytes:
    """The DATA payload of ``message``: CRLF line ends, leading dots doubled, the final ``.`` line."""
    return b"".join(dot_stuffed_chunks([message]))


def dot_stuffed_chunks(message: Iterable[bytes]) -> Iterator[bytes]:
    """:func:`dot_stuffed` of ``message`` given in pieces, a piece at a time."""
    line_start, tail = True, b""
    for piece in crlf_chunks(message):
        stuffed = _DOT_AFTER_LINE_END.sub(b"..", piece) if b"\n." in piece else piece
        yield b"." + stuffed if line_start and piece.startswith(b".") else stuffed
        line_start, tail = piece.endswith(b"\n"), (tail + piece)[-2:]
    if tail != b"\r\n":
        yield b"\r\n"
    yield b".\r\n"


def submit(server: Server, login: Login, sender: str, recipients: list[str], message: Message) -> Submitted:
    """Submit ``message`` from ``sender`` to ``recipients`` (envelope addresses) on a connection of its
    own, a piece at a time where it comes in pieces. Raises a :class:`~mail_imap_mcp.smtp.errors.SubmissionError`; only
    :class:`~mail_imap_mcp.smtp.errors.SubmissionOutcomeUnknown` means it may have been sent."""
    context = client_context(server.ca_file)
    stage = Stage.CONNECT
    client: SubmissionClient | None = None
    try:
        client = SubmissionClient(server, context)
        client.connect(server.host, server.port)
        client.ehlo()
        if server.security == "starttls":
            stage = Stage.TLS
            client.starttls()
            client.ehlo()
        stage = Stage.LOGIN
        log_in(client, server, login)
        stage = Stage.ENVELOPE
        pieces = message if callable(message) else lambda: [message]
        size = sum(len(piece) for piece in dot_stuffed_chunks(pieces()))
        limit = int(client.esmtp_features.get("size", "0") or 0) if client.has_extn("size") else 0
        if limit and size > limit:
            raise MessageTooLarge(size, limit)
        options = [f"SIZE={size}"] if client.has_extn("size") else []
        code, reply = client.mail(sender, options)
        if code != 250:
            raise SubmissionRefused(stage, code, reply.decode("utf-8", "replace"))
        accepted, refused = [], {}
        for recipient in recipients:
            code, reply = client.rcpt(recipient)
            if code in (250, 251):
                accepted.append(recipient)
            else:
                refused[recipient] = f"{code} {' '.join(reply.decode('utf-8', 'replace').split())}"[:300]
        if not accepted:
            raise RecipientsRefused(refused)
        code, reply = client.docmd("DATA")
        if code != 354:
            raise SubmissionRefused(stage, code, reply.decode("utf-8", "replace"))
        stage = Stage.DATA
        for piece in dot_stuffed_chunks(pieces()):
            client.send(piece)
        code, reply = client.getreply()
        answer = " ".join(reply.decode("utf-8", "replace").split())[:300]
        if code != 250:
            if code == -1:  # smtplib's "connection closed" answer
                raise SubmissionOutcomeUnknown(stage, answer or "the connection was closed")
            raise SubmissionRefused(stage, code, answer)
        _quit(client)
        return Submitted(accepted, refused, answer)
    except SubmissionError:
        _close(client)
        raise
    except Exception as exc:
        _close(client)
        raise classify(exc, stage) from None


def advertised_size(server: Server) -> int | None:
    """The largest message ``server`` takes, as its EHLO's SIZE says (RFC 1870), after STARTTLS where the
    account uses it; None where it says none or cannot be asked (sending will say why)."""
    client: SubmissionClient | None = None
    try:
        client = SubmissionClient(server, client_context(server.ca_file))
        client.open()
        size = client.esmtp_features.get("size", "") if client.has_extn("size") else ""
        _quit(client)
        return int(size) if size.strip().isdigit() and int(size) > 0 else None
    except Exception:  # the probe is a courtesy: the send itself checks SIZE again
        _close(client)
        return None


def log_in(client: SubmissionClient, server: Server, login: Login) -> None:
    """AUTH on ``client`` (encrypted, or plain to loopback) with ``login``; :class:`SubmissionLoginRefused`
    where the server offers not its mechanism or refuses the secret."""
    if not (is_tls(client.sock) if client.sock is not None else False) and server.security != "plain":
        raise SubmissionTlsFailed(Stage.TLS, "the connection is not encrypted")
    offered = client.esmtp_features.get("auth", "").upper().split()
    if login.mechanism not in offered:
        raise SubmissionLoginRefused(
            Stage.LOGIN, f"the server offers AUTH {' '.join(offered) or 'nothing'}, not {login.mechanism}"
        )
    secret = login.secret(server.command_timeout_s)
    if login.mechanism == "PLAIN":
        initial = f"\0{login.username}\0{secret}".encode()
        respond: Callable[[bytes], bytes | None] = lambda _: initial  # noqa: E731
    else:
        respond = SaslExchange(
            login.mechanism,
            oauth_initial_response(login.mechanism, login.username, secret, server.host, server.port),
        )

    # AUTH with an initial response (RFC 4954), the bytes as they are: smtplib's auth() takes ASCII only.
    code, reply = client.docmd("AUTH", f"{login.mechanism} {_b64(respond(b'') or b'')}")
    for _ in range(_MAX_AUTH_ROUNDS):
        if code != 334:
            break
        answer = respond(base64.b64decode(reply or b"=", validate=False))
        code, reply = client.docmd("*" if answer is None else base64.b64encode(answer).decode("ascii"))
    if code != 235:
        login.refused(secret)
        raise SubmissionLoginRefused(
            Stage.LOGIN, f"{code} {' '.join(reply.decode('utf-8', 'replace').split())}"[:300]
        )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii") if data else "="


def _quit(client: SubmissionClient) -> None:
    try:
        client.quit()
    except Exception:  # the message was accepted: a goodbye lost changes nothing
        _close(client)


def _close(client: SubmissionClient | None) -> None:
    if client is not None:
        with contextlib.suppress(Exception):  # closing a dead socket
            client.close()


__all__ = [
    "Login",
    "Message",
    "Server",
    "SubmissionClient",
    "Submitted",
    "advertised_size",
    "dot_stuffed",
    "dot_stuffed_chunks",
    "log_in",
    "submit",
]

"""The failures of a ManageSieve connection itself (reaching the server, TLS, the login, its time, a
malformed answer), subclasses of :class:`~mail_imap_mcp.mail.sieve_errors.SieveError`, and the one place
(:func:`classify`) where the socket layer's exceptions become them."""

from __future__ import annotations

from enum import StrEnum

from mail_imap_mcp.mail.sieve_errors import SieveError
from mail_imap_mcp.net.sockets import CONNECTION_DEAD, is_timeout
from mail_imap_mcp.net.tls import answered_in_plaintext, is_certificate_failure, is_tls_failure


class Stage(StrEnum):
    """How far a ManageSieve session got when it failed."""

    CONNECT = "connect"
    TLS = "tls"
    LOGIN = "login"
    COMMAND = "command"


class SieveConnectionError(SieveError):
    """The session failed at ``stage``; ``detail``: words safe to show (never a secret)."""

    def __init__(self, stage: Stage, detail: str) -> None:
        super().__init__(f"{stage}: {detail}")
        self.stage = stage
        self.detail = detail


class SieveUnavailable(SieveConnectionError):
    """The server could not be reached, or the connection was lost (or closed with ``BYE``)."""


class SieveTimedOut(SieveConnectionError):
    """The server did not answer within the call's time."""


class SieveTlsFailed(SieveConnectionError):
    """TLS could not be set up: the certificate failed verification, the port spoke no TLS, or the
    server offers no STARTTLS where the account requires it."""

    def __init__(self, stage: Stage, detail: str, *, certificate: bool = False) -> None:
        super().__init__(stage, detail)
        self.certificate = certificate


class SieveLoginRefused(SieveConnectionError):
    """The server refused the account's credentials, or offers no mechanism the account can use."""


class SieveProtocolError(SieveConnectionError):
    """The server's answer broke RFC 5804 or the client's bounds (a line or literal too long)."""


def classify(exc: BaseException, stage: Stage) -> SieveError:
    """The domain error of ``exc`` raised at ``stage`` (the one place that reads the socket's errors)."""
    if isinstance(exc, SieveError):
        return exc
    if is_tls_failure(exc):
        if answered_in_plaintext(exc):
            return SieveTlsFailed(Stage.TLS, "the port answered without TLS (is it a STARTTLS port?)")
        return SieveTlsFailed(Stage.TLS, _said(exc), certificate=is_certificate_failure(exc))
    if is_timeout(exc):
        return SieveTimedOut(stage, "the server did not answer in time")
    if isinstance(exc, (*CONNECTION_DEAD, OSError)):
        return SieveUnavailable(stage, _said(exc) or "the connection was lost")
    raise exc


def _said(exc: BaseException) -> str:
    text = getattr(exc, "strerror", None) or getattr(exc, "reason", None) or str(exc)
    return " ".join(str(text).split())[:300]


__all__ = [
    "SieveConnectionError",
    "SieveLoginRefused",
    "SieveProtocolError",
    "SieveTimedOut",
    "SieveTlsFailed",
    "SieveUnavailable",
    "Stage",
    "classify",
]

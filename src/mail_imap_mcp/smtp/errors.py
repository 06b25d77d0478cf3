"""What can go wrong submitting a message, as domain errors, and the one place (:func:`classify`) where
smtplib's and the socket layer's exceptions become them. Whether anything may have been sent is part of
every error: only :class:`SubmissionOutcomeUnknown` says it may have been."""

from __future__ import annotations

import smtplib
from enum import StrEnum

from mail_imap_mcp.net.sockets import CONNECTION_DEAD, is_timeout
from mail_imap_mcp.net.tls import answered_in_plaintext, is_certificate_failure, is_tls_failure


class Stage(StrEnum):
    """How far a submission got when it failed."""

    CONNECT = "connect"
    TLS = "tls"
    LOGIN = "login"
    ENVELOPE = "envelope"
    #: The message's bytes were being sent, or their answer awaited: it may have been accepted.
    DATA = "data"


class SubmissionError(Exception):
    """A submission that failed; ``sent_nothing`` is True unless the outcome is unknown."""

    sent_nothing = True

    def __init__(self, stage: Stage, detail: str) -> None:
        super().__init__(f"{stage}: {detail}")
        self.stage = stage
        #: Words safe to show: the server's reply or the socket's error, never a secret.
        self.detail = detail


class SubmissionUnavailable(SubmissionError):
    """The submission server could not be reached, or the connection broke before the message was sent."""


class SubmissionTimedOut(SubmissionError):
    """The server did not answer in time before the message was sent."""


class SubmissionTlsFailed(SubmissionError):
    """TLS could not be set up: the certificate failed verification, the port spoke no TLS, or the server
    offers no STARTTLS where the account requires it."""

    def __init__(self, stage: Stage, detail: str, *, certificate: bool = False) -> None:
        super().__init__(stage, detail)
        self.certificate = certificate


class SubmissionLoginRefused(SubmissionError):
    """The server refused the account's credentials (or offers no mechanism the account can use)."""


class SubmissionRefused(SubmissionError):
    """The server refused the sender or the message (a reply code of 4xx or 5xx before acceptance)."""

    def __init__(self, stage: Stage, code: int, reply: str) -> None:
        super().__init__(stage, f"{code} {reply}".strip())
        self.code = code
        self.temporary = 400 <= code < 500


class RecipientsRefused(SubmissionError):
    """Every recipient was refused: nothing was sent. ``refused``: each address and the server's reply."""

    def __init__(self, refused: dict[str, str]) -> None:
        super().__init__(Stage.ENVELOPE, f"{len(refused)} recipient(s) refused")
        self.refused = refused


class MessageTooLarge(SubmissionError):
    """The message is larger than the server's SIZE limit: not sent."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(Stage.ENVELOPE, f"{size} bytes, the server takes at most {limit}")
        self.size = size
        self.limit = limit


class SubmissionOutcomeUnknown(SubmissionError):
    """The connection was lost (or went silent) after the message's bytes were sent: the server may have
    accepted it. Never retried."""

    sent_nothing = False


def _reply(exc: smtplib.SMTPResponseException) -> str:
    text = (
        exc.smtp_error.decode("utf-8", "replace")
        if isinstance(exc.smtp_error, bytes)
        else str(exc.smtp_error)
    )
    return " ".join(text.split())[:300]


def classify(exc: BaseException, stage: Stage) -> SubmissionError:
    """The domain error of ``exc`` raised at ``stage`` (the one place that reads smtplib's exceptions)."""
    if isinstance(exc, SubmissionError):
        return exc
    lost = isinstance(exc, smtplib.SMTPServerDisconnected | OSError | EOFError) and not is_tls_failure(exc)
    if stage is Stage.DATA and (lost or is_timeout(exc)):
        return SubmissionOutcomeUnknown(stage, _said(exc) or "the connection was lost")
    if isinstance(exc, smtplib.SMTPAuthenticationError):
        return SubmissionLoginRefused(Stage.LOGIN, _reply(exc))
    if isinstance(exc, smtplib.SMTPNotSupportedError):
        return SubmissionLoginRefused(stage, str(exc))
    if isinstance(exc, smtplib.SMTPResponseException):
        return SubmissionRefused(stage, exc.smtp_code, _reply(exc))
    if is_tls_failure(exc):
        if answered_in_plaintext(exc):
            return SubmissionTlsFailed(Stage.TLS, "the port answered without TLS (is it a STARTTLS port?)")
        return SubmissionTlsFailed(Stage.TLS, _said(exc), certificate=is_certificate_failure(exc))
    if is_timeout(exc):
        return SubmissionTimedOut(stage, "the server did not answer in time")
    if lost or isinstance(exc, CONNECTION_DEAD | smtplib.SMTPException):
        return SubmissionUnavailable(stage, _said(exc) or "the connection was lost")
    raise exc


def _said(exc: BaseException) -> str:
    text = getattr(exc, "strerror", None) or getattr(exc, "reason", None) or str(exc)
    return " ".join(str(text).split())[:300]

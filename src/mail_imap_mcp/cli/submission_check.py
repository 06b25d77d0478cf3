"""The submission server's check, as ``check`` prints it and ``setup`` runs it before writing an account that
sends: connect, EHLO, TLS or STARTTLS, the AUTH mechanisms, and a login where the account's secret can be
had now (:func:`~mail_imap_mcp.smtp.probe.reach_submission`). Nothing is sent. A failure is said in the
send tool's words (the failure registry's, given by ``cli``), with the setting to look at. Part of the command line
(:mod:`mail_imap_mcp.cli`)."""

from __future__ import annotations

from collections.abc import Callable

from mail_imap_mcp.config import AccountConfig, AuthMethod, ConfigError
from mail_imap_mcp.net.tokens import Credentials, PasswordLogin, TokenUnavailable
from mail_imap_mcp.services.submission_server import submission_server
from mail_imap_mcp.smtp.client import Login
from mail_imap_mcp.smtp.errors import SubmissionError, SubmissionLoginRefused, SubmissionTlsFailed
from mail_imap_mcp.smtp.probe import SubmissionReached, reach_submission


def submission_target(account: AccountConfig) -> str:
    """Where the account submits: ``host:port (security)``; the account must have a submission server."""
    endpoint = account.submission
    assert endpoint is not None
    return f"{endpoint.host}:{endpoint.port} ({endpoint.security.value})"


def _login(account: AccountConfig, credentials: Credentials) -> tuple[Login | None, str]:
    """The login the check tries, or None and why not (the secret cannot be had now: the IMAP line
    already says why)."""
    if account.auth is AuthMethod.PASSWORD:
        assert isinstance(credentials, PasswordLogin)
        try:
            password = credentials.read()
        except ConfigError:
            return None, "no password to log in with"
        return Login(account.username, "PLAIN", lambda _: password), ""
    assert not isinstance(credentials, PasswordLogin)
    try:
        token = credentials.token(account.oauth2_token_timeout_s)
    except TokenUnavailable:
        return None, "no access token to log in with"
    return Login(account.username, account.auth.mechanism, lambda _: token.value), ""


def reach(account: AccountConfig, credentials: Credentials) -> tuple[SubmissionReached, str]:
    """Reach the account's submission server and log in where its secret can be had now; the mechanisms
    offered and, where no login was tried, why not. Raises :class:`SubmissionError`."""
    server = submission_server(account)
    assert server is not None
    login, not_tried = _login(account, credentials)
    return reach_submission(server, login), not_tried


def reached_words(reached: SubmissionReached, not_tried: str) -> str:
    offered = " ".join(reached.mechanisms) or "no mechanism"
    done = "logged in" if reached.logged_in else f"login not tried ({not_tried})"
    return f"{done}, AUTH {offered}; nothing sent"


def failure_words(exc: SubmissionError, words_of: Callable[[Exception], str], security_named: str) -> str:
    """``exc`` as the send tool says it (``words_of``: the failure registry's words, which only the command
    line's boundary applies), with what most likely needs correcting (``security_named``: the SMTP
    security's setting as the user knows it)."""
    words = words_of(exc)
    if isinstance(exc, SubmissionTlsFailed) and not exc.certificate:
        return f"{words} Check {security_named} (tls for 465, starttls for 587)."
    if isinstance(exc, SubmissionLoginRefused):
        return f"{words} The IMAP login's username and password are the submission server's too."
    return words

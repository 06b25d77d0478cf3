"""Logging in: ``LOGIN`` with a password, or SASL ``XOAUTH2`` / ``OAUTHBEARER`` with an OAuth2 access token.

The token comes from the account's ``oauth2_token_command``, run at every login (helpers such as
pizauth, oauth2l or mailctl cache and refresh tokens themselves, so it is cheap). When the server refuses
the token, the command runs once more (the helper may have refreshed it by then, or refreshes it when
asked again) and the login is retried once on the same connection. Tokens are never logged, never put
in an exception's text, and imaplib sends them as AUTHENTICATE continuations, which its debug output
shows only by size (see docs/security.md).
"""

from __future__ import annotations

import logging
import re
import subprocess
from collections.abc import Callable
from typing import Any

from mail_imap_mcp.config import AccountConfig, AuthMethod, helper_environment
from mail_imap_mcp.imap.errors import MechanismNotOffered, OAuthRejected, TokenCommandFailed, command_refused
from mail_imap_mcp.imap.oauth_challenge import OAuthChallenge
from mail_imap_mcp.imap.personality import Profile
from mail_imap_mcp.imap.wire import BudgetedIMAPClient
from mail_imap_mcp.processes import HAS_PROCESS_GROUPS, kill_tree

log = logging.getLogger("mail_imap_mcp.imap")

#: More than any access token (Microsoft's are about 2-3 KB): output beyond this is not a token.
MAX_TOKEN_BYTES = 16 * 1024
# A server that keeps challenging after the token was refused gets the conversation aborted.
_MAX_CHALLENGES = 3
# Runs of token-like characters in a helper's stderr are blanked before a line of it is shown.
_TOKEN_LIKE = re.compile(r"[A-Za-z0-9._~+/=-]{32,}")


def run_token_command(argv: list[str], timeout: float, env: dict[str, str]) -> str:
    """Run ``argv`` (no shell, no stdin, environment ``env``) and return its stdout, stripped: the
    access token.

    Stopped (with everything it started, being its own process group) after ``timeout`` seconds. A
    command that cannot start, exits non-zero, hangs, or prints nothing or more than a token raises
    :class:`TokenCommandFailed`, whose reason includes at most one line of its stderr with anything
    token-like blanked out, and never its stdout.
    """
    if timeout <= 0:
        raise TokenCommandFailed("the call's time budget was used up before the command could run")
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=HAS_PROCESS_GROUPS,
            env=env,
        )
    except OSError as exc:
        raise TokenCommandFailed(
            f"the command could not be started ({exc.strerror or type(exc).__name__})"
        ) from None
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(proc)
        raise TokenCommandFailed(
            f"the command did not finish within {timeout:.3g}s and was stopped"
        ) from None
    said = _last_line(err, out)
    if proc.returncode != 0:
        status = f"signal {-proc.returncode}" if proc.returncode < 0 else f"status {proc.returncode}"
        raise TokenCommandFailed(f"the command exited with {status}{said}")
    token = out.decode("utf-8", "replace").strip()
    if not token:
        raise TokenCommandFailed(f"the command printed nothing{said}")
    if (
        len(out) > MAX_TOKEN_BYTES
        or not token.isascii()
        or any(c.isspace() or not c.isprintable() for c in token)
    ):
        raise TokenCommandFailed(
            "the command printed more than an access token: it must print only the token (e.g. "
            "`oauth2l fetch --output_format bare`, not JSON)"
        )
    return token


def _stop(proc: subprocess.Popen[bytes]) -> None:
    kill_tree(proc)
    try:
        proc.communicate(timeout=2)
    except subprocess.TimeoutExpired:  # a descendant that left the group still holds the pipes
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def _last_line(err: bytes, out: bytes) -> str:
    """``": <last line of stderr>"`` with token-like runs (and anything printed on stdout) blanked."""
    lines = [line.strip() for line in err.decode("utf-8", "replace").splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[-1]
    printed = out.decode("utf-8", "replace").strip()
    if printed:
        line = line.replace(printed, "[redacted]")
    line = _TOKEN_LIKE.sub("[redacted]", line)
    line = re.sub(r"[\x00-\x1f\x7f]+", " ", line)[:200]
    return f" and said: {line!r}"


def sasl_initial_response(method: AuthMethod, username: str, token: str, host: str, port: int) -> bytes:
    """The client's first SASL message: Google's XOAUTH2 format, or RFC 7628 OAUTHBEARER (with the
    RFC 5801 GS2 header, ``,`` and ``=`` of the username escaped)."""
    if method is AuthMethod.XOAUTH2:
        return f"user={username}\x01auth=Bearer {token}\x01\x01".encode()
    if method is AuthMethod.OAUTHBEARER:
        authzid = username.replace("=", "=3D").replace(",", "=2C")
        return f"n,a={authzid},\x01host={host}\x01port={port}\x01auth=Bearer {token}\x01\x01".encode()
    raise ValueError(f"not an OAuth2 method: {method}")


class SaslExchange:
    """imaplib's AUTHENTICATE callback: sends the initial response on the server's first (empty)
    challenge; a later challenge is the server's error report (JSON), kept, and answered as the
    mechanism asks (XOAUTH2: empty; OAUTHBEARER: ``%x01``) so that the server ends with NO."""

    def __init__(self, method: AuthMethod, initial: bytes) -> None:
        self._method = method
        self._initial: bytes | None = initial
        self._challenges = 0
        self.challenge: OAuthChallenge | None = None

    def __call__(self, data: bytes) -> bytes | None:
        if self._initial is not None:
            initial, self._initial = self._initial, None
            return initial
        self._challenges += 1
        if self._challenges > _MAX_CHALLENGES:
            return None  # imaplib sends "*": the client aborts the exchange
        self.challenge = self.challenge or OAuthChallenge.parse(data)
        return b"\x01" if self._method is AuthMethod.OAUTHBEARER else b""


def authenticate(client: BudgetedIMAPClient, config: AccountConfig, token: str) -> None:
    """``AUTHENTICATE`` with ``token``; :class:`OAuthRejected` (with the server's challenge) on NO or BAD."""
    exchange = SaslExchange(
        config.auth,
        sasl_initial_response(config.auth, config.username, token, config.host, config.effective_port),
    )
    try:
        client.sasl_authenticate(config.auth.mechanism, exchange)
    except Exception as exc:
        if command_refused(exc) is None:
            raise
        raise OAuthRejected(exchange.challenge, str(exc)) from None


class Login:
    """One account's login: credentials are obtained first (before connecting), then :meth:`perform`
    logs the connected client in."""

    def __init__(self, account_id: str, config: AccountConfig, time_left: Callable[[], float]) -> None:
        self._account_id = account_id
        self._config = config
        self._time_left = time_left
        if config.auth is AuthMethod.PASSWORD:
            self._secret = config.resolve_password()
        else:
            self._secret = self._token()

    def _token(self) -> str:
        assert self._config.oauth2_token_command is not None
        timeout = min(self._config.oauth2_token_timeout_s, self._time_left())
        environment = helper_environment(self._config.helper_env)
        return run_token_command(self._config.oauth2_token_command, timeout, environment)

    def perform(self, client: BudgetedIMAPClient) -> Any:
        """Log ``client`` in: LOGIN, or AUTHENTICATE once the server advertises the mechanism, retried
        once with a token fetched anew when the server refuses the first (unless the command prints the
        same token again). Returns LOGIN's answer (the
        text of its tagged OK), None after AUTHENTICATE."""
        config = self._config
        if config.auth is AuthMethod.PASSWORD:
            return client.login(config.username, self._secret)
        offered = Profile.of(client.offered_capabilities)  # from the greeting, or anew after STARTTLS
        if not offered.offers_mechanism(config.auth.mechanism):
            raise MechanismNotOffered(self._account_id, config, offered.mechanisms)
        try:
            authenticate(client, config, self._secret)
        except OAuthRejected as refused:
            described = refused.challenge.describe() if refused.challenge else "no details"
            log.info(
                "account=%s the server refused the OAuth2 token (%s); running oauth2_token_command again",
                self._account_id,
                described,
            )
            token = self._token()
            if token == self._secret:  # the helper did not refresh it: the server would refuse it again
                raise OAuthRejected(refused.challenge, refused.said, same_token_again=True) from None
            self._secret = token
            authenticate(client, config, self._secret)

"""The words of an account's connection failures, for the failure registry (:mod:`.failures`).

Connecting, logging in, and a call that ran out of time or lost its connection: the IMAP layer raises
what happened (:class:`~mail_imap_mcp.imap.errors.ConnectFailed` with its phase and cause,
:class:`~mail_imap_mcp.imap.errors.StartTlsMissing`, :class:`~mail_imap_mcp.imap.errors.OAuthRejected`...,
each with the account and its settings); here each becomes the envelope error that names the setting to
change as the user writes it in the configuration file (``security = "tls" in [accounts.work]``).
"""

from __future__ import annotations

import socket
import ssl

from mail_imap_mcp.config import ENV_PREFIX, AccountConfig, AuthMethod, ConfigError, Security
from mail_imap_mcp.envelope import ErrorCode, NextAction, ToolFailure
from mail_imap_mcp.imap.errors import (
    AccountBusy,
    AccountUnusable,
    CallTimedOut,
    ConnectFailed,
    ConnectPhase,
    ImplicitTlsPort,
    LoginDisabled,
    LoginRefused,
    MechanismNotOffered,
    OAuthRejected,
    ReconnectFailed,
    ServerLimited,
    StartTlsMissing,
    TokenCommandFailed,
)
from mail_imap_mcp.imap.providers import login_hint, oauth2_scope_hint
from mail_imap_mcp.net.tls import answered_in_plaintext


def account_busy(exc: AccountBusy) -> ToolFailure:
    """Another call held the account's connection for the whole of this call's budget."""
    return ToolFailure(
        ErrorCode.TIMEOUT,
        f"Account {exc.account_id!r} is busy with another call; try again shortly.",
        details={"account_id": exc.account_id},
    )


def timed_out(account_id: str, config: AccountConfig, budget_s: float) -> ToolFailure:
    """The server did not answer within the call's budget."""
    return ToolFailure(
        ErrorCode.TIMEOUT,
        f"The IMAP server {config.host} did not answer in time (command timeout "
        f"{config.command_timeout_s:g}s, call budget {budget_s:g}s); retry shortly.",
        details={"account_id": account_id, "timeout_s": config.command_timeout_s, "budget_s": budget_s},
    )


def connection_lost(account_id: str, config: AccountConfig) -> ToolFailure:
    """The connection died and a new one could not be made within the call."""
    return ToolFailure(
        ErrorCode.UNAVAILABLE,
        f"Lost the connection to {config.host} and could not re-establish it; retry shortly.",
        details={"account_id": account_id},
    )


def call_timed_out(exc: CallTimedOut) -> ToolFailure:
    return timed_out(exc.account_id, exc.config, exc.budget_s)


def reconnect_failed(exc: ReconnectFailed) -> ToolFailure:
    return connection_lost(exc.account_id, exc.config)


def connect_failed(exc: ConnectFailed) -> ToolFailure:
    """The envelope failure of a connect or login that failed (the refusals of their own first)."""
    if isinstance(exc, AccountUnusable):
        return account_unusable(exc.account_id, exc.config)
    if isinstance(exc, StartTlsMissing):
        return starttls_missing(exc.account_id, exc.config)
    if isinstance(exc, LoginDisabled):
        return login_disabled(exc.account_id, exc.config)
    if isinstance(exc, MechanismNotOffered):
        return mechanism_not_offered(exc.account_id, exc.config, exc.offered)
    return connect_failure(exc.cause or exc, exc.account_id, exc.config, exc.phase)


def sign_in_failed(exc: TokenCommandFailed, account_id: str, config: AccountConfig) -> ToolFailure:
    """The built-in sign-in gave no token: nobody signed in, the sign-in ended (the refresh token was
    revoked or expired), or the provider could not be asked."""
    command = f"mail-imap-mcp login {account_id}"
    details: dict[str, object] = {"account_id": account_id, "auth": config.auth.value}
    if not exc.sign_in_required:
        return ToolFailure(
            ErrorCode.AUTH_FAILED,
            f"No OAuth2 access token for account {account_id!r}: {exc.reason}. The sign-in is kept; retry "
            f"shortly, or check the provider's address ({config.setting('oauth2_provider')}).",
            details=details,
            retryable=True,
        )
    return ToolFailure(
        ErrorCode.AUTH_FAILED,
        f"Account {account_id!r} needs its user to sign in ({exc.reason}). Ask the user to run "
        f"`{command}` in a terminal, then try again.",
        details={**details, "reason": "sign_in_required", "command": command},
        next_action=NextAction(
            instruction=f"After the user has run `{command}`, list the account's mailboxes again",
            tool="imap_list_mailboxes",
            arguments={"account_id": account_id},
        ),
    )


def connect_failure(
    exc: BaseException, account_id: str, config: AccountConfig, phase: ConnectPhase
) -> ToolFailure:
    """The envelope failure for ``exc`` raised while connecting or logging in, in ``phase``."""
    host = f"{config.host}:{config.effective_port}"
    details: dict[str, object] = {"account_id": account_id}

    def unavailable(message: str, *, retryable: bool = False) -> ToolFailure:
        return ToolFailure(ErrorCode.UNAVAILABLE, message, details=details, retryable=retryable)

    if isinstance(exc, ConfigError):
        return ToolFailure(
            ErrorCode.AUTH_FAILED,
            f"No password for account {account_id!r}: {exc}. Fix the account's password source.",
            details={**details, **_field_of(config, config.password_key)},
        )
    if isinstance(exc, TokenCommandFailed) and config.oauth2_provider is not None:
        return sign_in_failed(exc, account_id, config)
    if isinstance(exc, TokenCommandFailed):
        program = (config.oauth2_token_command or ["?"])[0]
        return ToolFailure(
            ErrorCode.AUTH_FAILED,
            f"No OAuth2 access token for account {account_id!r}: {exc.reason}. Run the command yourself "
            f"({program!r} of {config.setting('oauth2_token_command')}) to see what it needs: usually the "
            "token helper must be authorised again (e.g. `pizauth show`, `oauth2l fetch`, `mailctl "
            "access`), or the command is wrong.",
            details={**details, "auth": config.auth.value},
        )
    if isinstance(exc, OAuthRejected):
        return oauth_rejected(exc, account_id, config)
    if isinstance(exc, ServerLimited):
        return unavailable(
            f"The server {host} refuses account {account_id!r} for now, for a limit of its own ({exc.said}). "
            "Retry in a minute. Gmail allows 15 simultaneous IMAP connections per account: if it persists, "
            "close other mail clients or devices that keep connections open.",
            retryable=True,
        )
    if isinstance(exc, LoginRefused):
        return ToolFailure(
            ErrorCode.AUTH_FAILED,
            f"The server {host} refused the login of {config.username!r} (account {account_id!r}). "
            f"Hint: {login_hint(config.host)}. Otherwise check {config.named('username')} and "
            f"{config.named(config.password_key)}.",
            details={**details, **_field_of(config, config.password_key)},
        )
    if isinstance(exc, ssl.SSLCertVerificationError):
        return unavailable(
            f"The TLS certificate of {host} could not be verified ({exc.verify_message}). If the "
            f"server uses a self-signed certificate (e.g. Proton Bridge), set {config.setting('ca_file')} "
            "to the certificate (PEM); if not, the host name may be wrong or the connection intercepted."
        )
    if answered_in_plaintext(exc):
        return unavailable(
            f"The server at {host} answered without TLS, so this port is not an implicit-TLS port. Use "
            f"STARTTLS on it ({config.setting('security', 'starttls')}), or set the server's TLS port "
            f"({config.setting('port', '993')} on most servers)."
        )
    if isinstance(exc, ImplicitTlsPort):
        return unavailable(
            f"Connected to {host}, but no IMAP greeting came within {exc.waited_s:g}s and the port answered "
            f"a TLS handshake: it expects implicit TLS, not {config.setting('security', config.security.value)}. "
            f"Set {config.setting('security', 'tls')} for this port, or use the server's STARTTLS port "
            f"({config.setting('port', '143')} on most servers)."
        )
    if isinstance(exc, TimeoutError):
        return _connect_timed_out(host, details, config, phase)
    if isinstance(exc, socket.gaierror):
        return unavailable(f"The host name {config.host!r} does not resolve; check {config.setting('host')}.")
    if isinstance(exc, ConnectionRefusedError):
        return unavailable(
            f"Nothing accepts connections at {host}; check {config.setting('port')} and that the "
            "server is running.",
            retryable=True,
        )
    return unavailable(
        f"Cannot talk to the IMAP server {host} ({type(exc).__name__} during {phase.value}); check "
        f"that it is running and that {config.setting('host')}, {config.setting('port')} and "
        f"{config.setting('security')} are right.",
        retryable=True,
    )


def _connect_timed_out(
    host: str, details: dict[str, object], config: AccountConfig, phase: ConnectPhase
) -> ToolFailure:
    """No answer within ``connect_timeout_s``: what that most likely means depends on the phase."""
    details["timeout_s"] = config.connect_timeout_s
    if phase is ConnectPhase.GREETING and config.security is not Security.TLS:
        return ToolFailure(
            ErrorCode.UNAVAILABLE,
            f"Connected to {host}, but no IMAP greeting came within {config.connect_timeout_s:g}s: "
            f"the port most likely expects implicit TLS. Set {config.setting('security', 'tls')} "
            f"for this port, or use the server's STARTTLS port ({config.setting('port', '143')} "
            "on most servers).",
            details=details,
            retryable=False,
        )
    if phase is ConnectPhase.TCP:
        return ToolFailure(
            ErrorCode.TIMEOUT,
            f"Connecting to {host} timed out after {config.connect_timeout_s:g}s; check "
            f"{config.setting('host')} and {config.setting('port')}, and that no firewall blocks it.",
            details=details,
        )
    return ToolFailure(
        ErrorCode.TIMEOUT,
        f"The server {host} did not answer within {config.connect_timeout_s:g}s while connecting "
        f"({phase.value}); retry shortly.",
        details=details,
    )


def account_unusable(account_id: str, config: AccountConfig) -> ToolFailure:
    """An account whose settings cannot work (``config.faults``, the first named in ``details``): a
    missing password or a sign-in that cannot keep its token here is ``auth_failed``, a host, port,
    security, address or certificate ``unavailable``; neither changes until the setting does."""
    first, *others = config.faults
    wrong = "; ".join(f"{fault.named} {fault.reason}" for fault in (first, *others))
    if first.label is not None:
        where = (
            "Correct it in the extension's settings (in Claude Desktop: Settings, Extensions, Mail (IMAP))"
        )
    elif first.setting.startswith(ENV_PREFIX):
        where = "Correct it where the MCP client sets the server's environment"
    else:
        where = "Correct it in the configuration file"
    return ToolFailure(
        ErrorCode.AUTH_FAILED if first.key in {"password_env", "oauth2_provider"} else ErrorCode.UNAVAILABLE,
        f"Account {account_id!r} cannot be used as set up: {wrong}. {where}; the server reads it when "
        "it starts again.",
        details={"account_id": account_id, **_field_of(config, first.key)},
        retryable=False,
    )


def _field_of(config: AccountConfig, key: str) -> dict[str, object]:
    """``details`` naming the setting ``key``: ``setting`` as it is set, and ``field``, the label of the
    bundle form's field that sets it, where one does."""
    label = config.label(key)
    return (
        {"setting": config.setting(key)}
        if label is None
        else {"field": label, "setting": config.setting(key)}
    )


def starttls_missing(account_id: str, config: AccountConfig) -> ToolFailure:
    """A STARTTLS account whose server does not offer STARTTLS: the password stays unsent."""
    return _password_not_sent(
        account_id,
        f"The server {config.host}:{config.effective_port} does not offer STARTTLS; refusing to send the "
        f"password unencrypted. Use the server's TLS port ({config.setting('security', 'tls')} and "
        f"{config.setting('port', '993')} on most servers).",
    )


def login_disabled(account_id: str, config: AccountConfig) -> ToolFailure:
    """The server advertises LOGINDISABLED (RFC 3501): sending LOGIN would expose the password."""
    return _password_not_sent(
        account_id,
        f"The server {config.host}:{config.effective_port} refuses LOGIN on an unencrypted connection "
        f"(LOGINDISABLED); the password was not sent. Set {config.setting('security', 'starttls')} "
        f"or {config.setting('security', 'tls')} with the TLS port.",
    )


def _password_not_sent(account_id: str, message: str) -> ToolFailure:
    """Refused before the password went out unencrypted: retrying changes nothing, a setting does."""
    return ToolFailure(ErrorCode.UNAVAILABLE, message, details={"account_id": account_id}, retryable=False)


def oauth_rejected(exc: OAuthRejected, account_id: str, config: AccountConfig) -> ToolFailure:
    """The server refused the access token twice (the second one freshly from the token command): say
    why, from the server's decoded challenge (expired or invalid token, wrong scope), and what to do."""
    host = f"{config.host}:{config.effective_port}"
    challenge = exc.challenge
    mechanism = config.auth.mechanism
    scope = oauth2_scope_hint(config.host)
    said = f"the server said {challenge.describe()}" if challenge else f"the server said: {exc.said[:200]}"
    command = config.setting("oauth2_token_command")
    if config.oauth2_provider is not None:
        return _sign_in_token_refused(
            exc, account_id, config, f"{host} refused the OAuth2 access token", said
        )
    if exc.same_token_again:
        retried = (
            f"; run once more, {command} printed the same token again, so the token helper did not refresh it"
        )
    else:
        retried = f", also a fresh one from {command}"
    if challenge is not None and challenge.wants_scope:
        advice = (
            f"The token lacks the permission (scope) IMAP needs; authorise the token helper again with "
            f"{scope or 'the scope the server names'}."
        )
    elif challenge is not None and challenge.says_invalid:
        advice = (
            "The token is invalid or expired: make the token helper refresh it (or authorise it "
            f"again), and check that it is issued for {config.username!r}"
            + (f" with {scope}" if scope else "")
            + "."
        )
    else:
        advice = (
            f"Check that the token is issued for {config.username!r} ({config.setting('username')})"
            + (f" with {scope}" if scope else " with the scope the server requires")
            + ", and that it is current."
        )
    details: dict[str, object] = {"account_id": account_id, "auth": config.auth.value}
    if challenge is not None:
        details["server_status"] = challenge.status
        details["server_scope"] = challenge.scope
    return ToolFailure(
        ErrorCode.AUTH_FAILED,
        f"The server {host} refused the OAuth2 access token ({mechanism}) of {config.username!r} "
        f"(account {account_id!r}){retried}: {said}. {advice}",
        details=details,
        retryable=False,
    )


def _sign_in_token_refused(
    exc: OAuthRejected, account_id: str, config: AccountConfig, refused: str, said: str
) -> ToolFailure:
    """The built-in sign-in's token refused twice (the second freshly refreshed): the sign-in works at
    the provider but does not let this user in, so its scopes or its user are wrong."""
    wanted = exc.challenge.scope if exc.challenge is not None and exc.challenge.scope else None
    details: dict[str, object] = {"account_id": account_id, "auth": config.auth.value}
    if exc.challenge is not None:
        details["server_status"] = exc.challenge.status
        details["server_scope"] = exc.challenge.scope
    return ToolFailure(
        ErrorCode.AUTH_FAILED,
        f"The server {refused} ({config.auth.mechanism}) of {config.username!r} (account {account_id!r}), "
        f"also a fresh one from the built-in sign-in: {said}. Check that {config.setting('oauth2_scopes')} "
        f"includes {repr(wanted) if wanted else 'the scope the server requires'} and that the sign-in is "
        f"{config.username!r}'s own, then sign in again: mail-imap-mcp login {account_id}.",
        details=details,
        retryable=False,
    )


def mechanism_not_offered(account_id: str, config: AccountConfig, offered: list[str]) -> ToolFailure:
    """The server does not advertise ``AUTH=<mechanism>`` of an OAuth2 account (it offers ``offered``):
    no token is sent."""
    others = [
        method.value
        for method in (AuthMethod.XOAUTH2, AuthMethod.OAUTHBEARER)
        if method is not config.auth and method.mechanism in offered
    ]
    if others:
        step = f"Set {config.setting('auth', others[0])}, which it offers."
    else:
        step = (
            "It does not take OAuth2 tokens at all: use a password instead "
            f"({config.setting('auth', 'password')} with one of the password settings)."
        )
    return ToolFailure(
        ErrorCode.AUTH_FAILED,
        f"The server {config.host}:{config.effective_port} does not offer {config.auth.mechanism} "
        f"login (it offers: {', '.join(offered) or 'no SASL mechanism'}); the token was not sent. {step}",
        details={"account_id": account_id, "auth": config.auth.value, "offered": offered},
        retryable=False,
    )

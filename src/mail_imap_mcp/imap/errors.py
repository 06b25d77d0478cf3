"""What IMAP failures mean: :func:`classify`, which turns any imapclient, imaplib, socket, TLS or server
failure into a domain error (``mail/errors.py``), and the errors of IMAP's own connection (lost, out of
time, busy, connect and login).

Nothing here knows tools or envelopes: ``mail_imap_mcp.presentation.failures`` turns each domain error into
the envelope's error (the tool runner applies it), naming the arguments and settings as the user wrote
them. An error carries the facts its words need (the account and its settings, the connect phase, the
cause, the offered mechanisms...), never the words.
"""

from __future__ import annotations

import imaplib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.mail.errors import (
    REFUSALS,
    CharsetRejected,
    CommandRefused,
    MailboxGone,
    MailboxMissing,
    MailError,
    Refusal,
)
from mail_imap_mcp.net.oauth_challenge import OAuthChallenge
from mail_imap_mcp.net.sockets import CONNECTION_DEAD, is_timeout

# Errors that mean "this connection is dead", as raised by imaplib, imapclient (whose IMAPClientAbortError
# and IMAPClientError are imaplib's abort and error: imapclient loads with the first connection) and the
# socket layer.
_DEAD_CONNECTION: tuple[type[BaseException], ...] = (imaplib.IMAP4.abort, *CONNECTION_DEAD)

# Dovecot answers NO with this text once the selected mailbox changed under the session (e.g. a
# new UIDVALIDITY or a repaired index); only a new session sees the mailbox as it now is.
_SESSION_BROKEN_MARKERS = ("please relogin", "session state is inconsistent")

# How servers say that a mailbox is not there (any more): the RFC 5530 response codes, and the texts
# of servers that send none (Cyrus: "Mailbox does not exist"; Courier: "Invalid mailbox name").
_MAILBOX_MISSING = re.compile(
    rb"\[(NONEXISTENT|TRYCREATE)\]|mailbox does not exist|mailbox doesn't exist|no such mailbox|"
    rb"invalid mailbox name|unknown mailbox|mailbox not found",
    re.IGNORECASE,
)


class ServerRefused(Exception):
    """A NO or BAD answer as :mod:`.wire` hands it up, so that imaplib's and imapclient's error types
    stay below it: ``said`` is the server's text; :func:`classify` says what it means."""

    def __init__(self, said: str) -> None:
        super().__init__(said)
        self.said = said


_ANSWERS: tuple[type[BaseException], ...] = (imaplib.IMAP4.error, ServerRefused)


class ImplicitTlsPort(MailError):
    """No IMAP greeting came within ``waited_s`` on a connection without TLS (plain or STARTTLS), and the
    port answers a TLS handshake: it expects implicit TLS."""

    ends_call = True

    def __init__(self, waited_s: float) -> None:
        super().__init__(f"no greeting within {waited_s:g}s; the port answers a TLS handshake")
        self.waited_s = waited_s


class ConnectionLost(MailError):
    """The connection died mid-command; safe to retry a read on a fresh one."""

    ends_call = True


class TimedOut(MailError):
    """The server did not answer a command within the call's budget."""

    ends_call = True


class SelectionStale(MailError):
    """A selection reused from an earlier call turned out stale; the read runs again on a fresh one."""

    ends_call = True


class LoginRefused(MailError):
    """The server refused the credentials (LOGIN or AUTHENTICATE answered NO); ``said``: its words."""

    def __init__(self, said: str) -> None:
        super().__init__(said)
        self.said = said


class ServerLimited(MailError):
    """The server refused for a limit of its own, for a while: too many simultaneous connections of the
    account, or its bandwidth or command rate (Gmail: ``[ALERT] Too many simultaneous connections``,
    ``[THROTTLED]``; RFC 5530 ``[LIMIT]``, ``[UNAVAILABLE]``). ``said``: its words."""

    ends_call = True

    def __init__(self, said: str) -> None:
        super().__init__(said)
        self.said = said


#: How servers say a limit of theirs refused a login or a command (retrying later can help).
_LIMITED = re.compile(
    rb"\[THROTTLED\]|\[LIMIT\]|\[UNAVAILABLE\]|too many simultaneous connections|bandwidth limit|"
    rb"rate limit",
    re.IGNORECASE,
)


def says_limited(answer: str) -> bool:
    """Whether a server's answer says one of its limits refused the login or command."""
    return _LIMITED.search(answer.encode("utf-8", "replace")) is not None


class TokenCommandFailed(MailError):
    """``oauth2_token_command`` gave no token: it could not start, failed, hung or printed nothing.

    ``reason`` says which, in words safe to show (never stdout, which may hold a token);
    ``sign_in_required``: the built-in sign-in has no usable refresh token (`mail-imap-mcp login`).
    """

    ends_call = True

    def __init__(self, reason: str, sign_in_required: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.sign_in_required = sign_in_required


class OAuthRejected(MailError):
    """The server refused the OAuth2 access token (also the fresh one of the one retry), or refused it
    and the token command printed the same token again (``same_token_again``: not sent twice)."""

    ends_call = True

    def __init__(
        self, challenge: OAuthChallenge | None, said: str, *, same_token_again: bool = False
    ) -> None:
        super().__init__(said)
        self.challenge = challenge
        self.said = said
        self.same_token_again = same_token_again


def is_connection_broken(exc: BaseException) -> bool:
    """True when ``exc`` means this connection can no longer be used (retry on a fresh one)."""
    if isinstance(exc, ServerRefused):
        return False
    if isinstance(exc, imaplib.IMAP4.error) and not isinstance(exc, _DEAD_CONNECTION):
        text = str(exc).lower()
        return any(marker in text for marker in _SESSION_BROKEN_MARKERS)
    return isinstance(exc, _DEAD_CONNECTION) or (isinstance(exc, OSError) and not is_timeout(exc))


def says_mailbox_missing(exc: BaseException) -> bool:
    """True when a server's NO/BAD answer means the mailbox does not exist (any more)."""
    if not isinstance(exc, _ANSWERS) or isinstance(exc, _DEAD_CONNECTION):
        return False
    text = str(exc).encode("utf-8", "replace")
    return _MAILBOX_MISSING.search(text) is not None


def rejects_charset(exc: BaseException) -> bool:
    """True when the server refused the search's CHARSET (RFC 3501 ``[BADCHARSET]``)."""
    return isinstance(exc, _ANSWERS) and "BADCHARSET" in str(exc).upper()


#: Commands that open a mailbox: any refusal means it does not exist or cannot be opened.
_OPENING = frozenset({"SELECT", "EXAMINE"})
#: Commands that name a new mailbox. Their refusal of that name is no missing mailbox: Courier and Cyrus
#: answer RENAME to a name outside the namespace or with a character they refuse "Invalid mailbox name"
#: (Courier answers RENAME of a missing source "OK Folder renamed.", changing nothing).
_NAMING = frozenset({"CREATE", "RENAME"})
_NAME_REFUSED = re.compile(rb"\[TRYCREATE\]|invalid mailbox name", re.IGNORECASE)


@dataclass(frozen=True)
class Context:
    """What was being done when a failure happened, for :func:`classify`."""

    #: The IMAP command (``RENAME``, ``UID MOVE``...); empty when unknown.
    command: str = ""
    #: The mailbox the command names (COPY, MOVE: the destination; RENAME: the source).
    mailbox: str = ""
    #: The mailbox selected when the command ran, if it names another (COPY, MOVE): a refusal is "in" it.
    selected: str = ""
    #: The account, when ``mailbox`` is the one this call had selected: "does not exist" then means it
    #: went away meanwhile (:class:`MailboxGone`).
    account_id: str = ""


def server_said(exc: BaseException | str, limit: int = 200) -> str:
    """The text of a server's answer in ``exc``, control characters removed, shortened to ``limit``."""
    return re.sub(r"[\x00-\x1f\x7f]+", " ", str(exc))[:limit]


def classify(exc: BaseException, context: Context | None = None) -> MailError | None:
    """The domain error ``exc`` means, raised while doing ``context``: every dead connection is
    :class:`ConnectionLost`, a timeout :class:`TimedOut`, a NO or BAD answer :class:`CharsetRejected`,
    :class:`MailboxMissing` (:class:`MailboxGone` for the selected mailbox) or :class:`CommandRefused`;
    a domain error stays itself. None: ``exc`` is no IMAP failure (a bug), to be raised as it is."""
    context = context or Context()
    if isinstance(exc, MailError):
        return exc
    if is_connection_broken(exc):
        return ConnectionLost(str(exc))
    if isinstance(exc, TimeoutError):
        return TimedOut(str(exc))
    if not isinstance(exc, _ANSWERS):
        return None
    return refused(str(exc), context)


def refused(answer: str, context: Context | None = None) -> MailError:
    """The domain error of a NO or BAD answer whose text is ``answer``, to the command of ``context``:
    :class:`CharsetRejected`, :class:`MailboxMissing` (:class:`MailboxGone` for the selected mailbox)
    or :class:`CommandRefused` (see :func:`classify`)."""
    context = context or Context()
    text = answer.encode("utf-8", "replace")
    said = server_said(answer)
    if b"BADCHARSET" in text.upper():
        return CharsetRejected(said)
    if _LIMITED.search(text):
        return ServerLimited(said)
    reason = next((reason for pattern, reason in REFUSALS if pattern.search(text)), None)
    if reason is None and context.command.upper() in _NAMING and _NAME_REFUSED.search(text):
        reason = Refusal.OTHER
    if reason is None and (_MAILBOX_MISSING.search(text) or context.command.upper() in _OPENING):
        if context.account_id:
            return MailboxGone(context.account_id, context.mailbox)
        return MailboxMissing(context.mailbox, context.command, said)
    return CommandRefused(context.command, context.selected or context.mailbox, reason or Refusal.OTHER, said)


def mailbox_failure(exc: BaseException) -> Exception | None:
    """``exc`` as the failure of the one mailbox being read, so that a call over several goes on with
    the others (a refusal, the mailbox missing, gone or recreated, its charset refused); None when it
    ends the whole call (the connection or the time is gone, a stale view, a bug): raise it then.

    This and :func:`message_failure` are the one place where the scope of a failure is decided.
    """
    failure = classify(exc)
    return None if failure is None or failure.ends_call else failure


def message_failure(exc: BaseException) -> MailError | None:
    """``exc`` as the failure of the one message a FETCH asked for: the server refused the command (NO,
    BAD) or hung up on it (:class:`ConnectionLost`: reconnect, go on with the next). None when it ends
    the read: what the session already judged (the mailbox gone or recreated), time up, a bug."""
    if isinstance(exc, MailError):
        return None
    failure = classify(exc)
    return None if failure is None or isinstance(failure, TimedOut) else failure


def command_refused(exc: BaseException) -> MailError | None:
    """``exc`` as the domain error of the server's NO or BAD to the command just sent; None for anything
    else (a dead connection, time up, what the session already judged, a bug): raise it then."""
    failure = message_failure(exc)
    return None if failure is None or failure.ends_call else failure


# --- the account's connection: busy, out of time, lost, connect and login ---------------------------


class AccountBusy(MailError):
    """Another call held the account's connection for the whole of this call's budget."""

    ends_call = True

    def __init__(self, account_id: str) -> None:
        super().__init__(f"account {account_id!r} is busy with another call")
        self.account_id = account_id


class CallTimedOut(MailError):
    """The server did not answer within the call's budget of ``budget_s`` (the connection is dropped)."""

    ends_call = True

    def __init__(self, account_id: str, config: AccountConfig, budget_s: float) -> None:
        super().__init__(f"{config.host} did not answer within the call's budget of {budget_s:g}s")
        self.account_id = account_id
        self.config = config
        self.budget_s = budget_s


class ReconnectFailed(MailError):
    """The connection died and no new one could be made within the call."""

    ends_call = True

    def __init__(self, account_id: str, config: AccountConfig) -> None:
        super().__init__(f"lost the connection to {config.host} and could not re-establish it")
        self.account_id = account_id
        self.config = config


class ConnectPhase(StrEnum):
    """How far a connection attempt got; decides what a failure most likely means."""

    TCP = "tcp"
    TLS = "tls"
    GREETING = "greeting"
    STARTTLS = "starttls"
    LOGIN = "login"


@dataclass
class ConnectProgress:
    phase: ConnectPhase = ConnectPhase.TCP


class ConnectFailed(MailError):
    """Connecting to or logging in to account ``account_id`` (settings ``config``) failed in ``phase``;
    ``cause``: what was raised (a socket, TLS or login error, :class:`ImplicitTlsPort`,
    :class:`TokenCommandFailed`, :class:`OAuthRejected`, the password source's ``ConfigError``...)."""

    ends_call = True

    def __init__(
        self, account_id: str, config: AccountConfig, phase: ConnectPhase, cause: BaseException | None = None
    ) -> None:
        from imapclient.exceptions import LoginError  # loaded by the connection that failed

        if isinstance(cause, LoginError):  # said here once: no module above imap/ knows imapclient
            # imapclient makes a LoginError of anything LOGIN raised: the connection ending or timing out
            # while LOGIN waited for its answer is no refusal of the password (the server may even have
            # logged in), and is worded as a lost connection.
            lost = cause.__context__
            if isinstance(lost, imaplib.IMAP4.abort | OSError):
                cause = lost
            else:
                said = server_said(cause)
                cause = ServerLimited(said) if says_limited(said) else LoginRefused(said)
        what = f"{type(cause).__name__}: {cause}" if cause is not None else type(self).__name__
        super().__init__(
            f"connecting to {config.host}:{config.effective_port} failed ({phase.value}): {what}"
        )
        self.account_id = account_id
        self.config = config
        self.phase = phase
        self.cause = cause


class StartTlsMissing(ConnectFailed):
    """A STARTTLS account whose server does not offer STARTTLS: the password stays unsent."""

    def __init__(self, account_id: str, config: AccountConfig) -> None:
        super().__init__(account_id, config, ConnectPhase.STARTTLS)


class LoginDisabled(ConnectFailed):
    """The server advertises LOGINDISABLED (RFC 3501): sending LOGIN would expose the password."""

    def __init__(self, account_id: str, config: AccountConfig) -> None:
        super().__init__(account_id, config, ConnectPhase.LOGIN)


class AccountUnusable(ConnectFailed):
    """The account's settings cannot work (``config.faults``): nothing was sent to any server."""

    def __init__(self, account_id: str, config: AccountConfig) -> None:
        super().__init__(account_id, config, ConnectPhase.TCP)


class MechanismNotOffered(ConnectFailed):
    """The server does not advertise ``AUTH=<mechanism>`` of an OAuth2 account: no token is sent.
    ``offered``: the SASL mechanisms it does advertise (its profile's ``mechanisms``), upper case, sorted."""

    def __init__(self, account_id: str, config: AccountConfig, offered: Iterable[str]) -> None:
        self.offered = sorted({mechanism.upper() for mechanism in offered})
        super().__init__(account_id, config, ConnectPhase.LOGIN)

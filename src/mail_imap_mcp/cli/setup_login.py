"""``setup``'s proof that the settings work: it logs in and lists the mailboxes as ``check`` does; on a
terminal a failure asks again only what it points at (the password, the certificate to trust, the server),
every other answer kept; a script, or the last of :data:`MAX_LOGINS`, stops with the diagnosis. Part of the
command line (:mod:`mail_imap_mcp.cli`)."""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mail_imap_mcp.cli.setup_answers import NOT_A_PORT, NOT_A_SECURITY, SECURITIES, is_port
from mail_imap_mcp.cli.setup_asker import Asker, SetupRefused, say
from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.config.accounts import format_validation_error
from mail_imap_mcp.credentials.logins import credentials_for
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.errors import ConnectFailed, ConnectPhase, LoginRefused
from mail_imap_mcp.imap.mailboxes import list_mailboxes
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.mail.errors import MailError

# Logins a person gets before setup gives up (each failure asks again only what it points at).
MAX_LOGINS = 5
PASSWORD_QUESTION = "Password or app password"


def validated(settings: dict[str, Any]) -> AccountConfig:
    try:
        return AccountConfig.model_validate(settings)
    except ValidationError as exc:
        raise SetupRefused(format_validation_error(exc).removeprefix("invalid configuration: ")) from None


def _prove(account_id: str, account: AccountConfig) -> None:
    """Log in and list the mailboxes, as ``check`` does; the MailError of a failure propagates."""
    target = f"{account.host}:{account.effective_port} ({account.security.value})"
    say(f"Logging in to {target} as {account.username}...")

    def probe(session: ImapSession) -> int:
        return len(list_mailboxes(session))

    connection = AccountConnection(account_id, account, credentials=credentials_for(account_id, account))
    try:
        mailboxes = connection.run(probe, retry=False)
    finally:
        connection.close()
    say(f"ok: logged in, {mailboxes} mailbox(es).")


class _Fault(Enum):
    """What a failed login points at: what setup asks again."""

    CERTIFICATE = "certificate"
    CREDENTIALS = "credentials"
    SERVER = "server"


def _fault(exc: MailError) -> _Fault:
    if not isinstance(exc, ConnectFailed):
        return _Fault.SERVER
    if isinstance(exc.cause, ssl.SSLCertVerificationError):
        return _Fault.CERTIFICATE
    if isinstance(exc.cause, LoginRefused) or exc.phase is ConnectPhase.LOGIN:
        return _Fault.CREDENTIALS
    return _Fault.SERVER


@dataclass(frozen=True)
class Proof:
    """What proves an account's settings: the questions asked again after a failure, the account's id,
    and the failure registry's words (``cli`` gives them: only the command line's boundary applies it)."""

    ask: Asker
    account_id: str
    words: Callable[[Exception], str]


def log_in(proof: Proof, settings: dict[str, Any], secret: str | None) -> str | None:
    """Log in with ``settings`` (changed in place by the answers given again) and ``secret``, the
    password (None for an OAuth2 account); the password that worked. On a terminal a failure asks again
    only what it points at, every other answer kept; a script, or the last of MAX_LOGINS, stops with the
    diagnosis (SetupRefused)."""
    ask, account_id, words = proof.ask, proof.account_id, proof.words
    for attempt in range(1, MAX_LOGINS + 1):
        try:
            _prove(account_id, validated(settings if secret is None else {**settings, "password": secret}))
            return secret
        except MailError as exc:
            failure, fault = words(exc), _fault(exc)
        if not ask.interactive or attempt == MAX_LOGINS:
            flag = (
                " Give the certificate to trust with --ca-file FILE." if fault is _Fault.CERTIFICATE else ""
            )
            raise SetupRefused(f"the login failed, so nothing was written: {failure}{flag}")
        say(f"The login failed: {failure}")
        if fault is _Fault.CERTIFICATE:
            settings["ca_file"] = _ask_certificate(ask)
        elif fault is _Fault.CREDENTIALS:
            settings["username"] = ask.again("Username", str(settings["username"]))
            if secret is not None:
                secret = ask.secret(PASSWORD_QUESTION)
        else:
            settings["host"] = ask.again("IMAP server", str(settings["host"]))
            settings["security"] = ask.again(
                "Security (tls, starttls, plain)",
                str(settings["security"]),
                SECURITIES.__contains__,
                NOT_A_SECURITY,
            )
            settings["port"] = int(ask.again("Port", str(settings["port"]), is_port, NOT_A_PORT))
    raise AssertionError("unreachable: the last attempt returns or raises")


def _ask_certificate(ask: Asker) -> str:
    while True:
        answer = ask.text(
            "The server's certificate is not trusted. Certificate file to trust (PEM, e.g. the one Proton "
            "Mail Bridge exports)",
            "--ca-file",
            None,
        )
        path = Path(answer).expanduser()
        if path.is_file():
            return str(path.resolve())
        say(f"{path} is not a file.")

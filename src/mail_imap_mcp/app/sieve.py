"""An account's Sieve scripts as a call reaches them: a ManageSieve session (``managesieve/``) on the
account's ManageSieve server (its ``sieve`` table's endpoint: the IMAP host, port
4190, STARTTLS, unless its ``[accounts.<id>.sieve]`` table says otherwise), logged in with the credentials
the application root gave the account's IMAP connections (a password, or the same token source: one
refresh for every protocol). Services see :class:`~mail_imap_mcp.mail.sieve.SieveScripts` alone."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.credentials.secret_now import SecretUnavailable, secret_now
from mail_imap_mcp.mail.sieve import SieveScripts
from mail_imap_mcp.mail.sieve_presence import SIEVE_PRESENCE
from mail_imap_mcp.managesieve.errors import SieveLoginRefused, Stage
from mail_imap_mcp.managesieve.probe import probe
from mail_imap_mcp.managesieve.session import SieveLogin, SieveServer, open_session
from mail_imap_mcp.net.tokens import Credentials


def sieve_server(account: AccountConfig) -> SieveServer:
    """Where the account's ManageSieve is, and how it is reached (its CA file and budgets)."""
    endpoint = account.sieve.endpoint(account.host)
    return SieveServer(
        endpoint.host,
        endpoint.port,
        endpoint.security.value,
        account.ca_file,
        account.connect_timeout_s,
        account.command_timeout_s,
    )


def find_managesieve(account: AccountConfig) -> str | None:
    """Why the account's server offers no ManageSieve (None: it does, or it could not be told), its greeting
    read once per process, or again once a verdict of a port that did not answer lapses
    (``mail/sieve_presence.py``)."""
    server = sieve_server(account)
    return SIEVE_PRESENCE.learn((server.host, server.port), lambda: probe(server))


def sieve_login(account: AccountConfig, credentials: Credentials) -> SieveLogin:
    """The account's login: PLAIN with its password, or its OAuth mechanism with the IMAP connections'
    token (a refused token is dropped from the source); a secret that cannot be had is a refused login."""
    try:
        got = secret_now(account, credentials)
    except SecretUnavailable as exc:
        raise SieveLoginRefused(Stage.LOGIN, exc.reason) from None
    return SieveLogin(got.username, got.mechanism, lambda _: got.secret, got.refused)


@contextmanager
def managesieve(account: AccountConfig, credentials: Credentials) -> Iterator[SieveScripts]:
    """A logged-in ManageSieve session on the account's server, logged out on leaving."""
    session = open_session(sieve_server(account), sieve_login(account, credentials))
    try:
        yield session
    finally:
        session.close()

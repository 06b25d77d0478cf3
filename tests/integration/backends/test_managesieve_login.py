"""Logging in to ManageSieve through ``managesieve/``'s session on Dovecot: STARTTLS then PLAIN, XOAUTH2 or
OAUTHBEARER with a token the server's introspection knows; a refused secret is told to the login (a
token source drops its token) and is ``SieveLoginRefused``; a mechanism the server lacks is refused
before any secret is asked; STARTTLS is required unless the account says ``plain``."""

from __future__ import annotations

import secrets

import pytest

from mail_imap_mcp.managesieve.errors import SieveLoginRefused
from mail_imap_mcp.managesieve.session import SieveLogin, SieveServer, open_session
from tests.support.servers.oauth2 import IntrospectionEndpoint
from tests.support.servers.sieve import SieveDovecot


def _server(sieve_dovecot: SieveDovecot, security: str = "starttls") -> SieveServer:
    return SieveServer("127.0.0.1", sieve_dovecot.managesieve_port, security, sieve_dovecot.ca_file)


@pytest.mark.parametrize("mechanism", ["XOAUTH2", "OAUTHBEARER"])
def test_a_token_logs_in_and_a_refused_one_is_told(
    mechanism: str, sieve_dovecot: SieveDovecot, introspection: IntrospectionEndpoint
) -> None:
    user, token = sieve_dovecot.new_user(), secrets.token_urlsafe(16)
    introspection.accept(token, user)
    session = open_session(_server(sieve_dovecot), SieveLogin(user, mechanism, lambda _: token))
    try:
        assert session.list_scripts() == []
        assert session.capabilities().starttls is False  # said again after the handshake, without it
    finally:
        session.close()
    told: list[str] = []
    with pytest.raises(SieveLoginRefused):
        open_session(
            _server(sieve_dovecot), SieveLogin(user, mechanism, lambda _: "not-a-token", told.append)
        )
    assert told == ["not-a-token"]


def test_a_password_is_refused_and_a_mechanism_the_server_lacks_is_never_asked(
    sieve_dovecot: SieveDovecot,
) -> None:
    user = sieve_dovecot.new_user()
    with pytest.raises(SieveLoginRefused, match="Authentication failed"):
        open_session(_server(sieve_dovecot), SieveLogin(user, "PLAIN", lambda _: "wrong"))
    asked: list[float] = []
    with pytest.raises(SieveLoginRefused, match="not SCRAM-SHA-256"):
        open_session(
            _server(sieve_dovecot), SieveLogin(user, "SCRAM-SHA-256", lambda t: str(asked.append(t)))
        )
    assert asked == []
    plain = open_session(
        _server(sieve_dovecot, "plain"), SieveLogin(user, "PLAIN", lambda _: sieve_dovecot.password)
    )
    plain.close()

"""The Sieve scripts' contract (tests/support/mail/sieve_contract.py) on Dovecot's Pigeonhole and Cyrus's
timsieved through ``managesieve/``'s session (STARTTLS, PLAIN), each case as a user of its own; the pure
tier runs the same cases on the in-memory fake (tests/pure/test_sieve_contract.py)."""

from __future__ import annotations

import pytest

from mail_imap_mcp.managesieve.session import SieveLogin, SieveServer, open_session
from tests.support.mail.sieve_contract import CASES, PIGEONHOLE, TIMSIEVED
from tests.support.servers.sieve import SieveCyrus, SieveDovecot

SERVERS = {"pigeonhole": ("sieve_dovecot", PIGEONHOLE), "timsieved": ("sieve_cyrus", TIMSIEVED)}


@pytest.mark.parametrize("server_name", sorted(SERVERS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_servers_keep_the_contract(case: str, server_name: str, request: pytest.FixtureRequest) -> None:
    fixture, flavour = SERVERS[server_name]
    server: SieveDovecot | SieveCyrus = request.getfixturevalue(fixture)
    user = server.new_user()
    where = SieveServer("127.0.0.1", server.managesieve_port, "starttls", server.ca_file)
    session = open_session(where, SieveLogin(user, "PLAIN", lambda _: server.password))
    try:
        CASES[case](session, flavour)
    finally:
        session.close()

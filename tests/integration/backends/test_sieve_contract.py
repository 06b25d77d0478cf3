"""The Sieve scripts' contract (tests/support/mail/sieve_contract.py) on Dovecot's Pigeonhole through
``managesieve/``'s session (STARTTLS, PLAIN), each case as a user of its own; the pure tier runs the same
cases on the in-memory fake (tests/pure/test_sieve_contract.py)."""

from __future__ import annotations

import pytest

from mail_imap_mcp.managesieve.session import SieveLogin, SieveServer, open_session
from tests.support.mail.sieve_contract import CASES
from tests.support.servers.sieve import SieveDovecot


@pytest.mark.parametrize("case", sorted(CASES))
def test_pigeonhole_keeps_the_contract(case: str, sieve_dovecot: SieveDovecot) -> None:
    user = sieve_dovecot.new_user()
    server = SieveServer("127.0.0.1", sieve_dovecot.managesieve_port, "starttls", sieve_dovecot.ca_file)
    session = open_session(server, SieveLogin(user, "PLAIN", lambda _: sieve_dovecot.password))
    try:
        CASES[case](session)
    finally:
        session.close()

"""A ManageSieve session when the connection fails (``managesieve/session.py``), on Dovecot behind the
fault proxy (plaintext, so the proxy sees the commands): a change whose answer is lost is an unknown
outcome, never retried (the server may have made it: here it did); a read whose connection is lost is
the server unavailable; a server gone silent ends the wait within the command's time."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mail_imap_mcp.mail.sieve_errors import SieveOutcomeUnknown
from mail_imap_mcp.managesieve.errors import SieveTimedOut, SieveUnavailable
from mail_imap_mcp.managesieve.session import ManageSieveSession, SieveLogin, SieveServer, open_session
from tests.support.patience import patient
from tests.support.servers.faultproxy import FaultProxy
from tests.support.servers.sieve import SieveDovecot


@pytest.fixture
def proxy(sieve_dovecot: SieveDovecot) -> Iterator[FaultProxy]:
    with FaultProxy("127.0.0.1", sieve_dovecot.managesieve_port) as started:
        yield started


def _session(
    sieve_dovecot: SieveDovecot, port: int, user: str, command_timeout_s: float | None = None
) -> ManageSieveSession:
    """A session through ``port``; its command time the product's under test, else a patient 30 s."""
    timeout = patient(30.0) if command_timeout_s is None else command_timeout_s
    server = SieveServer("127.0.0.1", port, "plain", command_timeout_s=timeout)
    return open_session(server, SieveLogin(user, "PLAIN", lambda _: sieve_dovecot.password))


def test_a_change_whose_answer_is_lost_is_an_unknown_outcome(
    sieve_dovecot: SieveDovecot, proxy: FaultProxy
) -> None:
    user = sieve_dovecot.new_user()
    session = _session(sieve_dovecot, proxy.port, user)
    proxy.cut_after_sent(b"PUTSCRIPT")
    with pytest.raises(SieveOutcomeUnknown) as unknown:
        session.put_script("rules", "keep;\r\n")
    assert (unknown.value.command, unknown.value.name, unknown.value.changed_nothing) == (
        "PUTSCRIPT",
        "rules",
        False,
    )
    session.close()
    direct = _session(sieve_dovecot, sieve_dovecot.managesieve_port, user)
    assert [entry.name for entry in direct.list_scripts()] == ["rules"]  # it happened: never sent twice
    direct.close()


def test_a_read_whose_connection_is_lost_is_the_server_unavailable(
    sieve_dovecot: SieveDovecot, proxy: FaultProxy
) -> None:
    session = _session(sieve_dovecot, proxy.port, sieve_dovecot.new_user())
    proxy.drop_when_sent(b"LISTSCRIPTS")
    with pytest.raises(SieveUnavailable):
        session.list_scripts()
    session.close()


def test_a_silent_server_ends_the_wait_within_the_commands_time(
    sieve_dovecot: SieveDovecot, proxy: FaultProxy
) -> None:
    session = _session(sieve_dovecot, proxy.port, sieve_dovecot.new_user(), command_timeout_s=0.5)
    proxy.blackhole()
    with pytest.raises(SieveTimedOut):
        session.list_scripts()
    session.close()

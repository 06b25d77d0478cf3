"""Rules only where the server offers ManageSieve (issue 91), through the MCP SDK's client: a custom server
whose ManageSieve port answers in another protocol (Courier, whose IMAP port stands in for it), refuses the
connection, or accepts it and says nothing is found so at startup, in the background: imap_manage_rules is
then unlisted, imap_list_accounts says why in a few words, and a call is refused by the capability itself
(``unsupported``), within the account's connect_timeout_s for a server that hangs. Dovecot's Pigeonhole is
found to offer it, and the tool is listed."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import pytest

from mail_imap_mcp.config import Config
from mail_imap_mcp.mail.sieve_presence import SIEVE_PRESENCE, Endpoint
from tests.support.accounts import account_settings
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.patience import eventually, patient
from tests.support.servers.courier import Courier
from tests.support.servers.sieve import SieveDovecot
from tests.support.shared.rules import TOOL, rules_config

pytestmark = pytest.mark.anyio


@contextmanager
def looked_at(endpoint: Endpoint) -> Iterator[Endpoint]:
    """``endpoint``, looked at again by the next test that meets it (this process's verdict forgotten)."""
    SIEVE_PRESENCE.forget(endpoint)
    try:
        yield endpoint
    finally:
        SIEVE_PRESENCE.forget(endpoint)


async def _unlisted_and_refused(mcp: EnvelopeClient, endpoint: Endpoint, why: str) -> None:
    """Once the background look found ``why``: the tool unlisted, the account's words, a call refused."""
    eventually(lambda: SIEVE_PRESENCE.known(endpoint), within=10, what="the server's ManageSieve looked at")
    assert SIEVE_PRESENCE.absent(endpoint) == why
    tools = {tool.name for tool in (await mcp.client.list_tools()).tools}
    assert TOOL not in tools
    accounts = await mcp.ok("imap_list_accounts")
    assert accounts["accounts"][0]["rules"] == f"unavailable: {why}"
    tried = {"action": "try", "name": "School", "query": "from:school.example", "mailbox": "INBOX"}
    arguments: dict[str, Any]
    for arguments in ({"action": "list"}, tried):
        refused = await mcp.fail(TOOL, arguments, "unsupported")
        assert why in refused["error"]["message"] and "nothing was changed" in refused["error"]["message"]
        assert refused["error"]["details"]["setting"] == "host in [accounts.default.sieve]"


async def test_courier_has_no_managesieve_so_rules_are_unlisted_and_refused(courier: Courier) -> None:
    user = courier.new_user()
    port = courier.plain_port  # a port that answers, in IMAP (Courier offers no ManageSieve at all)
    account = account_settings(courier, user, rules_enabled=True, sieve={"port": port})
    with looked_at((courier.host, port)) as endpoint:
        async for mcp in open_client(make_config({"default": account})):
            why = f"no ManageSieve on this server (port {port} answered in another protocol)"
            await _unlisted_and_refused(mcp, endpoint, why)


def _account_on(server: SieveDovecot, user: str, port: int, **settings: Any) -> Config:
    """``user``'s account with rules on, its ManageSieve named at ``port`` of the loopback address."""
    account = account_settings(server, user, rules_enabled=True, sieve={"port": port}, **settings)
    return make_config({"default": account})


def _free_port() -> socket.socket:
    """A socket bound to a loopback port nothing listens on (held, so no other test takes the port)."""
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    return held


async def test_a_port_that_refuses_the_connection_is_no_managesieve(sieve_dovecot: SieveDovecot) -> None:
    user = sieve_dovecot.new_user()
    with _free_port() as held:
        port = held.getsockname()[1]
        with looked_at(("127.0.0.1", port)) as endpoint:
            async for mcp in open_client(_account_on(sieve_dovecot, user, port)):
                why = f"no ManageSieve on this server (port {port} refused the connection)"
                await _unlisted_and_refused(mcp, endpoint, why)


async def test_a_port_that_never_answers_is_refused_within_the_connect_timeout(
    sieve_dovecot: SieveDovecot,
) -> None:
    """A server that accepts the connection and says nothing: a call made at once waits for the look begun
    at startup (one at a time), which gives up after connect_timeout_s; the call is the capability's
    refusal."""
    user = sieve_dovecot.new_user()
    with socket.create_server(("127.0.0.1", 0), backlog=8) as silent:  # never accepted: the kernel's backlog
        port = silent.getsockname()[1]
        config = _account_on(sieve_dovecot, user, port, connect_timeout_s=1)
        with looked_at(("127.0.0.1", port)) as endpoint:
            async for mcp in open_client(config):
                with anyio.fail_after(patient(10)):
                    refused = await mcp.fail(TOOL, {"action": "list"}, "unsupported")
                why = f"no ManageSieve on this server (port {port} did not answer in 1 s)"
                assert why in refused["error"]["message"]
                await _unlisted_and_refused(mcp, endpoint, why)


async def test_dovecot_offers_managesieve_so_rules_are_listed(sieve_dovecot: SieveDovecot) -> None:
    user = sieve_dovecot.new_user()
    with looked_at(("127.0.0.1", sieve_dovecot.managesieve_port)) as endpoint:
        async for mcp in open_client(rules_config(sieve_dovecot, user, rules_enabled=True)):
            eventually(lambda: SIEVE_PRESENCE.known(endpoint), within=10, what="Pigeonhole looked at")
            assert SIEVE_PRESENCE.absent(endpoint) is None
            assert TOOL in {tool.name for tool in (await mcp.client.list_tools()).tools}
            assert (await mcp.ok("imap_list_accounts"))["accounts"][0]["rules"] == "on"
            assert (await mcp.ok(TOOL, {"action": "list"}))["rules"] == []

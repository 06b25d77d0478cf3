"""Fault injection: every read tool against resets, blackholes, latency, refusals, kicks and restarts.

The MCP server reaches Dovecot through :class:`tests.support.servers.faultproxy.FaultProxy` (TLS passes through
it, so certificates are still verified). Accounts use small budgets -- connect 1 s, command 2 s -- so a
call must return within ``connect + command + retry backoff`` seconds; every call here is asserted to
return a valid envelope (EnvelopeClient checks each one) within that budget plus one second, with
``timeout`` or ``unavailable`` and ``retryable: true`` when recovery is impossible, and success when it
is possible.

Every scenario ends with the same checks (fixture teardown): once the fault is cleared the next call
succeeds (nothing crashed or stayed wedged), the account holds at most one connection, none survives
shutdown, and no thread is left behind apart from anyio's pooled worker threads.

docs/reliability.md tabulates the outcomes these tests assert.
"""

from __future__ import annotations

import base64
import contextlib
import re
import socket
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any

import anyio
import anyio.to_thread
import imapclient
import pytest
from mcp import Client

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import Config
from mail_imap_mcp.imap.changes_token import ChangesToken
from mail_imap_mcp.imap.connection import RETRY_BACKOFF_S, AccountConnection
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.mail.errors import MailError
from mail_imap_mcp.presentation.failures import tool_failure
from mail_imap_mcp.server import build_server
from mail_imap_mcp.state.request_user import ANONYMOUS
from tests.support.accounts import account_settings
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config
from tests.support.mail.mailgen import corpus, plain_message
from tests.support.patience import eventually, eventually_async, patient
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.faultproxy import FaultProxy

# Each test waits out a timeout or a fault on purpose (about 2 s each, 70 of them): the full run only.
pytestmark = [pytest.mark.anyio, pytest.mark.slow]

#: The account's connect timeout, with the run's patience: a TLS handshake through the proxy took over a
#: second on a loaded run (load 13 on 2 cores), and a reset scenario answered ``timeout`` instead of what
#: it tests. The command timeout stays as it is: the scenarios wait it out on purpose.
CONNECT_S = patient(1.0)
COMMAND_S = 2.0
#: A call's budget (docs/reliability.md), which a timeout names in its details (budget_s).
BUDGET_S = CONNECT_S + COMMAND_S
#: When the test stops waiting for a call: one second past the most a call may take (its budget and the
#: retry's back-off), with the run's patience. How fast a call ends is scripts/bench's, not a test's.
LIMIT_S = BUDGET_S + RETRY_BACKOFF_S + 1.0

#: A call of many round trips: a search of every mailbox by non-ASCII text reads one mailbox after the
#: other (EXAMINE, then a ``SEARCH CHARSET`` whose literal waits for the server), 38 round trips over 12
#: folders holding :data:`CHARSET_MAIL` (a listing with counts, 2 round trips since issue 80, was it).
CHARSET_SEARCH = ("imap_search_messages", {"mailbox": "*", "subject": "café"})
CHARSET_MAIL = plain_message("café au lait", "a body")

READ_TOOLS = [
    "imap_list_mailboxes",
    "imap_search_messages",
    "imap_get_message",
    "imap_get_message_raw",
    "imap_get_thread",
    "imap_get_changes",
]

#: Server bytes after which ``reset_after`` cuts a warm connection: inside each tool's main response
#: (LIST ~100 B, the summaries FETCH ~17 KB, the 345 KB body FETCH, the 64 KiB raw window).
MID_RESPONSE_BYTES = {
    "imap_list_mailboxes": 40,
    "imap_search_messages": 4096,
    "imap_get_message": 256 * 1024,
    "imap_get_message_raw": 16 * 1024,
    "imap_get_thread": 2048,
    "imap_get_changes": 4096,
}

#: Large enough that get_message's body FETCH is cut well inside (at 256 KB) and its body is cut at
#: body_max_chars; every test seeds it, so no larger (it was 1 MB).
BIG_BODY = "".join(
    f"line {i:05d} of a large plain-text body, about 345 kilobytes in all..\r\n" for i in range(5_000)
)
BIG_UID = 6  # corpus(5) first, then the big message
THREAD_POOL_NAMES = ("AnyIO worker thread",)


@dataclass
class Rig:
    """One scenario's world: a fresh user, a proxy in front of Dovecot, an MCP client."""

    dovecot: Dovecot
    proxy: FaultProxy
    user: str
    app: AppContext
    mcp: EnvelopeClient
    uidvalidity: int

    @property
    def connection(self) -> AccountConnection:
        return self.app.connection("default")

    @property
    def big_message_id(self) -> str:
        return f"imap:default:INBOX:{self.uidvalidity}:{BIG_UID}"

    def args(self, tool: str) -> dict[str, Any]:
        arguments: dict[str, dict[str, Any]] = {
            "imap_list_mailboxes": {},
            "imap_search_messages": {"limit": 10},
            "imap_get_message": {"message_id": self.big_message_id, "body_max_chars": 60_000},
            "imap_get_message_raw": {"message_id": self.big_message_id, "max_bytes": 57_344},
            "imap_get_thread": {"message_id": self.big_message_id},
            # Everything is new since this token: the CHANGEDSINCE plan, then the page's summaries.
            "imap_get_changes": {
                "since": ChangesToken("default", "INBOX", self.uidvalidity, 1, 1, 0).encode(ANONYMOUS)
            },
        }
        return arguments[tool]

    async def call(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call ``tool``; a call that never ends fails the test (which limit ended a timeout is
        asserted from the error's own details, never from the wall clock)."""
        with anyio.fail_after(patient(LIMIT_S)):
            return await self.mcp.call(tool, self.args(tool) if arguments is None else arguments)

    async def succeeds(self, tool: str) -> dict[str, Any]:
        envelope = await self.call(tool)
        assert envelope["success"], envelope["error"]
        data: dict[str, Any] = envelope["data"]
        check_data(tool, data)
        return data

    async def recovered(self) -> bool:
        """Whether the account answers again (``imap_list_mailboxes`` succeeds). A timeout of the reconnect
        is asked again: it is bounded by the scenario's short connect limit, which a loaded machine's TLS
        handshake can pass; any other failure fails at once, and a wedged account runs out of patience."""
        envelope = await self.call("imap_list_mailboxes")
        if envelope["success"]:
            check_data("imap_list_mailboxes", envelope["data"])
            return True
        error = envelope["error"]
        assert error["code"] == "timeout" and "while connecting" in error["message"], error
        return False

    async def fails(self, tool: str, code: str) -> dict[str, Any]:
        envelope = await self.call(tool)
        assert not envelope["success"], envelope["summary"]
        assert envelope["error"]["code"] == code, envelope["error"]
        assert envelope["error"]["retryable"] is True, envelope["error"]
        return envelope

    def add_folders(self, count: int, *messages: bytes) -> None:
        """Folders next to INBOX holding ``messages`` (none: empty), so a listing with counts needs one
        STATUS each and a search of every mailbox reads each one that holds mail."""
        for i in range(count):
            self.dovecot.seed(self.user, f"Folder {i:02d}", list(messages))

    async def warm_up(self) -> None:
        """Open the account's connection (one login) so the next fault hits a live connection."""
        await self.succeeds("imap_list_mailboxes")
        assert self.connection.logins == 1


def check_data(tool: str, data: dict[str, Any]) -> None:
    """The answer is the real one, not an empty shell."""
    if tool == "imap_list_mailboxes":
        assert data["mailboxes"][0]["name"] == "INBOX"
    elif tool == "imap_search_messages":
        assert len(data["messages"]) == BIG_UID
        assert data["status"] == "ok"
    elif tool == "imap_get_message":
        assert data["message"]["subject"] == "big"
        assert data["message"]["body_text"].startswith("line 00000 of a large")
        assert len(data["message"]["body_text"]) > 59_000  # cut at body_max_chars
    elif tool == "imap_get_thread":
        assert [m["subject"] for m in data["messages"]] == ["big"]
        assert data["status"] == "ok"
    elif tool == "imap_get_changes":
        assert len(data["new"]) == BIG_UID  # every message, newest (the big one) first
        assert data["new"][0]["subject"] == "big"
        assert data["status"] == "ok"
    else:
        assert data["returned_bytes"] == 57_344


def account_config(
    dovecot: Dovecot, user: str, port: int, *, summary_cache_entries: int = 0, **overrides: Any
) -> Config:
    """The scenario's account. No summaries are kept unless asked: a reset is placed by the byte offset
    of a page fetched in full, which a page seen before (flags only) would no longer reach."""
    settings = account_settings(
        dovecot, user, port=port, connect_timeout_s=CONNECT_S, command_timeout_s=COMMAND_S, **overrides
    )
    return make_config({"default": settings}, summary_cache_entries=summary_cache_entries)


def seed_user(dovecot: Dovecot, user: str) -> int:
    """Five corpus messages and a ~345 KB plain-text one in INBOX; returns INBOX's UIDVALIDITY."""
    dovecot.seed(user, "INBOX", [*corpus(5), plain_message("big", BIG_BODY)])
    with dovecot.connect(user) as direct:  # straight to Dovecot, not through the proxy
        return int(direct.select_folder("INBOX", readonly=True)[b"UIDVALIDITY"])


def extra_threads(baseline: set[threading.Thread]) -> list[str]:
    return [
        t.name
        for t in threading.enumerate()
        if t not in baseline and t.is_alive() and not t.name.startswith(THREAD_POOL_NAMES)
    ]


@pytest.fixture
async def rig(dovecot: Dovecot) -> AsyncIterator[Rig]:
    async with scenario_rig(dovecot) as scenario:
        yield scenario


@contextlib.asynccontextmanager
async def scenario_rig(dovecot: Dovecot, **server: Any) -> AsyncIterator[Rig]:
    baseline = set(threading.enumerate())
    user = dovecot.new_user()
    uidvalidity = seed_user(dovecot, user)
    proxy = FaultProxy(dovecot.host, dovecot.tls_port).start()
    app = AppContext.from_config(account_config(dovecot, user, proxy.port, **server))
    try:
        async with Client(build_server(app.config, app)) as client:
            scenario = Rig(dovecot, proxy, user, app, EnvelopeClient(client), uidvalidity)
            yield scenario
            # The scenario is over: clear the fault. Nothing may have crashed or stayed wedged ...
            proxy.pass_through()
            await eventually_async(scenario.recovered, what="the account answering after the fault")
            # ... and the account holds one connection at most (closed ones drain in milliseconds).
            assert proxy.wait_open_connections(at_most=1) <= 1, "more than one live IMAP connection"
        # Shut down as the CLI does (the app's owner closes it): every connection is closed,
        # every thread gone (anyio pools its workers).
        app.close()
        assert proxy.wait_open_connections(at_most=0) == 0, "an IMAP connection outlived the server"
    finally:
        app.close()  # again when the scenario failed: its keepalive thread must not outlive it
        proxy.stop()
    assert proxy.threads() == []
    assert extra_threads(baseline) == []


# ---------------------------------------------------------------------------------------- resets


@pytest.mark.parametrize("tool", READ_TOOLS)
async def test_reset_mid_response_on_first_connection_recovers_transparently(rig: Rig, tool: str) -> None:
    """Scenario: the live connection is reset in the middle of the tool's response (mid-FETCH for
    get_message's 345 KB body); the retry's new connection is left alone -> success, one reconnect."""
    await rig.warm_up()
    rig.proxy.reset_after(MID_RESPONSE_BYTES[tool], connections=1)
    await rig.succeeds(tool)
    assert rig.connection.logins == 2


@pytest.mark.parametrize("reset_after", [300, 2500, 9000])
async def test_reset_inside_a_search_of_every_mailbox_recovers_with_the_same_page(
    rig: Rig, reset_after: int
) -> None:
    """Scenario: a search of every mailbox (INBOX and Archive, merged, the second page through the
    cursor) is reset at points in its LIST, its per-mailbox SEARCHes and FETCHes -> the retry gives the
    same page as a run without fault, no issue."""
    rig.dovecot.seed(rig.user, "Archive", list(corpus(4, seed=2)))
    arguments = {"mailbox": "*", "limit": 4, "snippet_chars": 50, "fields": "full"}
    await rig.warm_up()
    clean = await rig.call("imap_search_messages", arguments)
    clean_next = await rig.call("imap_search_messages", clean["data"]["next_action"]["arguments"])
    for call, expected in ((arguments, clean), (clean["data"]["next_action"]["arguments"], clean_next)):
        logins = rig.connection.logins
        rig.proxy.reset_after(reset_after, connections=1)
        envelope = await rig.call("imap_search_messages", call)
        assert envelope["success"], envelope["error"]
        assert envelope["data"]["messages"] == expected["data"]["messages"]
        assert envelope["data"]["status"] == "ok"
        assert rig.connection.logins == logins + 1
        rig.proxy.pass_through()


async def test_reset_inside_the_flags_of_a_page_seen_before_recovers_with_the_same_page(
    dovecot: Dovecot,
) -> None:
    """Scenario: with summaries kept, a page seen before fetches only FLAGS and RFC822.SIZE; the connection
    is reset inside its answer -> the retry gives the same page, flags included, on a new connection."""
    async with scenario_rig(dovecot, summary_cache_entries=100) as rig:
        arguments = {"limit": 6, "fields": "full"}
        await rig.warm_up()
        seen = await rig.call("imap_search_messages", arguments)
        sizes = []
        for _ in range(2):  # the first call after the listing may also answer a change of \\Recent
            before = rig.proxy.server_bytes
            quiet = await rig.call("imap_search_messages", arguments)
            sizes.append(rig.proxy.server_bytes - before)
            assert quiet["data"]["messages"] == seen["data"]["messages"]
        logins = rig.connection.logins
        # Two thirds into the answer of a steady call, whose FETCH answer comes last (seen failing once
        # with the reset placed 16 bytes before the end of a first, larger answer).
        rig.proxy.reset_after(min(sizes) * 2 // 3, connections=1)
        again = await rig.call("imap_search_messages", arguments)
        assert again["success"], again["error"]
        assert again["data"]["messages"] == seen["data"]["messages"]
        assert again["data"]["status"] == "ok"
        assert rig.connection.logins == logins + 1


@pytest.mark.parametrize("tool", READ_TOOLS)
async def test_reset_mid_response_on_every_connection_is_unavailable(rig: Rig, tool: str) -> None:
    """Scenario: every connection, the retry's too, is reset after the same number of server bytes
    -> ``unavailable``, retryable."""
    await rig.warm_up()
    rig.proxy.reset_after(MID_RESPONSE_BYTES[tool], connections=None)
    await rig.fails(tool, "unavailable")


@pytest.mark.parametrize("tool", READ_TOOLS)
async def test_reset_of_idle_connection_between_calls_recovers(rig: Rig, tool: str) -> None:
    """Scenario: the idle connection is reset (RST) between two calls -> the next call succeeds."""
    await rig.warm_up()
    assert rig.proxy.reset_connections() == 1
    await rig.succeeds(tool)
    assert rig.connection.logins == 2


async def test_reset_mid_status_of_a_listing_with_counts_recovers_every_count(rig: Rig) -> None:
    """Scenario: the connection is reset among the STATUS commands of a listing with counts, where
    each STATUS failure is absorbed per mailbox -> the read still reruns on a new connection and every
    count is there (no partial answer from a dead connection)."""
    rig.add_folders(12)
    await rig.warm_up()
    rig.proxy.reset_after(1500, connections=1)  # the LIST answer is ~1 KB; STATUS answers follow
    envelope = await rig.call("imap_list_mailboxes", {"include_counts": True})
    assert envelope["success"], envelope["error"]
    data = envelope["data"]
    assert data["status"] == "ok" and data["issues"] == []
    assert all(m["messages"] is not None for m in data["mailboxes"])
    assert rig.connection.logins == 2


# ------------------------------------------------------------------------------------ blackholes


@pytest.mark.parametrize("tool", READ_TOOLS)
async def test_blackhole_on_live_connection_times_out(rig: Rig, tool: str) -> None:
    """Scenario: the live connection goes silent (nothing forwarded either way) -> ``timeout`` after
    the command timeout; the connection is dropped, not retried."""
    await rig.warm_up()
    rig.proxy.blackhole()
    envelope = await rig.fails(tool, "timeout")
    assert envelope["error"]["details"]["timeout_s"] == COMMAND_S
    assert rig.proxy.accepted == 1, "a timeout must not be retried on a new connection"


@pytest.mark.parametrize("tool", READ_TOOLS)
async def test_blackhole_on_new_connection_times_out(rig: Rig, tool: str) -> None:
    """Scenario: the proxy accepts the TCP connection but never answers (no TLS handshake, no
    greeting) -> ``timeout`` after the connect timeout."""
    rig.proxy.blackhole()
    envelope = await rig.fails(tool, "timeout")
    assert envelope["error"]["details"]["timeout_s"] == CONNECT_S


@pytest.mark.parametrize("tool", READ_TOOLS)
async def test_reset_then_blackholed_retry_times_out_within_budget(rig: Rig, tool: str) -> None:
    """Scenario: the live connection is reset, and the retry's new connection meets a blackhole
    -> ``timeout``; reconnecting stays inside the one budget of the call."""
    await rig.warm_up()
    rig.proxy.blackhole()
    rig.proxy.reset_connections()
    await rig.fails(tool, "timeout")
    assert rig.proxy.accepted == 2


async def test_reset_during_a_slow_call_keeps_the_retry_inside_the_call_budget(rig: Rig) -> None:
    """Scenario: a slow server (0.2 s each way) resets the connection in the middle of a call (inside
    its LIST answer); the retry reconnects to the same slow server and needs more round trips than the
    budget has left -> ``timeout`` within the budget (the retry gets what is left, not a budget of its
    own)."""
    rig.add_folders(12, CHARSET_MAIL)
    await rig.warm_up()
    rig.proxy.set_latency(0.2)
    # Placed by the wire, not a timer: a reset 1.5 s after the start could, on a loaded machine, land
    # before the call had begun or after its budget was spent. The LIST answer with 12 folders is ~1 KB.
    rig.proxy.reset_after(500, connections=1)
    envelope = await rig.call(*CHARSET_SEARCH)
    assert not envelope["success"]
    assert envelope["error"]["code"] == "timeout"
    assert rig.proxy.accepted == 2, "the retry must have tried a new connection"


# --------------------------------------------------------------------------------------- latency


@pytest.mark.parametrize("tool", READ_TOOLS)
async def test_added_latency_still_succeeds(rig: Rig, tool: str) -> None:
    """Scenario: 50 ms added to every chunk in both directions, from the first connect on -> success."""
    rig.proxy.set_latency(0.05)
    await rig.succeeds(tool)


@pytest.mark.parametrize("tool", READ_TOOLS)
async def test_latency_beyond_command_timeout_times_out(rig: Rig, tool: str) -> None:
    """Scenario: the live connection's answers arrive 2.5 s late, beyond the 2 s command timeout
    -> ``timeout``."""
    await rig.warm_up()
    rig.proxy.set_latency(2.5)
    await rig.fails(tool, "timeout")


async def test_slow_server_with_many_round_trips_times_out_within_the_call_budget(rig: Rig) -> None:
    """Scenario: every round trip takes 0.4 s (well inside the command timeout), but a search of 13
    mailboxes by non-ASCII text needs 38 of them -> ``timeout`` at the call budget, not 15 s later."""
    rig.add_folders(12, CHARSET_MAIL)
    await rig.warm_up()
    rig.proxy.set_latency(0.2)
    envelope = await rig.call(*CHARSET_SEARCH)
    assert not envelope["success"]
    assert envelope["error"]["code"] == "timeout"
    assert envelope["error"]["details"]["budget_s"] == BUDGET_S, envelope["error"]
    assert envelope["error"]["retryable"] is True


async def test_two_concurrent_calls_on_a_silent_server_both_return_within_budget(rig: Rig) -> None:
    """Scenario: two calls on one account while its connection is blackholed; the second waits for
    the first (calls are serialised) -> both ``timeout``, each within its own budget."""
    await rig.warm_up()
    rig.proxy.blackhole()
    envelopes: list[dict[str, Any]] = []

    async def one(tool: str) -> None:
        envelopes.append(await rig.call(tool))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(one, "imap_list_mailboxes")
        tasks.start_soon(one, "imap_search_messages")
    assert [e["error"]["code"] for e in envelopes] == ["timeout", "timeout"]
    # The first names the budget it used up; the second's ran out waiting for the account (busy) or in
    # its connect on what was left of it (the connect timeout).
    assert [e["error"]["details"].get("budget_s") for e in envelopes] == [BUDGET_S, None], envelopes
    assert envelopes[1]["error"]["details"].get("timeout_s") in (None, CONNECT_S), envelopes


# ------------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("tool", READ_TOOLS)
async def test_refused_connection_is_unavailable(rig: Rig, tool: str) -> None:
    """Scenario: nothing listens on the server's port (connection refused) -> ``unavailable``."""
    rig.proxy.refuse()
    await rig.fails(tool, "unavailable")


@pytest.mark.parametrize("tool", READ_TOOLS)
async def test_reset_then_refused_retry_is_unavailable(rig: Rig, tool: str) -> None:
    """Scenario: the live connection is reset and the server refuses new connections -> the retry
    fails -> ``unavailable``."""
    await rig.warm_up()
    rig.proxy.refuse()
    rig.proxy.reset_connections()
    await rig.fails(tool, "unavailable")


# ------------------------------------------------------------------------------- server side


@pytest.mark.parametrize("tool", READ_TOOLS)
async def test_server_kick_between_calls_recovers_transparently(rig: Rig, tool: str) -> None:
    """Scenario: ``doveadm kick`` (as an idle logout does) between two calls -> the next call
    reconnects and succeeds."""
    await rig.warm_up()
    rig.dovecot.kick(rig.user)
    await rig.succeeds(tool)
    assert rig.connection.logins == 2


@pytest.mark.parametrize("tool", READ_TOOLS)
async def test_dovecot_restart_between_calls_recovers_transparently(rig: Rig, tool: str) -> None:
    """Scenario: Dovecot restarts (same ports) between two calls -> the next call reconnects and
    succeeds."""
    await rig.warm_up()
    await anyio.to_thread.run_sync(rig.dovecot.restart)
    await rig.succeeds(tool)
    assert rig.connection.logins == 2


# ----------------------------------------------------------------------------------- retry policy


async def test_calls_without_retry_are_never_retried(rig: Rig) -> None:
    """Scenario: an operation runs with ``retry=False`` (as writes must) and the connection is reset
    under it -> ``unavailable`` with no second attempt; a read afterwards reconnects."""
    await rig.warm_up()
    attempts = 0

    def noop(session: ImapSession) -> None:
        nonlocal attempts
        attempts += 1
        if attempts == 1:  # after the idle check, before the command: the connection dies under it
            rig.proxy.reset_connections()
        session.client.noop()

    with pytest.raises(MailError) as failure:
        await anyio.to_thread.run_sync(lambda: rig.connection.run(noop, retry=False))
    worded = tool_failure(failure.value, None)  # as the tool runner words it
    assert worded is not None and worded.code == "unavailable"
    assert worded.retryable is True
    assert attempts == 1
    assert rig.proxy.accepted == 1, "no reconnect for an operation that must not be retried"

    await anyio.to_thread.run_sync(lambda: rig.connection.run(noop))
    assert attempts == 2
    assert rig.connection.logins == 2


async def test_a_connection_reset_while_idle_is_replaced_before_anything_is_sent(rig: Rig) -> None:
    """Scenario: the idle connection is reset between calls, then an operation runs with ``retry=False``
    -> the reset is seen on the socket before the operation sends anything, so it runs once, on a new
    connection, and succeeds (nothing was sent on the dead one, so nothing is replayed)."""
    await rig.warm_up()
    rig.proxy.reset_connections()
    attempts = 0

    def noop(session: ImapSession) -> None:
        nonlocal attempts
        attempts += 1
        session.client.noop()

    await anyio.to_thread.run_sync(lambda: rig.connection.run(noop, retry=False))
    assert attempts == 1
    assert rig.connection.found_closed == 1
    assert rig.connection.logins == 2


# ------------------------------------------------------------------------------------ the proxy


async def test_proxy_logs_the_bytes_that_reached_the_server(dovecot: Dovecot) -> None:
    """The proxy's log shows what the client sent: over a plaintext account, get_message examines the
    mailbox read-only and fetches with BODY.PEEK only (never SELECT, never a flag-setting BODY[])."""
    user = dovecot.new_user()
    uidvalidity = seed_user(dovecot, user)
    with FaultProxy(dovecot.host, dovecot.plain_port) as proxy:
        config = account_config(dovecot, user, proxy.port, security="plain", ca_file=None)
        async with Client(build_server(config)) as client:
            mcp = EnvelopeClient(client)
            await mcp.ok("imap_get_message", {"message_id": f"imap:default:INBOX:{uidvalidity}:1"})
        sent = proxy.sent()
    assert f"LOGIN {user} ".encode() in sent
    assert b' EXAMINE "INBOX"' in sent or b" EXAMINE INBOX" in sent
    assert b" SELECT " not in sent
    assert b"BODY.PEEK[" in sent
    assert not re.search(rb"[ (]BODY\[", sent), "a non-PEEK fetch would mark the message as read"


async def test_proxy_stops_cleanly_with_open_and_blackholed_connections(dovecot: Dovecot) -> None:
    """stop() closes live and blackholed connections and joins every thread it started."""
    baseline = set(threading.enumerate())
    proxy = FaultProxy(dovecot.host, dovecot.tls_port).start()
    live = dovecot_client_via(proxy, dovecot)
    proxy.blackhole()
    silent = socket.create_connection(proxy.address, timeout=patient(1))
    wait_until(lambda: proxy.open_connections == 2)
    proxy.refuse()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(proxy.address, timeout=patient(1))
    proxy.pass_through()  # listens again, on the same port
    with dovecot_client_via(proxy, dovecot) as again:
        again.noop()
    proxy.stop()
    silent.close()
    with contextlib.suppress(Exception):
        live.shutdown()
    assert proxy.threads() == []
    assert extra_threads(baseline) == []


def wait_until(condition: Callable[[], bool], within: float = 2.0) -> None:
    eventually(condition, within=within, interval=0.01)


def dovecot_client_via(proxy: FaultProxy, dovecot: Dovecot) -> imapclient.IMAPClient:
    """A logged-in imapclient connection through ``proxy`` (TLS verified against the test CA)."""
    client = imapclient.IMAPClient(
        "127.0.0.1", port=proxy.port, ssl=True, ssl_context=dovecot.client_ssl_context(), timeout=patient(5)
    )
    client.login(dovecot.new_user(), dovecot.password)
    return client


# ------------------------------------------------------------------------------------- attachments

ATTACHMENT_TEXT = "".join(f"attachment line {i:06d} of a long plain-text file.\n" for i in range(60_000))


def attachment_message() -> bytes:
    """A ~3 MB text attachment (base64: ~4 MB on the wire), whose fetch a reset can cut in the middle."""
    msg = EmailMessage()
    msg["Subject"] = "log attached"
    msg.set_content("See the log.\n")
    msg.add_attachment(ATTACHMENT_TEXT.encode(), maintype="text", subtype="plain", filename="run.log")
    return msg.as_bytes()


@pytest.mark.parametrize("mode", ["bytes", "text"])
async def test_reset_in_the_middle_of_an_attachment_fetch_is_retried_once(rig: Rig, mode: str) -> None:
    """Scenario: the connection is reset 512 KiB into the answer of the attachment's FETCH; the read runs once
    more on a new connection, from the start (nothing of the cut answer is kept) -> exactly the right
    bytes or text; reset on every connection -> ``unavailable``, retryable."""
    rig.dovecot.seed(rig.user, "INBOX", [attachment_message()])
    message_id = f"imap:default:INBOX:{rig.uidvalidity}:{BIG_UID + 1}"
    offset = 2_000_000
    arguments: dict[str, Any] = {"message_id": message_id, "part_id": "2", "mode": mode}
    arguments.update({"offset_bytes": offset, "max_bytes": 4096} if mode == "bytes" else {"offset": offset})
    await rig.warm_up()
    rig.proxy.reset_after(512 * 1024, connections=1)
    envelope = await rig.call("imap_get_attachment", arguments)
    assert envelope["success"], envelope["error"]
    data = envelope["data"]
    if mode == "bytes":
        assert base64.b64decode(data["raw_base64"]) == ATTACHMENT_TEXT.encode()[offset : offset + 4096]
    else:
        assert ATTACHMENT_TEXT[offset:].startswith(data["text"][:1000])
    assert rig.connection.logins == 2
    rig.proxy.reset_after(512 * 1024, connections=None)
    envelope = await rig.call("imap_get_attachment", arguments)
    assert not envelope["success"] and envelope["error"]["code"] == "unavailable", envelope["summary"]
    assert envelope["error"]["retryable"] is True

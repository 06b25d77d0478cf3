"""A run on a whole search over a slow or failing link, on Dovecot (UID MOVE) and Courier (no MOVE: UID
COPY, then STORE ``\\Deleted`` and UID EXPUNGE), through the MCP client (issue 78 item 6).

The account reaches its server through tests/support/servers/faultproxy.py with a ``command_timeout_s`` of a few
seconds. Each test counts every Message-ID in every mailbox before and after (none lost, none twice):
a run longer than one call's budget finishes; a first chunk whose answer was lost is found out on a fresh
connection and counted done; a chunk whose answer was lost and could not be found out is
unknown, and the search run again (as the answer advises) copies nothing twice, and both undos put every
message back; a late answer is said to be late, not a lost connection; a slow link does not shrink the
chunks, and a cancel under it takes effect after the chunk in flight.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from mail_imap_mcp.imap.uidplus import parse_uid_set
from mail_imap_mcp.operations import bulk
from mail_imap_mcp.operations.chunk_sizes import ChunkSizes
from tests.support.accounts import account_settings
from tests.support.clients.in_process import make_config, open_client
from tests.support.mail.mail_state import flag_snapshot, message_id_counts
from tests.support.servers.courier import Courier
from tests.support.servers.faultproxy import FaultProxy
from tests.support.servers.matrix import MatrixServer
from tests.support.shared.write_by_search import (
    APPLY,
    FLAGS,
    MATCHING,
    QUERY,
    cancelled_once_reached,
    clean,
    matching_ids,
    paused_once_done,
    seed,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.parametrize("imap_server", ["dovecot", "courier"], indirect=True),
]


@pytest.fixture
def proxy(imap_server: MatrixServer) -> Iterator[FaultProxy]:
    with FaultProxy(imap_server.host, imap_server.plain_port) as proxied:
        yield proxied


def proxied_config(server: MatrixServer, proxy: FaultProxy, user: str, **settings: Any) -> Any:
    """The account through ``proxy`` in plain text (its commands readable in ``proxy.sent()``)."""
    extra = {"trash_mailbox": server.mailbox_name("Trash")} if isinstance(server, Courier) else {}
    account = account_settings(
        server,
        user,
        host="127.0.0.1",
        port=proxy.port,
        security="plain",
        ca_file=None,
        connect_timeout_s=2,
        command_timeout_s=3,
        **extra,
    )
    return make_config({"default": account}, write_enabled=True, bulk_approval_threshold=1000, **settings)


def move_command(server: MatrixServer) -> bytes:
    """The command that moves (or, without MOVE, copies) a chunk."""
    return b" UID COPY " if isinstance(server, Courier) else b" UID MOVE "


def chunk_sizes(proxy: FaultProxy, command: bytes) -> list[int]:
    """The number of UIDs each ``command`` the proxy forwarded named, in order."""
    sent = proxy.sent()
    return [len(parse_uid_set(part.split(b" ", 1)[0].decode())) for part in sent.split(command)[1:]]


@pytest.fixture
def fixed_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bulk, "CHUNKS", ChunkSizes(first=25, least=25, most=25))


async def test_a_run_longer_than_one_calls_budget_finishes(
    imap_server: MatrixServer, user: str, proxy: FaultProxy, fixed_chunks: None
) -> None:
    """Twelve chunks over a slow link (0.25 s each way to Dovecot, 0.15 s to Courier, which answers in
    more round trips) take longer than one call's 5 s: each chunk has the call's budget, so the run ends
    with every message moved, once."""
    seed(imap_server, user)
    trash = imap_server.mailbox_name("Trash")
    start = clean(message_id_counts(imap_server, user))
    proxy.set_latency(0.15 if isinstance(imap_server, Courier) else 0.25)
    async for mcp in open_client(proxied_config(imap_server, proxy, user, background_after_s=60)):
        done = await mcp.ok(APPLY, {"query": QUERY, "mailbox": "INBOX", "action": "delete"})
        run = done["search"]
        assert (run["done"], run["outcome_unknown"], run["not_attempted"]) == (MATCHING, 0, 0), done
        assert done["status"] == "ok"
        assert chunk_sizes(proxy, move_command(imap_server)) == [25] * (MATCHING // 25)
    proxy.pass_through()
    after = clean(message_id_counts(imap_server, user))
    assert after[trash] == matching_ids() and after["INBOX"] == start["INBOX"] - matching_ids()


async def test_a_first_chunk_whose_answer_was_lost_is_found_out_on_a_fresh_connection_and_undone(
    imap_server: MatrixServer, user: str, proxy: FaultProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first chunk's command reaches the server, its answer does not (Courier: its 50 copied, still in
    INBOX too). The run looks on a new connection, finds them in the destination by Message-ID, size and
    date (Courier: only their originals are removed), and goes on: every match moved once, the command never
    sent again, and the undo puts back all of them. (Regression: Courier's EXAMINE of the destination
    named no UIDNEXT, the look searched ``UID 0:*`` and the run failed.)"""
    monkeypatch.setattr(bulk, "CHUNKS", ChunkSizes(first=50, least=50, most=50))
    seed(imap_server, user)
    trash = imap_server.mailbox_name("Trash")
    start = clean(message_id_counts(imap_server, user))
    command = move_command(imap_server)
    proxy.cut_after_sent(command, times=1)
    async for mcp in open_client(proxied_config(imap_server, proxy, user, background_after_s=60)):
        done = await mcp.ok(APPLY, {"query": QUERY, "mailbox": "INBOX", "action": "delete"})
        run = done["search"]
        assert (run["done"], run["outcome_unknown"], run["not_attempted"]) == (MATCHING, 0, 0), done
        assert done["status"] == "ok" and proxy.cuts == 1
        assert chunk_sizes(proxy, command) == [50] * (MATCHING // 50), "a chunk was sent again"
        moved = clean(message_id_counts(imap_server, user))
        assert moved[trash] == matching_ids() and moved["INBOX"] == start["INBOX"] - matching_ids()
        back = await mcp.ok(APPLY, done["next_action"]["arguments"])
        assert back["search"]["done"] == MATCHING
    assert clean(message_id_counts(imap_server, user)) == start


async def test_a_chunk_cut_for_good_is_unknown_and_the_rerun_and_both_undos_lose_and_double_nothing(
    imap_server: MatrixServer, user: str, proxy: FaultProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The third chunk's command reaches the server and the link goes down for good: its outcome is
    unknown (Courier: its 50 copied, still in INBOX too). The search run again moves the rest, and copies
    none of those 50 again (the destination holds them: only their originals go); each undo puts its
    batch back."""
    monkeypatch.setattr(bulk, "CHUNKS", ChunkSizes(first=50, least=50, most=50))
    seed(imap_server, user)
    trash = imap_server.mailbox_name("Trash")
    start = clean(message_id_counts(imap_server, user))
    command = move_command(imap_server)
    proxy.cut_after_sent(command, times=3, then_refuse=True)
    search = {"query": QUERY, "mailbox": "INBOX", "action": "delete"}
    async for mcp in open_client(proxied_config(imap_server, proxy, user, background_after_s=60)):
        first = await mcp.ok(APPLY, search)
        run = first["search"]
        assert (run["done"], run["outcome_unknown"], run["not_attempted"]) == (100, 50, 150), first
        assert {issue["code"] for issue in first["issues"]} == {"outcome_unknown", "not_attempted"}
        cut = clean(message_id_counts(imap_server, user))
        assert sum(cut[trash].values()) == 150 and set(cut[trash].values()) == {1}
        in_both = 50 if isinstance(imap_server, Courier) else 0
        assert sum((cut["INBOX"] & matching_ids()).values()) == 150 + in_both

        proxy.pass_through()
        rerun = await mcp.ok(APPLY, search)
        assert rerun["search"]["matched"] == 150 + in_both and rerun["search"]["done"] == 150 + in_both
        moved = clean(message_id_counts(imap_server, user))
        assert moved[trash] == matching_ids(), "a message was copied twice, or lost"
        assert moved["INBOX"] == start["INBOX"] - matching_ids()
        # 3 chunks the first time, 3 the second: Courier's 50 held twice are not copied a second time
        assert chunk_sizes(proxy, command) == [50] * 6

        await mcp.ok(APPLY, rerun["next_action"]["arguments"])
        await mcp.ok(APPLY, {"action": "move", "undo": first["search"]["undo_token"]})
    after = clean(message_id_counts(imap_server, user))
    unknown_left = Counter() if in_both else cut[trash] - matching_ids(100)  # a MOVE nobody could name
    assert sum(after.values(), Counter()) == sum(start.values(), Counter())
    assert after.get(trash, Counter()) == unknown_left
    assert after["INBOX"] == start["INBOX"] - unknown_left


async def test_a_late_answer_is_said_to_be_late_not_a_lost_connection(
    imap_server: MatrixServer, user: str, proxy: FaultProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The link goes silent once the second chunk's command is on its way (the server runs it, its answer
    never comes): no answer within command_timeout_s, and the run cannot look again; the answer names the
    setting, not a lost connection. Courier's chunk was copied and is still in INBOX too, as said."""
    monkeypatch.setattr(bulk, "CHUNKS", ChunkSizes(first=50, least=50, most=50))
    seed(imap_server, user)
    start = clean(message_id_counts(imap_server, user))
    proxy.before_sent(move_command(imap_server), proxy.blackhole, times=2)
    async for mcp in open_client(proxied_config(imap_server, proxy, user, background_after_s=60)):
        done = await mcp.ok(APPLY, {"query": QUERY, "mailbox": "INBOX", "action": "delete"})
        run = done["search"]
        assert (run["done"], run["outcome_unknown"], run["not_attempted"]) == (50, 50, 200), done
        (unknown,) = [issue for issue in done["issues"] if issue["code"] == "outcome_unknown"]
        assert "command_timeout_s" in unknown["message"] and "lost" not in unknown["message"], unknown
        (left,) = [issue for issue in done["issues"] if issue["code"] == "not_attempted"]
        assert "did not answer in time" in left["message"], left
    proxy.pass_through()
    after = clean(message_id_counts(imap_server, user))
    assert after[imap_server.mailbox_name("Trash")] == matching_ids(100)
    in_both = matching_ids(100) - matching_ids(50) if isinstance(imap_server, Courier) else Counter()
    assert after["INBOX"] == start["INBOX"] - matching_ids(100) + in_both


async def test_regression_a_slow_link_does_not_shrink_the_chunks_and_a_cancel_stops_after_one(
    imap_server: MatrixServer, user: str, proxy: FaultProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 89 item 12: over a link of 0.15 s each way every chunk waits longer than half a second
    whatever its size, but its waits are the link's, not the server's work: the chunks grow (50, then the
    most, 100; e01db76 shrank each one below the one before), the second without a SELECT of its own (the
    first's left the mailbox selected, nothing sent since: one round trip a chunk), and a cancel asked once
    150 are done stops the run with no chunk sent after it. Counted on the proxy's wire, not timed."""
    monkeypatch.setattr(bulk, "CHUNKS", ChunkSizes(first=50, least=10, most=100))
    seed(imap_server, user)
    start = clean(message_id_counts(imap_server, user))
    reached, released = paused_once_done(monkeypatch, 150)
    proxy.set_latency(0.15)
    config = proxied_config(imap_server, proxy, user, background_after_s=0)
    async for mcp in open_client(config):
        proxy.clear_log()
        polled = await cancelled_once_reached(mcp, reached, released)
    proxy.pass_through()
    assert polled["operation"]["state"] == "canceled", polled
    result = polled["result"]["search"]
    sizes = chunk_sizes(proxy, move_command(imap_server))
    assert sizes == [50, 100], sizes
    after_first = proxy.sent().split(move_command(imap_server), 1)[1]
    assert b" SELECT " not in after_first, "the second chunk selected again: two round trips, not one"
    assert (result["done"], result["not_attempted"]) == (150, MATCHING - 150), result
    after = clean(message_id_counts(imap_server, user))
    assert sum(after[imap_server.mailbox_name("Trash")].values()) == result["done"]
    assert sum(after.values(), Counter()) == sum(start.values(), Counter())  # none lost, none twice


async def test_a_flag_chunk_whose_answer_was_lost_is_stored_again_and_undone_exactly(
    imap_server: MatrixServer, user: str, proxy: FaultProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second chunk's STORE reached the server, its answer did not: on a new connection the chunk is
    stored again (a flag a message has is not changed twice), the run ends with all 300 flagged, and the
    undo takes off exactly the flags it added."""
    monkeypatch.setattr(bulk, "CHUNKS", ChunkSizes(first=50, least=50, most=50))
    seed(imap_server, user)
    before = flag_snapshot(imap_server, user)
    proxy.cut_after_sent(b" UID STORE ", times=2)
    flag = {"query": QUERY, "mailbox": "INBOX", "operation": "add", "flags": ["\\Flagged"]}
    async for mcp in open_client(proxied_config(imap_server, proxy, user, background_after_s=60)):
        done = await mcp.ok(FLAGS, flag)
        run = done["search"]
        assert (run["done"], run["outcome_unknown"], run["not_attempted"]) == (MATCHING, 0, 0), done
        assert proxy.cuts == 1 and proxy.sent().count(b" UID STORE ") == MATCHING // 50 + 1
        flagged = await mcp.ok(
            "imap_search_messages", {"mailbox": "INBOX", "query": "is:flagged", "limit": 1}
        )
        assert flagged["total"] == MATCHING
        await mcp.ok(FLAGS, done["next_action"]["arguments"])
    assert flag_snapshot(imap_server, user) == before

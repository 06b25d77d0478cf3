"""The ``request_state`` of a call that asks its user in its result (the 2026-07-28 protocol) is sealed for
its tool and caller until it expires (envelope/request_state.py), through the SDK's MCP client.

The SDK seals the wire form under a key of its process, so a state is tampered with here where it would be
once it outlives the call (a task's store, another instance of a team): between the SDK's seal and the tool
(a server middleware). Before, the state was the JSON list of the approved questions' keys, digests anyone
computes from the arguments and the questions, and the tool took any list it was given.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from mcp import Client

from mail_imap_mcp.envelope.request_state import STATE_TTL_S, StateSeal
from mail_imap_mcp.mail import sealing
from mail_imap_mcp.server import build_server
from mail_imap_mcp.state import ANONYMOUS
from tests.support.clients.elicitation import answering
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.shared.confirmation import answering_in_turn, two_gate_server
from tests.support.shared.protocol import OFFLINE_WRITES

pytestmark = pytest.mark.anyio

OLD = {"name": "Old"}


class Between:
    """Stands between the SDK's wire seal and the tool: keeps each state the tool handed out and the keys
    of the questions it asked, and gives the tool ``swap(last state handed out)`` in its place, where
    ``swap`` is set."""

    def __init__(self) -> None:
        self.handed_out: list[str] = []
        self.keys: list[str] = []
        self.swap: Callable[[str | None], str] | None = None

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if ctx.method == "tools/call" and self.swap is not None:
            last = self.handed_out[-1] if self.handed_out else None
            ctx = replace(ctx, params={**ctx.params, "requestState": self.swap(last)})
        result = await call_next(ctx)
        if isinstance(result, dict) and result.get("resultType") == "input_required":
            self.handed_out.append(result["requestState"])
            self.keys += list(result["inputRequests"])
        return result


async def _approved_once(seal: StateSeal | None = None) -> tuple[Any, list[str], Between]:
    """A server whose call of ``purge`` the user approved once, both questions (the keys are known)."""
    between = Between()
    server, done = two_gate_server(state_seal=seal, middleware=[between])
    async with Client(server, elicitation_callback=answering("accept")) as client:
        assert (await EnvelopeClient(client).ok("purge", OLD))["dropped"] == "Old"
    assert done == ["Old"] and len(between.keys) == 2
    return server, done, between


async def _refused(server: Any, reason: str) -> list[str]:
    """The next call of ``purge`` is refused for its state (``reason``); the questions it asked."""
    callback = answering("accept")
    async with Client(server, elicitation_callback=callback) as client:
        envelope = await EnvelopeClient(client).fail("purge", OLD, "invalid_input")
    assert envelope["error"]["details"] == {"parameter": "request_state", "reason": reason}, envelope
    assert "nothing was changed" in envelope["error"]["message"]
    return list(callback.asked)


async def test_a_round_trip_hands_out_sealed_states_and_runs_once() -> None:
    _, _, between = await _approved_once()
    assert len(between.handed_out) == 2  # one per question: the second carries the first's approval
    for state in between.handed_out:
        with pytest.raises(ValueError):
            json.loads(state)
        assert not any(key in state for key in between.keys)  # no key in the clear


async def test_a_forged_state_of_the_keys_anyone_computes_is_refused_and_asks_nobody() -> None:
    # The keys are the digests of the arguments and the questions: the old state, the JSON list of them.
    server, done, between = await _approved_once()
    between.swap = lambda last: json.dumps(between.keys)
    assert await _refused(server, "not_this_calls") == []
    assert done == ["Old"]  # the one approved call, not a second one


async def test_an_altered_state_is_refused() -> None:
    server, done, between = await _approved_once()
    body, check = between.handed_out[-1].split(".")
    altered = body[:-2] + ("A" if body[-2] != "A" else "B") + body[-1]
    between.swap = lambda last: f"{altered}.{check}"
    await _refused(server, "not_this_calls")
    assert done == ["Old"]


@pytest.mark.parametrize(
    ("user", "tool"), [("mallory", "purge"), (ANONYMOUS, "drop")], ids=["another caller's", "another tool's"]
)
async def test_a_state_sealed_for_another_caller_or_tool_is_refused(user: str, tool: str) -> None:
    seal = StateSeal()
    server, done, between = await _approved_once(seal)
    between.swap = lambda last: seal.seal(tool, user, between.keys)
    await _refused(server, "not_this_calls")
    assert done == ["Old"]


async def test_a_state_sealed_for_this_caller_and_tool_is_taken() -> None:
    """What the refusals above are measured against: the same seal for the caller and tool of the call."""
    seal = StateSeal()
    server, done, between = await _approved_once(seal)
    between.swap = lambda last: seal.seal("purge", ANONYMOUS, between.keys)
    async with Client(server, elicitation_callback=answering_in_turn()) as client:
        await EnvelopeClient(client).ok("purge", OLD)  # both questions approved by the state: none asked
    assert done == ["Old", "Old"]


async def test_an_expired_state_is_refused() -> None:
    """The user answered the second question after the state's time to live."""
    now = [1_000_000.0]
    between = Between()
    server, done = two_gate_server(state_seal=StateSeal(clock=lambda: now[0]), middleware=[between])

    async def late(context: Any, params: Any) -> Any:
        now[0] += STATE_TTL_S + 1
        return await answering("accept")(context, params)

    async with Client(server, elicitation_callback=late) as client:
        envelope = await EnvelopeClient(client).fail("purge", OLD, "invalid_input")
    assert envelope["error"]["details"] == {"parameter": "request_state", "reason": "expired"}, envelope
    assert done == [] and len(between.handed_out) == 1


async def test_the_servers_tools_seal_their_state_with_the_key_that_seals_cursors() -> None:
    """The key of mail/sealing.py: kept in the state directory, shared by a team's instances through
    Redis, so a state another instance (or a restarted one) handed out is still this server's."""
    server = build_server(OFFLINE_WRITES)
    async with Client(server):  # started and closed as a client's server is
        tools = server.envelope_tools  # type: ignore[attr-defined]
    assert tools and all(tool.state_seal.key is sealing for tool in tools.values())

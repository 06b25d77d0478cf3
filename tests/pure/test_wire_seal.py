"""The SDK's seal of a call's ``requestState`` on the wire is keyed by the server's key and renewed every
lifetime (envelope/wire_seal.py, issue 89 item 16): a state sealed by one instance opens on another (a
team's, or this one restarted: ``tests/integration/team/test_team_instances.py`` runs both behind
HAProxy), and a key opens the states sealed under the previous one for one lifetime, no longer.
Before, ``MCPServer`` sealed under a key of its process: any other process refused the state (-32602).
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import InvalidRequestState, RequestStateSecurity
from mcp.shared.exceptions import MCPError

from mail_imap_mcp.envelope.request_state import STATE_TTL_S, ProcessKey, StateSeal
from mail_imap_mcp.envelope.wire_seal import MARGIN_S, RotatingCodec, wire_security
from tests.support.clients.elicitation import answering
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.shared.confirmation import two_gate_server

PERIOD = 660.0
START = 1_000_000 * PERIOD  # the start of a period
PAYLOAD = b'{"s": "approved"}'


def instance(key: ProcessKey, now: list[float]) -> RotatingCodec:
    """One instance's codec: the team's ``key``, its own clock (``now[0]``)."""
    return RotatingCodec(key, PERIOD, clock=lambda: now[0])


def test_a_state_sealed_by_one_instance_opens_on_another_of_the_team_and_nowhere_else() -> None:
    key, now = ProcessKey(), [START + 10]
    sealed = instance(key, now).seal(PAYLOAD)
    assert instance(key, now).unseal(sealed) == PAYLOAD  # another instance, or this one restarted
    with pytest.raises(InvalidRequestState):
        instance(ProcessKey(), now).unseal(sealed)  # another deployment's key


def test_the_key_is_renewed_every_lifetime_and_opens_the_previous_ones_states_for_one_lifetime() -> None:
    key, now = ProcessKey(), [START + PERIOD - 1]  # sealed as its period ends
    codec = instance(key, now)
    sealed = codec.seal(PAYLOAD)
    now[0] += PERIOD  # one lifetime later: the next period's key seals, and opens the previous one's
    renewed = codec.seal(PAYLOAD)
    assert renewed[:9] != sealed[:9]  # "v1." and the key's fingerprint: another key
    assert codec.unseal(sealed) == PAYLOAD
    now[0] += PERIOD  # two: that key is gone
    with pytest.raises(InvalidRequestState):
        codec.unseal(sealed)
    assert codec.unseal(renewed) == PAYLOAD


def test_a_state_sealed_by_an_instance_whose_clock_runs_ahead_opens() -> None:
    key = ProcessKey()
    ahead = instance(key, [START + PERIOD + 1]).seal(PAYLOAD)  # already in the next period
    assert instance(key, [START + PERIOD - 1]).unseal(ahead) == PAYLOAD


def test_the_wire_seal_outlives_the_servers_own_by_the_margin() -> None:
    """So an expired state reaches the tool's own check, whose envelope says what to do."""
    security = wire_security(ProcessKey(), STATE_TTL_S)
    assert security.ttl == STATE_TTL_S + MARGIN_S


@pytest.mark.anyio
@pytest.mark.parametrize(("periods", "taken"), [(1, True), (2, False)])
async def test_through_the_sdk_an_answer_given_as_the_key_is_renewed_is_taken_once_only(
    periods: int, taken: bool
) -> None:
    """A real 2026-07-28 client answers the question while the key is renewed ``periods`` times."""
    now = [START + PERIOD - 1]
    codec = RotatingCodec(ProcessKey(), PERIOD, clock=lambda: now[0])
    security = RequestStateSecurity(codec=codec, ttl=PERIOD)
    server, done = two_gate_server(state_seal=StateSeal(), security=security)
    accept = answering("accept")

    async def later(context: Any, params: Any) -> Any:
        now[0] += periods * PERIOD
        return await accept(context, params)

    async with Client(server, elicitation_callback=later) as client:
        if taken:
            await EnvelopeClient(client).ok("purge", {"name": "Old"})
        else:
            with pytest.raises(MCPError, match="Invalid or expired requestState"):
                await client.call_tool("purge", {"name": "Old"})
    assert done == (["Old"] if taken else [])

"""Confirmation through MCP elicitation when the client offers it, else the confirm_token path.

A generic tool stands in for the writes that need confirmation (permanent delete, mailbox rename and
delete): it counts how often its change really ran, so every path proves what it did.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from mail_imap_mcp.asking.gate import ConfirmationGate
from mail_imap_mcp.envelope.mcp import ToolResult
from mail_imap_mcp.envelope.user_call import UserCall
from tests.support.clients.elicitation import answering
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.shared.confirmation import (
    DropData,
    DropInput,
    answering_in_turn,
    server_of,
    two_gate_server,
)

pytestmark = pytest.mark.anyio


def server_and_counter(
    *, irreversible: bool = False, tokens_for_irreversible: bool = False
) -> tuple[MCPServer[None], list[str]]:
    """A server whose tool ``drop`` needs confirmation (``irreversible``: as a permanent delete does)."""
    gate = ConfirmationGate(tokens_for_irreversible=tokens_for_irreversible)
    done: list[str] = []

    def drop(args: DropInput, user: str, as_given: str, call: UserCall) -> ToolResult[DropData]:
        gate.for_call(call).require(
            "drop",
            args.model_dump(),
            f"delete the mailbox {args.name!r}",
            irreversible=irreversible,
            user=user,
        )
        done.append(args.name)
        return ToolResult(summary="dropped", data=DropData(dropped=args.name))

    return server_of("drop", drop), done


async def test_a_client_that_can_elicit_asks_the_user_and_runs_on_yes() -> None:
    server, done = server_and_counter()
    callback = answering("accept")
    # The handshake ("legacy") protocol, as stdio clients such as Claude Desktop speak it, lets the
    # server send requests to the client.
    async with Client(server, elicitation_callback=callback, mode="legacy") as client:
        data = await EnvelopeClient(client).ok("drop", {"name": "Old"})
    assert data["dropped"] == "Old" and done == ["Old"]
    assert callback.asked == ["Delete the mailbox 'Old'?"]


@pytest.mark.parametrize(("action", "confirm"), [("decline", True), ("cancel", True), ("accept", False)])
async def test_declined_or_cancelled_elicitation_changes_nothing_and_says_so(
    action: str, confirm: bool
) -> None:
    server, done = server_and_counter()
    async with Client(server, elicitation_callback=answering(action, confirm), mode="legacy") as client:
        envelope = await EnvelopeClient(client).fail("drop", {"name": "Old"}, "confirmation_required")
    assert done == []
    assert "nothing was changed" in envelope["error"]["message"]
    assert "confirm_token" not in envelope["error"]["details"]
    assert envelope["data"]["next_action"] is None


@pytest.mark.parametrize(
    "client_options",
    [
        {"mode": "legacy"},  # a client that does not offer elicitation
        # Offered, but the per-request protocol has no channel for it: the token path stays.
        {"elicitation_callback": answering("accept")},
    ],
    ids=["no-elicitation", "no-back-channel"],
)
async def test_without_elicitation_the_token_path_confirms_exactly_that_request(
    client_options: dict[str, Any],
) -> None:
    server, done = server_and_counter()
    async with Client(server, **client_options) as client:
        mcp = EnvelopeClient(client)
        first = await mcp.fail("drop", {"name": "Old"}, "confirmation_required")
        assert done == []
        follow = first["data"]["next_action"]
        assert follow["tool"] == "drop" and follow["arguments"]["name"] == "Old"
        other = {**follow["arguments"], "name": "Other"}
        await mcp.fail("drop", other, "invalid_input")
        assert (await mcp.ok("drop", follow["arguments"]))["dropped"] == "Old"
        await mcp.fail("drop", follow["arguments"], "invalid_input")  # used once
    assert done == ["Old"]


# -- what cannot be undone: the user confirms it, never a token the agent holds (issue 25) ----------


async def test_regression_irreversible_is_confirmed_by_elicitation_with_no_token_issued() -> None:
    # Issue 25: a permanent delete answered confirmation_required with the token in error.details and in
    # a ready next_action, so an agent that had been talked into it could confirm it itself.
    server, done = server_and_counter(irreversible=True)
    callback = answering("accept")
    async with Client(server, elicitation_callback=callback, mode="legacy") as client:
        data = await EnvelopeClient(client).ok("drop", {"name": "Old"})
    assert data["dropped"] == "Old" and done == ["Old"]
    assert callback.asked == ["Delete the mailbox 'Old'?"]


async def test_regression_irreversible_is_refused_where_the_client_cannot_ask_the_user() -> None:
    server, done = server_and_counter(irreversible=True)
    async with Client(server, mode="legacy") as client:
        mcp = EnvelopeClient(client)
        envelope = await mcp.fail("drop", {"name": "Old"}, "permission_denied")
        forged = await mcp.fail("drop", {"name": "Old", "confirm_token": "1.a.b"}, "invalid_input")
    assert done == []
    assert "confirm_token" not in json.dumps(envelope)
    assert envelope["data"]["next_action"] is None
    assert envelope["error"]["details"]["setting"] == "confirm_without_elicitation"
    assert "cannot ask the user" in envelope["error"]["message"]
    assert forged["error"]["details"]["parameter"] == "confirm_token"


@pytest.mark.parametrize(("action", "confirm"), [("decline", True), ("cancel", True), ("accept", False)])
async def test_irreversible_declined_changes_nothing(action: str, confirm: bool) -> None:
    server, done = server_and_counter(irreversible=True)
    async with Client(server, elicitation_callback=answering(action, confirm), mode="legacy") as client:
        envelope = await EnvelopeClient(client).fail("drop", {"name": "Old"}, "confirmation_required")
    assert done == [] and "nothing was changed" in envelope["error"]["message"]
    assert "confirm_token" not in json.dumps(envelope)


async def test_irreversible_keeps_the_token_path_where_the_user_opted_in() -> None:
    server, done = server_and_counter(irreversible=True, tokens_for_irreversible=True)
    async with Client(server, mode="legacy") as client:
        mcp = EnvelopeClient(client)
        first = await mcp.fail("drop", {"name": "Old"}, "confirmation_required")
        assert (await mcp.ok("drop", first["data"]["next_action"]["arguments"]))["dropped"] == "Old"
    assert done == ["Old"]


# -- one "yes" approves what the user was shown, for that call: no other gate, no other question -------


@pytest.mark.parametrize("second", ["user", "token"])
async def test_regression_one_approval_passes_one_gate_and_the_second_asks_again(second: str) -> None:
    # One per-call "the user confirmed" flag passed every gate of the call: the user, asked once to empty
    # a mailbox, had also deleted it for good (or passed a token's gate) without being asked.
    server, done = two_gate_server(second)
    callback = answering_in_turn("accept", "decline")
    async with Client(server, elicitation_callback=callback, mode="legacy") as client:
        envelope = await EnvelopeClient(client).fail("purge", {"name": "Old"}, "confirmation_required")
    assert done == []
    second_question = (
        "Delete the mailbox 'Old' for good?" if second == "user" else "Delete the mailbox 'Old'?"
    )
    assert callback.asked == ["Empty the mailbox 'Old'?", second_question]
    assert "The user did not confirm (decline)" in envelope["error"]["message"]


@pytest.mark.parametrize("second", ["user", "token"])
async def test_two_gates_both_approved_run_the_change_once(second: str) -> None:
    server, done = two_gate_server(second)
    callback = answering("accept")
    async with Client(server, elicitation_callback=callback, mode="legacy") as client:
        assert (await EnvelopeClient(client).ok("purge", {"name": "Old"}))["dropped"] == "Old"
    assert done == ["Old"] and len(callback.asked) == 2


async def test_an_approval_is_of_its_call_arguments_and_ends_with_the_call() -> None:
    server, done = two_gate_server()
    callback = answering("accept")
    async with Client(server, elicitation_callback=callback, mode="legacy") as client:
        mcp = EnvelopeClient(client)
        await mcp.ok("purge", {"name": "Old"})
        await mcp.ok("purge", {"name": "Other"})
        await mcp.ok("purge", {"name": "Old"})
    assert done == ["Old", "Other", "Old"]
    assert len(callback.asked) == 6  # each call asked both of its questions again


async def test_the_per_request_era_asks_each_question_in_the_result_and_runs_once() -> None:
    # No request back to the client in this era (2026-07-28): what only the user may confirm is asked in
    # the call's result (InputRequiredResult), each question keyed by its approval, and the client calls
    # again with the answer; one "yes" still passes one gate.
    server, done = two_gate_server()
    callback = answering("accept")
    async with Client(server, elicitation_callback=callback) as client:
        assert (await EnvelopeClient(client).ok("purge", {"name": "Old"}))["dropped"] == "Old"
    assert done == ["Old"]
    assert callback.asked == ["Empty the mailbox 'Old'?", "Delete the mailbox 'Old' for good?"]


async def test_the_per_request_era_declined_changes_nothing() -> None:
    server, done = two_gate_server()
    callback = answering_in_turn("accept", "decline")
    async with Client(server, elicitation_callback=callback) as client:
        envelope = await EnvelopeClient(client).fail("purge", {"name": "Old"}, "confirmation_required")
    assert done == [] and "The user did not confirm (decline)" in envelope["error"]["message"]

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
from pydantic import BaseModel, ConfigDict, Field

from mail_imap_mcp.confirmation import ConfirmationGate
from mail_imap_mcp.envelope import Payload
from mail_imap_mcp.envelope.mcp import ToolResult, envelope_tool
from tests.support.elicitation import answering
from tests.support.envelope_client import EnvelopeClient

pytestmark = pytest.mark.anyio


class DropInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    confirm_token: str | None = None


class DropData(Payload):
    dropped: str


def server_and_counter(
    *, irreversible: bool = False, tokens_for_irreversible: bool = False
) -> tuple[MCPServer[None], list[str]]:
    """A server whose tool ``drop`` needs confirmation (``irreversible``: as a permanent delete does)."""
    gate = ConfirmationGate(tokens_for_irreversible=tokens_for_irreversible)
    done: list[str] = []

    def drop(args: DropInput, user: str) -> ToolResult[DropData]:
        gate.require(
            "drop",
            args.model_dump(),
            f"delete the mailbox {args.name!r}",
            irreversible=irreversible,
            user=user,
        )
        done.append(args.name)
        return ToolResult(summary="dropped", data=DropData(dropped=args.name))

    tool = envelope_tool(
        name="drop",
        title="Drop",
        description="d",
        input_model=DropInput,
        data_model=DropData,
        handler=drop,
        read_only=False,
        destructive=True,
        idempotent=False,
    )
    return MCPServer(name="t", tools=[tool]), done


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

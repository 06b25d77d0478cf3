"""What tests/pure/test_confirmation.py shares with other test modules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp.server.mcpserver import MCPServer, RequestStateSecurity
from mcp_types import ElicitRequestParams, ElicitResult
from pydantic import BaseModel, ConfigDict, Field

from mail_imap_mcp.asking.gate import ConfirmationGate
from mail_imap_mcp.envelope import Payload
from mail_imap_mcp.envelope.mcp import ToolResult, envelope_tool
from mail_imap_mcp.envelope.request_state import StateSeal
from mail_imap_mcp.envelope.user_call import UserCall


class DropInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    confirm_token: str | None = None


class DropData(Payload):
    dropped: str


def server_of(
    name: str,
    handler: Any,
    state_seal: StateSeal | None = None,
    middleware: Sequence[Any] = (),
    security: RequestStateSecurity | None = None,
) -> MCPServer[None]:
    """A server whose one destructive tool ``name`` runs ``handler`` (sealing its ``request_state`` with
    ``state_seal``; ``middleware`` between the SDK's wire seal and the tool; ``security``: the SDK's wire
    seal, a key of the process unless given)."""
    tool = envelope_tool(
        name=name,
        title=name.title(),
        description="d",
        input_model=DropInput,
        data_model=DropData,
        handler=handler,
        read_only=False,
        destructive=True,
        idempotent=False,
        takes_call=True,
        state_seal=state_seal,
    )
    return MCPServer(name="t", tools=[tool], middleware=middleware, request_state_security=security)


def two_gate_server(
    second: str = "user",
    state_seal: StateSeal | None = None,
    middleware: Sequence[Any] = (),
    security: RequestStateSecurity | None = None,
) -> tuple[MCPServer[None], list[str]]:
    """A server whose tool ``purge`` passes two gates before it changes anything: the user's own for
    the first, and for the second the user's own (``second="user"``) or a token's (``"token"``)
    (``state_seal``, ``middleware``, ``security``: as :func:`server_of` takes them)."""
    gate = ConfirmationGate()
    done: list[str] = []

    def purge(args: DropInput, user: str, as_given: str, call: UserCall) -> ToolResult[DropData]:
        refusal, details = "The client cannot ask the user; nothing was changed.", {"parameter": "name"}
        asked = gate.for_call(call)
        asked.require_user(f"empty the mailbox {args.name!r}", refusal, details)
        if second == "user":
            asked.require_user(f"delete the mailbox {args.name!r} for good", refusal, details)
        else:
            asked.require("purge", args.model_dump(), f"delete the mailbox {args.name!r}", user=user)
        done.append(args.name)
        return ToolResult(summary="purged", data=DropData(dropped=args.name))

    return server_of("purge", purge, state_seal, middleware, security), done


def answering_in_turn(*answers: str) -> Any:
    """A callback giving ``answers`` in order (``accept`` with confirm, ``decline`` or ``cancel``); the
    questions it was asked are in its ``asked`` list."""
    asked: list[str] = []

    async def callback(context: Any, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        action = answers[len(asked) - 1]
        return ElicitResult(action=action, content={"confirm": True} if action == "accept" else None)

    callback.asked = asked  # type: ignore[attr-defined]
    return callback

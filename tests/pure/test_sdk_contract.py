"""What this server relies on in the MCP SDK beyond its published API (src/mail_imap_mcp/sdk.py).

Each test names one attribute or signature; an SDK upgrade that moves it fails here, by name, rather
than in a subscription or a tool call somewhere in the integration tests.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from mcp import Client
from mcp.server.connection import Connection
from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resources.templates import ResourceTemplate
from mcp_types import EmptyResult, SubscribeRequestParams
from pydantic import BaseModel

from mail_imap_mcp.sdk import (
    InternalTool,
    add_template,
    connection_of,
    declare_tool_list_changes,
    lowlevel_server,
    no_argument_metadata,
)

pytestmark = pytest.mark.anyio

#: The fields envelope/mcp.py's envelope_tool() gives the SDK's tool class.
TOOL_FIELDS = {"fn", "name", "title", "description", "parameters", "fn_metadata", "is_async", "context_kwarg"}


def test_the_internal_tool_class_takes_the_fields_an_envelope_tool_sets() -> None:
    assert issubclass(InternalTool, BaseModel)
    assert TOOL_FIELDS | {"annotations"} <= set(InternalTool.model_fields)


def test_the_internal_tool_runs_with_arguments_context_and_convert_result() -> None:
    parameters = list(inspect.signature(InternalTool.run).parameters)
    assert parameters[:4] == ["self", "arguments", "context", "convert_result"]


def test_argument_metadata_that_validates_nothing_can_be_made() -> None:
    metadata = no_argument_metadata()
    assert metadata.arg_model.model_validate({}).model_dump() == {}


def test_mcpserver_keeps_its_lowlevel_server_with_a_request_handler_registry() -> None:
    lowlevel = lowlevel_server(MCPServer("contract"))
    assert isinstance(lowlevel, Server)
    parameters = list(inspect.signature(lowlevel.add_request_handler).parameters)
    assert len(parameters) == 3, parameters  # method, params type, handler


@pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")
async def test_a_request_handler_reaches_the_connection_behind_its_session() -> None:
    server = MCPServer("contract")
    seen: list[Any] = []

    async def subscribe(ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
        seen.append(connection_of(ctx))
        return EmptyResult()

    lowlevel_server(server).add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
    async with Client(server, mode="legacy") as client:
        await client.subscribe_resource("imap://contract/mailbox/INBOX")
    assert len(seen) == 1 and isinstance(seen[0], Connection)


async def test_a_template_built_once_is_listed_and_read_on_each_server_it_is_added_to() -> None:
    async def read(name: str, request: Context) -> str:
        return f"{name} on {request.mcp_server.name}"

    template = ResourceTemplate.from_function(read, "contract://{name}", name="named")
    for server_name in ("one", "two"):
        server = MCPServer(server_name)
        add_template(server, template)
        async with Client(server) as client:
            listed = (await client.list_resource_templates()).resource_templates
            assert [entry.uri_template for entry in listed] == ["contract://{name}"]
            (content,) = (await client.read_resource("contract://x")).contents
            assert getattr(content, "text", None) == f"x on {server_name}"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_server_declares_that_its_tool_list_changes_in_either_era(mode: str) -> None:
    """Handshake versions: the ``initialize`` answer, built by the low-level server's
    ``create_initialization_options()``; 2026-07-28: wherever ``subscriptions/listen`` is served."""
    server = MCPServer("contract")

    @server.tool()
    def noop() -> str:
        return ""

    declare_tool_list_changes(server)
    async with Client(server, mode=mode) as client:
        assert client.server_capabilities.tools is not None
        assert client.server_capabilities.tools.list_changed is True

"""Every part of the MCP SDK this server uses that the SDK does not publish as its API, in one place.

The SDK offers no public way to publish a tool whose schemas and results are the server's own, to reach
the connection behind a request (which outlives it and owns the session's teardown), to add request
handlers ``MCPServer`` has no decorator for, to register a resource template already built, or to declare
``tools.listChanged`` to handshake-era clients (``MCPServer`` takes no ``NotificationOptions``). Those five
needs are met here, and only here:
``tests/pure/test_sdk_contract.py`` checks each attribute and signature relied on, so an SDK upgrade
that moves one fails there, by name, rather than somewhere in a subscription or a tool call.
"""

from __future__ import annotations

from typing import Any

from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resources.templates import ResourceTemplate
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.server.models import InitializationOptions

__all__ = [
    "InternalTool",
    "add_template",
    "connection_of",
    "declare_tool_list_changes",
    "lowlevel_server",
    "no_argument_metadata",
]

#: The SDK's base class of a registered tool (``MCPServer(tools=[...])`` takes instances of it); the
#: envelope tools subclass it to publish their own schemas and answer with envelopes.
InternalTool = Tool


def no_argument_metadata() -> FuncMetadata:
    """Argument metadata that makes the SDK validate nothing: the envelope tool validates itself."""
    return FuncMetadata(arg_model=ArgModelBase)


def connection_of(ctx: ServerRequestContext[Any, Any]) -> Connection:
    """The connection behind a request handler's context: it lives as long as the client's session
    (the session given to a handler is a per-request proxy) and owns its teardown."""
    connection: Connection = ctx.session._connection
    return connection


def lowlevel_server(server: MCPServer[Any]) -> Server[Any]:
    """The low-level server under ``server``, whose registry takes request handlers ``MCPServer`` has
    no decorator for (``add_request_handler(method, params_type, handler)``), or whose own handler does not
    see the request (``tools/list``, answered per caller)."""
    lowlevel: Server[Any] = server._lowlevel_server
    return lowlevel


def add_template(server: MCPServer[Any], template: ResourceTemplate) -> None:
    """Register ``template`` on ``server`` as ``server.resource(uri, ...)(reader)`` would, without building it
    again: ``ResourceTemplate.from_function`` makes a pydantic model of the reader's arguments (a few
    milliseconds), so a template whose reader finds its server through the request's ``Context`` is built
    once per process and shared by every server (the tests build one per test)."""
    server._resource_manager._templates[template.uri_template] = template


def declare_tool_list_changes(server: MCPServer[Any]) -> None:
    """Make ``server`` declare ``tools: {listChanged: true}`` in its answer to ``initialize`` (handshake
    versions; at 2026-07-28 the SDK declares it wherever ``subscriptions/listen`` is served). Every
    transport's ``initialize`` asks the low-level server's ``create_initialization_options()`` with no
    notification options: this server's own gives them."""
    lowlevel = lowlevel_server(server)
    built = lowlevel.create_initialization_options

    def options(
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        given = notification_options or NotificationOptions()
        given.tools_changed = True
        return built(given, experimental_capabilities, extensions)

    setattr(lowlevel, "create_initialization_options", options)  # noqa: B010 (a method, for this instance)

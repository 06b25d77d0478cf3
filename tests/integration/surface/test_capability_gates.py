"""A capability's gate is its own: a tool of a capability whose switch is off is refused by that
capability's gate, naming its setting, whatever the switch and wherever it is checked; before, a switch
other than write_enabled and send_enabled failed open (a capability checked at the connection ran
writing's gate, one checked at the call none). The capabilities are declared here alone, as the next
issue's would be in their own modules: a tool of each, registered beside the product's, through a real
MCP client on Dovecot."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from mcp import Client
from pydantic import BaseModel, ConfigDict

from mail_imap_mcp.call import Call
from mail_imap_mcp.capabilities import Capability, Effect, SurfaceGroup
from mail_imap_mcp.config.switches import Switch
from mail_imap_mcp.envelope import Payload, ToolResult
from mail_imap_mcp.envelope.schemas import envelope_output_schema
from mail_imap_mcp.server import build_server
from mail_imap_mcp.tools.registry import TOOLS
from mail_imap_mcp.tools.spec import ToolSpec
from tests.support.clients.envelope_client import check_envelope
from tests.support.clients.in_process import AccountFactory, make_config
from tests.support.servers.dovecot import Dovecot

pytestmark = pytest.mark.anyio

#: An account switch no capability had (an index's attachments, off unless set).
ATTACHMENTS_INDEXED = Switch("index_attachments", "account", "INDEX_ATTACHMENTS")


class _OnAccount(BaseModel):
    model_config = ConfigDict(extra="forbid")

    account_id: str = "default"


class _Reached(Payload):
    account_id: str


def _writes(app: Call, args: _OnAccount) -> ToolResult[_Reached]:
    """A write tool's first step: its account's write connection (the gate of its own capability)."""
    connection = app.write_connection(args.account_id)
    return ToolResult(summary="reached", data=_Reached(account_id=connection.account_id))


def _reads(app: Call, args: _OnAccount) -> ToolResult[_Reached]:
    return ToolResult(summary="reached", data=_Reached(account_id=app.connection(args.account_id).account_id))


class _Nothing(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _reads_no_account(app: Call, args: _Nothing) -> ToolResult[_Reached]:
    return ToolResult(summary="reached", data=_Reached(account_id=next(iter(app.config.accounts))))


#: Where the gate runs, and whether the tool names an account (one that names none is gated on each of
#: the caller's accounts).
GATES = [("connection", True), ("call", True), ("call", False)]


def _tool(checked: Literal["call", "connection"], names_account: bool = True) -> ToolSpec[Any]:
    capability = Capability(
        "tagging attachments", Effect.WRITE, SurfaceGroup.WRITES, 0, ATTACHMENTS_INDEXED, checked
    )
    handle: Any = _writes if checked == "connection" else _reads if names_account else _reads_no_account
    return ToolSpec(
        name="test_tag_attachments",
        title="Tag attachments (test only)",
        description="d",
        input_model=_OnAccount if names_account else _Nothing,
        data_model=_Reached,
        handle=handle,
        errors={},
        capability=capability,
    )


async def _call(config: Any, spec: ToolSpec[Any]) -> tuple[set[str], dict[str, Any]]:
    """The tools listed, and the checked envelope of a call of ``spec``'s tool (listed or not)."""
    async with Client(build_server(config, tools=[*TOOLS, spec])) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        result = await client.call_tool(spec.name, {})
        schema = envelope_output_schema(spec.data_model)
        return names, check_envelope(result, schema, schema_checked=spec.name in names)


@pytest.mark.parametrize(("checked", "names_account"), GATES)
async def test_a_capability_whose_switch_is_off_is_refused_by_its_own_gate_naming_the_setting(
    dovecot: Dovecot,
    user: str,
    account: AccountFactory,
    checked: Literal["call", "connection"],
    names_account: bool,
) -> None:
    # Writes on: writing's gate would let it through; its own switch is off.
    config = make_config({"default": {**account(user), "index_attachments": False}}, write_enabled=True)
    names, envelope = await _call(config, _tool(checked, names_account))
    assert "test_tag_attachments" not in names and "imap_update_message_flags" in names
    assert envelope["success"] is False
    assert envelope["error"]["code"] == "permission_denied"
    assert envelope["error"]["details"] == {"account_id": "default", "setting": "index_attachments"}
    assert "index_attachments in [accounts.default]" in envelope["error"]["message"]
    # Turned on, the same tool is listed and answers.
    config = make_config({"default": {**account(user), "index_attachments": True}}, write_enabled=True)
    names, envelope = await _call(config, _tool(checked, names_account))
    assert "test_tag_attachments" in names
    assert envelope["success"] is True and envelope["data"]["account_id"] == "default"

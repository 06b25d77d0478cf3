"""A tool's effect can be ``send``: listed only where an account the caller may use has send_enabled,
whatever write_enabled says (a test-only spec stands in for the send tool, which does not exist yet)."""

from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import Any

import pytest
from mcp import Client

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.capabilities import SENDING as SENDING_CAPABILITY
from mail_imap_mcp.capabilities import Effect
from mail_imap_mcp.config import Config
from mail_imap_mcp.envelope import Payload, ToolResult
from mail_imap_mcp.envelope.mcp import envelope_tool
from mail_imap_mcp.sdk import lowlevel_server
from mail_imap_mcp.server import MailServer
from mail_imap_mcp.state import USER_CLAIM
from mail_imap_mcp.tool_calls import listing
from mail_imap_mcp.tools.registry import TOOLS
from mail_imap_mcp.tools.spec import ToolSpec

pytestmark = pytest.mark.anyio

GMAIL = {"host": "imap.gmail.com", "username": "me@gmail.com", "password_env": "P"}
SENDING = {**GMAIL, "send_enabled": True, "allowed_recipients": ["@example.com"]}

TEAM = {
    "http": {
        "auth": {
            "issuer": "https://sso.example",
            "audience": "https://mail.example/mcp",
            "jwks_url": "https://sso.example/jwks",
        }
    },
    "accounts": {"shared": {**SENDING, "users": ["alice@example.com"]}, "own": {**GMAIL, "users": ["bob"]}},
}


class _Nothing(Payload):
    pass


def _never(app: AppContext, args: _Nothing) -> ToolResult[Any]:
    raise AssertionError("not called")


SEND_SPEC = ToolSpec(
    name="test_send",
    title="Send (test only)",
    description="d",
    input_model=_Nothing,
    data_model=_Nothing,
    handle=_never,
    errors={},
    capability=SENDING_CAPABILITY,
    idempotent=False,
)


def _unlisted(config: dict[str, Any], user: str = "") -> set[str]:
    app = AppContext.from_config(Config.model_validate(config))
    try:
        tools = [*TOOLS, SEND_SPEC]
        return {spec.name for spec in tools} - set(listing(app, user, tools).tools)
    finally:
        app.close()


def test_imap_send_draft_is_the_one_product_tool_that_sends() -> None:
    assert [spec.name for spec in TOOLS if spec.effect is Effect.SEND] == ["imap_send_draft"]


@pytest.mark.parametrize("writes", [False, True])
def test_a_send_tool_is_unlisted_while_no_account_sends_even_with_writes_on(writes: bool) -> None:
    unlisted = _unlisted({"accounts": {"a": GMAIL}, "server": {"write_enabled": writes}})
    assert "test_send" in unlisted
    assert ("imap_save_draft" in unlisted) is not writes


def test_a_send_tool_is_listed_where_an_account_sends_and_writes_stay_off() -> None:
    unlisted = _unlisted({"accounts": {"a": GMAIL, "b": SENDING}})
    assert "test_send" not in unlisted
    assert "imap_save_draft" in unlisted  # sending implies no write tool either


def test_a_send_tool_is_listed_only_for_a_caller_who_may_use_a_sending_account() -> None:
    team = {
        "http": {
            "auth": {
                "issuer": "https://sso.example",
                "audience": "https://mail.example/mcp",
                "jwks_url": "https://sso.example/jwks",
            }
        },
        "accounts": {
            "shared": {**SENDING, "users": ["alice@example.com"]},
            "own": {**GMAIL, "users": ["bob"]},
        },
    }
    assert "test_send" not in _unlisted(team, "alice@example.com")
    assert "test_send" in _unlisted(team, "bob")


def test_a_send_spec_is_a_write_that_destroys_nothing() -> None:
    assert SEND_SPEC.writes and SEND_SPEC.sends and SEND_SPEC.listed_with is SENDING_CAPABILITY
    assert SEND_SPEC.annotations() == {
        "readOnlyHint": False,
        "destructiveHint": False,
        "idempotentHint": False,
        "openWorldHint": True,
    }


def _request_of(user: str) -> Any:
    """A request context as the HTTP transport leaves it: the verified token's user among its claims."""
    token = SimpleNamespace(claims={USER_CLAIM: user})
    return SimpleNamespace(request=SimpleNamespace(scope={"user": SimpleNamespace(access_token=token)}))


async def test_tools_list_answers_each_caller_with_the_tools_their_accounts_allow() -> None:
    app = AppContext.from_config(Config.model_validate(TEAM))
    declared = ("name", "title", "description", "input_model", "data_model", "idempotent")
    tool = envelope_tool(
        **{key: getattr(SEND_SPEC, key) for key in declared},
        handler=lambda args, user, as_given: ToolResult(summary="x", data=_Nothing()),
        read_only=False,
    )
    server = MailServer(listing=functools.partial(listing, app, tools=[SEND_SPEC]), name="t", tools=[tool])
    try:
        entry = lowlevel_server(server).get_request_handler("tools/list")
        assert entry is not None
        alice = await entry.handler(_request_of("alice@example.com"), None)
        bob = await entry.handler(_request_of("bob"), None)
        assert [tool.name for tool in alice.tools] == ["test_send"] and bob.tools == []
        async with Client(server) as client:  # stdio's caller, through a real client: the route is this one
            assert [tool.name for tool in (await client.list_tools()).tools] == ["test_send"]
    finally:
        app.close()

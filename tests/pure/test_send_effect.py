"""A tool's effect can be ``send``: listed only where an account the caller may use has send_enabled,
whatever write_enabled says (a test-only spec stands in for the send tool, which does not exist yet)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import Config
from mail_imap_mcp.envelope import ToolResult
from mail_imap_mcp.tools.registry import TOOLS, unlisted_tools
from mail_imap_mcp.tools.spec import Effect, ToolSpec

GMAIL = {"host": "imap.gmail.com", "username": "me@gmail.com", "password_env": "P"}
SENDING = {**GMAIL, "send_enabled": True, "allowed_recipients": ["@example.com"]}


class _Nothing(BaseModel):
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
    effect=Effect.SEND,
    idempotent=False,
)


def _unlisted(config: dict[str, Any], user: str = "") -> set[str]:
    app = AppContext.from_config(Config.model_validate(config))
    try:
        return unlisted_tools(app, user, [*TOOLS, SEND_SPEC])
    finally:
        app.close()


def test_the_send_spec_is_no_product_tool() -> None:
    assert all(spec.effect is not Effect.SEND for spec in TOOLS)


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
    assert SEND_SPEC.writes and SEND_SPEC.sends and not SEND_SPEC.needs_writes
    assert SEND_SPEC.annotations() == {
        "readOnlyHint": False,
        "destructiveHint": False,
        "idempotentHint": False,
        "openWorldHint": True,
    }

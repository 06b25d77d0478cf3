"""Bad arguments are refused through the real MCP client before any mail is reached: each tool's arguments
checked on a server built in process for an account no test serves. A call that went on to its account
would fail here with another code than ``invalid_input`` (the account has no password, and the pure tier
refuses sockets: tests/pure/conftest.py), so each refusal here is made before any backend is asked; the
integration tests keep the calls that reach a server, on the server matrix."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client

from mail_imap_mcp.server import build_server
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.shared.protocol import OFFLINE_WRITES

pytestmark = pytest.mark.anyio

SEARCH = "imap_search_messages"
SOME_ID = "imap:default:INBOX:1:1"


@pytest.fixture(scope="module")
async def mcp() -> AsyncIterator[EnvelopeClient]:
    """One client for the module: a refusal changes nothing a later call could see (a server and its
    session cost more to start than the call costs)."""
    async with Client(build_server(OFFLINE_WRITES)) as client:
        yield EnvelopeClient(client)


async def refused(
    mcp: EnvelopeClient, tool: str, arguments: dict[str, Any], parameter: str
) -> dict[str, Any]:
    """The envelope of ``tool`` refusing ``arguments`` as invalid input, naming ``parameter``."""
    envelope = await mcp.fail(tool, arguments, "invalid_input")
    assert envelope["error"]["details"]["parameter"] == parameter, envelope["error"]
    return envelope


# --------------------------------------------------------------------------------- imap_search_messages


@pytest.mark.parametrize(
    ("arguments", "parameter"),
    [
        ({"last_days": 3, "since": "2025-01-01"}, "last_days"),
        ({"since": "2025-02-01", "before": "2025-01-01"}, "before"),
        ({"larger_than_bytes": 100, "smaller_than_bytes": 50}, "smaller_than_bytes"),
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"since": "yesterday"}, "since"),
        ({"subject": "a\r\nb"}, "subject"),
        ({"query": ""}, "query"),
        ({"has_keyword": "two words"}, "has_keyword"),
        ({"snippet_chars": 10_000}, "snippet_chars"),
        ({"fields": "full", "mailbox": "INBOX", "mailboxes": ["INBOX"]}, "mailboxes"),
    ],
)
async def test_contradictory_or_malformed_filters_are_invalid_input(
    mcp: EnvelopeClient, arguments: dict[str, Any], parameter: str
) -> None:
    envelope = await refused(mcp, SEARCH, arguments, parameter)
    assert envelope["data"]["status"] == "failed"


async def test_contradiction_message_names_both_parameters(mcp: EnvelopeClient) -> None:
    envelope = await refused(mcp, SEARCH, {"last_days": 3, "since": "2025-01-01"}, "last_days")
    assert "'last_days'" in envelope["error"]["message"]
    assert "'since'" in envelope["error"]["message"]
    assert envelope["error"]["details"]["conflicts_with"] == "since"


async def test_garbled_cursor_is_invalid_input(mcp: EnvelopeClient) -> None:
    envelope = await refused(mcp, SEARCH, {"cursor": "not-a-cursor"}, "cursor")
    assert "without a cursor" in envelope["error"]["message"]


async def test_sort_rejects_unknown_values(mcp: EnvelopeClient) -> None:
    envelope = await mcp.fail(SEARCH, {"fields": "full", "sort": "size"}, "invalid_input")
    assert "sort" in envelope["error"]["message"]


@pytest.mark.parametrize("mailboxes", [[], ["INBOX", "bad\r\nname"], ["x"] * 101])
async def test_mailbox_list_is_validated(mcp: EnvelopeClient, mailboxes: list[str]) -> None:
    await mcp.fail(SEARCH, {"fields": "full", "mailboxes": mailboxes}, "invalid_input")


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"query": "from: bob"}, ["at character 6", "a value right after from:"]),
        ({"query": "(budget"}, ["at the end", "')' to close"]),
        ({"query": "rank:work"}, ["known operator", "from:", "newer_than:"]),
        ({"query": "is:blue"}, ["is:unread|read|flagged"]),
        ({"query": "has:attachment OR from:bob"}, ["only by AND"]),
        ({"query": "in:archive", "mailbox": "INBOX"}, ["in:", "'mailbox'"]),
        ({"query": "in:archive", "mailboxes": ["INBOX"]}, ["in:", "'mailboxes'"]),
        ({"query": "in:a OR b"}, ["in: is the search's scope"]),
        ({"query": " OR ".join(f"({a}1 {a}2 {a}3)" for a in "abcdef")}, ["fewer OR groups"]),
    ],
)
async def test_a_query_the_search_cannot_take_is_invalid_input(
    mcp: EnvelopeClient, arguments: dict[str, Any], words: list[str]
) -> None:
    envelope = await refused(mcp, SEARCH, arguments, "query")
    for word in words:
        assert word in envelope["error"]["message"], envelope["error"]["message"]


# ------------------------------------------------------------------------------------ reading one message


@pytest.mark.parametrize(
    "bad_id",
    [
        "42",
        "imap:default:INBOX:abc:1",
        "imap:default:INBOX:1:0",
        "imap::INBOX:1:1",
        "imap:default::1:1",
        "imap:default:INBOX:1:99999999999",
    ],
)
@pytest.mark.parametrize("tool", ["imap_get_message", "imap_get_message_raw"])
async def test_malformed_message_id_is_invalid_input(mcp: EnvelopeClient, tool: str, bad_id: str) -> None:
    await refused(mcp, tool, {"message_id": bad_id.ljust(8, ":")}, "message_id")


async def test_raw_window_is_bounded(mcp: EnvelopeClient) -> None:
    await refused(mcp, "imap_get_message_raw", {"message_id": SOME_ID, "max_bytes": 57_345}, "max_bytes")


async def test_invalid_arguments_become_invalid_input_envelopes(mcp: EnvelopeClient) -> None:
    wrong_type = await refused(mcp, "imap_list_mailboxes", {"include_counts": "maybe"}, "include_counts")
    assert "boolean" in wrong_type["error"]["message"]
    unknown = await refused(mcp, "imap_list_mailboxes", {"acount_id": "x"}, "acount_id")
    assert "account_id" in unknown["error"]["message"]
    bad_id = await mcp.fail("imap_list_mailboxes", {"account_id": "a b"}, "invalid_input")
    assert "pattern" in bad_id["error"]["message"] or "matching" in bad_id["error"]["message"]


# ------------------------------------------------------------------------------------------------- writes


@pytest.mark.parametrize(
    ("arguments", "parameter"),
    [
        ({"message_ids": [SOME_ID], "action": "move"}, "destination_mailbox"),
        ({"message_ids": [SOME_ID], "action": "delete", "destination_mailbox": "X"}, "destination_mailbox"),
        (
            {"message_ids": [SOME_ID], "action": "copy", "destination_mailbox": "X", "permanent": True},
            "permanent",
        ),
        ({"message_ids": [SOME_ID, "imap:other:INBOX:1:2"], "action": "delete"}, "message_ids"),
        ({"message_ids": [SOME_ID, "nonsense-id"], "action": "delete"}, "message_ids"),
        ({"message_ids": [], "action": "delete"}, "message_ids"),
        ({"message_ids": [SOME_ID] * 251, "action": "delete"}, "message_ids"),
        (
            {"message_ids": [SOME_ID], "action": "move", "destination_mailbox": "A\r\nB"},
            "destination_mailbox",
        ),
        ({"message_ids": [SOME_ID], "action": "copy", "destination_mailbox": "A\x00"}, "destination_mailbox"),
        (
            {"message_ids": [SOME_ID], "action": "copy", "destination_mailbox": "A" * 1001},
            "destination_mailbox",
        ),
        ({"message_ids": ["imap:default:IN\r\nBOX:1:1"], "action": "delete"}, "message_ids"),
    ],
    ids=lambda value: repr(value)[:40] if isinstance(value, dict) else value,
)
async def test_write_arguments_are_checked_before_anything_is_sent(
    mcp: EnvelopeClient, arguments: dict[str, Any], parameter: str
) -> None:
    await refused(mcp, "imap_apply_to_messages", arguments, parameter)


@pytest.mark.parametrize(
    ("arguments", "parameter"),
    [
        ({"action": "create", "mailbox": "a\r\nb"}, "mailbox"),
        ({"action": "create", "mailbox": "a\x00b"}, "mailbox"),
        ({"action": "create", "mailbox": "tab\there"}, "mailbox"),
        ({"action": "create", "mailbox": "a*"}, "mailbox"),
        ({"action": "delete", "mailbox": "%"}, "mailbox"),
        ({"action": "create", "mailbox": "x" * 5000}, "mailbox"),
        ({"action": "create", "mailbox": "   "}, "mailbox"),
        ({"action": "create", "mailbox": ""}, "mailbox"),
        ({"action": "rename", "mailbox": "A", "destination_mailbox": "B\nC"}, "destination_mailbox"),
        ({"action": "rename", "mailbox": "A"}, "destination_mailbox"),
        ({"action": "create", "mailbox": "A", "destination_mailbox": "B"}, "destination_mailbox"),
        ({"action": "purge", "mailbox": "A"}, "action"),
    ],
    ids=lambda value: repr(value)[:40] if isinstance(value, dict) else value,
)
async def test_hostile_or_malformed_mailbox_arguments_are_refused_naming_the_parameter(
    mcp: EnvelopeClient, arguments: dict[str, Any], parameter: str
) -> None:
    await refused(mcp, "imap_manage_mailbox", arguments, parameter)
